"""The console's fake feed (used by the Pilot and snapshot tests) and the pure logic of the panes."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import replace

import pytest

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.analysis.job import Sample
from kafkalab.clients.stats import ClientState, ConsumerStats, ProducerStats
from kafkalab.cluster import NodeAction, NodeInfo, NodeKind, NodeState
from kafkalab.errors import KafkalabError
from kafkalab.feeds.frames import LabView, Marker, MarkerKind, NodesFrame, ReportView, RunFrame, TimelineStep
from kafkalab.feeds.lab_source import sample_line
from kafkalab.feeds.source import ConsoleAction, Source
from kafkalab.feeds.topic_ops import NeedsReassignment
from kafkalab.labs.results import Phase
from kafkalab.ui.app import parse_topic_request
from kafkalab.ui.chart import columns, render_chart
from kafkalab.ui.line import flow
from kafkalab.ui.logtail import glanceable, shorten
from kafkalab.ui.partitions import diff_rows, leader_moves, row_key, row_of
from kafkalab.ui.producer import counts_parts

FROZEN_EPOCH = 1_700_000_000.0  # 2023-11-14, the feed's frozen wall clock
TOPIC = "test-topic"


def node_info(name: str, state: NodeState = NodeState.RUNNING, broker_id: int | None = None,
              reason: str | None = None) -> NodeInfo:
    alive = state.alive
    return NodeInfo(name=name, kind=NodeKind.BROKER if broker_id else NodeKind.ZOOKEEPER, broker_id=broker_id,
                    port=9092 + 100 * (broker_id or 0), state=state,
                    reason=reason or ("killed (SIGKILL)" if state == NodeState.KILLED else "ready in 9.1s"),
                    pid=4000 + (broker_id or 0) if alive else None, uptime_s=125.0 if alive else 0.0,
                    cpu_percent=3.0 if alive else 0.0, rss_bytes=(300 << 20) if alive else 0, restarts=0)


class FakeSource(Source):
    """A deterministic feed: 3 brokers, one 6-partition RF=3 topic; node actions change it like Kafka would
    (a killed broker leaves every ISR and its leaderships move to the next in-sync replica)."""

    title = "kafkalab (fake feed)"
    offers = frozenset(ConsoleAction)

    def __init__(self, with_run: bool = False) -> None:
        self.lock = threading.Lock()
        self.states = {"zookeeper": NodeState.RUNNING, **{f"broker-{b}": NodeState.RUNNING for b in (1, 2, 3)}}
        self.partitions = [
            PartitionState(TOPIC, p, leader=p % 3 + 1, replicas=tuple((p + i) % 3 + 1 for i in range(3)),
                           isr=(1, 2, 3), end_offset=1000 * (p + 1), min_isr=2)
            for p in range(6)
        ]
        self.reachable = True
        self.reasons: dict[str, str] = {}
        self.delay_election = False  # a kill leaves the metadata as it was until elect() (as Kafka's lags)
        self.actions: list[tuple[str, str]] = []
        self.closed = False
        self.run_frame = sample_run() if with_run else RunFrame()
        self.logs = {"broker-1": ("[2023-11-14 22:13:20,000] INFO [KafkaServer id=1] started "
                                  "(kafka.server.KafkaServer)",)}

    def boot(self, progress: Callable[[str], None]) -> None:
        progress("fake cluster ready")

    def nodes(self) -> NodesFrame:
        with self.lock:
            infos = tuple(node_info(n, s, None if n == "zookeeper" else int(n[-1]), self.reasons.get(n))
                          for n, s in self.states.items())
            logs, self.logs = self.logs, {}
        return NodesFrame(infos, logs, zk_connections=3)

    def snapshot(self) -> ClusterSnapshot:
        with self.lock:
            if not self.reachable:
                return ClusterSnapshot(FROZEN_EPOCH + 5, False, error="timed out")
            alive = tuple(int(n[-1]) for n, s in self.states.items() if n != "zookeeper" and s == NodeState.RUNNING)
            return ClusterSnapshot(FROZEN_EPOCH, True, controller=alive[0] if alive else None, brokers=alive,
                                   partitions=tuple(self.partitions))

    def run(self) -> RunFrame:
        return self.run_frame

    def node_action(self, node: str, action: NodeAction | str) -> None:
        with self.lock:
            self.actions.append((node, action))
            if action in ("kill", "stop"):
                self.states[node] = NodeState.KILLED if action == "kill" else NodeState.STOPPED
                if not self.delay_election:
                    self.elect(int(node[-1]))
            elif action == "pause":
                self.states[node] = NodeState.PAUSED
            elif action in ("resume", "start", "restart"):
                self.states[node] = NodeState.RUNNING

    def elect(self, gone: int) -> None:
        self.partitions = [fail_over(p, gone) for p in self.partitions]

    def start_run(self) -> None:
        self.run_frame = replace(sample_run(), live=True, phase=Phase.RUNNING, report=None)

    def stop_run(self) -> None:
        self.run_frame = replace(sample_run(), live=False, phase=Phase.DONE)

    def reset(self) -> None:
        self.run_frame = RunFrame()

    def send_control(self, word: str) -> None:
        self.actions.append(("consumers", word))

    def change_setting(self, name: str, value: str) -> None:
        self.actions.append((name, value))

    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
        """As the bare console's: an RF change on the existing topic needs a reassignment; too large an RF
        on a new topic is refused; anything else fails as a broker would."""
        if topic == TOPIC and replication_factor and replication_factor != 3:
            raise NeedsReassignment(TOPIC, 3, replication_factor)
        if replication_factor and replication_factor > 3:
            raise KafkalabError(f"rf={replication_factor} is more than the 3 brokers running: give rf=3 or fewer")
        raise RuntimeError(f"cannot alter {topic}: broker says no")

    def reassign_topic(self, topic: str, replication_factor: int) -> str:
        self.actions.append((f"reassign {topic}", str(replication_factor)))
        return f"{topic}: reassignment submitted"

    def close(self) -> None:
        self.closed = True


def fail_over(p: PartitionState, gone: int) -> PartitionState:
    isr = tuple(r for r in p.isr if r != gone)
    in_order = [r for r in p.replicas if r in isr]  # Kafka elects the first live in-sync replica in order
    leader = p.leader if p.leader != gone else (in_order[0] if in_order else None)
    return replace(p, isr=isr, leader=leader)


def sample_run() -> RunFrame:
    producer = ProducerStats(name="producer", state=ClientState.FINISHED, attempted=500_000, acked=498_796,
                             failed={"NOT_ENOUGH_REPLICAS": 1_204}, unknown=0, in_flight=0, rate=0.0,
                             total=500_000)
    consumer = ConsumerStats(name="consumer", group="test-app", state=ClientState.RUNNING, group_state="stable",
                             received=498_796, processed=498_796, rate=0.0, assignment=(0, 1, 2, 3, 4, 5),
                             committed={p: 80_000 for p in range(6)}, lag={p: 0 for p in range(6)}, rebalances=1)
    series = tuple((t / 2, 20_000.0 if not 12 <= t < 18 else 2_000.0) for t in range(50))
    lab = LabView("min-isr", "min.insync.replicas with acks=all",
                  "## Steps\n\n1. Start the run with `g`.\n2. Watch broker 2 stop.\n3. Read the report.",
                  (TimelineStep("progress 20%: stop broker 2", True), TimelineStep("after 3s: start broker 2", False)))
    report = ReportView("acks=all, min ISR 2: nothing acknowledged was lost", True,
                        {"lost": 0, "duplicated": 0, "recovered": 12},
                        {str(p): {"attempted": 83_334, "acknowledged": 83_133, "consumed_rows": 83_133, "recovered": 2,
                                  "leader_changes": 1 if p in (1, 4) else 0} for p in range(6)},
                        {"recovered": ("run1-producer-17",)})
    markers = (Marker(6.0, "stop broker 2"), Marker(9.5, "leader t/1 2->3", MarkerKind.LEADER),
               *(Marker(9.6, f"leader __consumer_offsets/{p} 2->3", MarkerKind.LEADER) for p in range(5)),
               Marker(14.0, "start broker 2"), Marker(19.0, "leader t/1 3->2", MarkerKind.LEADER))
    return RunFrame(False, Phase.DONE, producer, (consumer,), series, markers, lab, report,
                    {"producer.acks": "all", "producer.idempotent": "true", "producer.max-inflight": "5",
                     "producer.linger": "0"})


# ---- pure logic ------------------------------------------------------------------------------------
def test_diff_rows_reports_added_removed_and_changed_cells() -> None:
    old = {"t/0": {"leader": "1", "isr": "1,2"}, "t/1": {"leader": "2", "isr": "2,3"}}
    new = {"t/0": {"leader": "2", "isr": "2"}, "t/2": {"leader": "3", "isr": "3"}}
    diff = diff_rows(old, new)
    assert diff.added == ["t/2"]
    assert diff.removed == ["t/1"]
    assert sorted(diff.changed) == [("t/0", "isr"), ("t/0", MarkerKind.LEADER)]


def test_leader_moves_names_partition_and_both_leaders() -> None:
    feed = FakeSource()
    before = feed.snapshot()
    feed.node_action("broker-2", "kill")
    moves = leader_moves(before, feed.snapshot())
    assert moves == ["leader of test-topic/1 moved 2 -> 3", "leader of test-topic/4 moved 2 -> 3"]


def test_a_topic_created_again_with_new_replicas_moved_no_leader() -> None:
    """A reused cluster's next run deletes and creates its topic: new replica lists, new leaders, no failover."""
    old = ClusterSnapshot(0.0, True, 1, (1, 2, 3), (PartitionState("t", 0, 3, (3, 1, 2), (1, 2, 3), 10, 1),
                                                  PartitionState("t", 1, 1, (1, 2, 3), (1, 2, 3), 10, 1)))
    new = replace(old, partitions=(PartitionState("t", 0, 1, (1, 2, 3), (1, 2, 3), 0, 1),
                                   PartitionState("t", 1, 2, (1, 2, 3), (2, 3), 0, 1)))
    assert leader_moves(old, new) == ["leader of t/1 moved 1 -> 2"]


def test_row_of_marks_offline_and_unknown_offsets() -> None:
    p = PartitionState("t", 3, None, (1, 2), (), None, 1)
    assert row_key(p) == "t/3"
    assert row_of(p) == {"partition": "t/3", "leader": "none", "replicas": "1,2", "isr": "",
                              "end": "?", "status": "offline"}


def test_chart_marks_faults_on_their_column() -> None:
    series = [(float(t), 100.0) for t in range(100)]
    text = render_chart(series, [Marker(50.0, "kill broker 2")], width=58, height=8).plain
    rows = text.splitlines()
    marker_row = rows[5]
    assert marker_row.index("1") == 8 + 25  # axis width + half of the 50-column plot
    assert "1 @50s kill broker 2" in rows[-1]
    assert columns([(0.0, 1.0), (0.0, 3.0), (9.9, 5.0)], 10, 10.0)[0] == 2.0


def test_chart_legend_wraps_within_the_width_and_names_every_marker_symbol() -> None:
    series = [(float(t), 100.0) for t in range(30)]
    markers = [Marker(9.0, "kill broker-1"), *(Marker(14.0, f"leader __consumer_offsets/{p} 1 -> 2", MarkerKind.LEADER)
                                              for p in range(4)),
               Marker(20.0, "leader test-topic/3 1 -> 3", MarkerKind.LEADER), Marker(25.0, "start broker-1")]
    width, height = 40, 12
    rows = render_chart(series, markers, width=width, height=height).plain.splitlines()
    assert len(rows) == height
    assert all(len(row) <= width for row in rows)
    mark_row = next(i for i, row in enumerate(rows) if row.startswith(" " * 8) and row.replace(" ", "").isalnum())
    symbols = rows[mark_row].split()
    legend = "\n".join(rows[mark_row + 2:])
    assert symbols == ["1", "2", "3", "4"]
    for symbol in symbols:
        assert re.search(rf"(^|· ){symbol} @\d+s", legend, re.M), f"{symbol} missing from the legend {legend!r}"
    assert "4 leader changes" in legend and "kill broker-1" in legend and "start broker-1" in legend


def test_shorten_drops_date_and_logger() -> None:
    line = "[2023-11-14 22:13:20,000] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)"
    assert shorten(line) == "22:13:20 INFO [KafkaServer id=1] started"


def test_a_stack_trace_shows_as_its_exception_not_its_frames() -> None:
    logged = ["[2026-11-26 15:33:18,082] WARN Close of session 0x1 (org.apache.zookeeper.server.NIOServerCnxn)",
              "java.net.SocketException: Connection reset",
              "\tat java.base/sun.nio.ch.SocketChannelImpl.read(SocketChannelImpl.java:426)",
              "\tat org.apache.zookeeper.server.NIOServerCnxn.doIO(NIOServerCnxn.java:334)",
              "Caused by: java.io.IOException: gone",
              "\t... 12 more",
              "[2026-11-26 15:33:19,000] INFO at the end of the line stays (org.example.Thing)"]
    assert glanceable(logged) == ["15:33:18 WARN Close of session 0x1", "java.net.SocketException: Connection reset",
                                  "Caused by: java.io.IOException: gone", "15:33:19 INFO at the end of the line stays"]


@pytest.mark.parametrize(("text", "expected"), [
    ("test-topic", ("test-topic", None, None)),
    ("t rf=3 min.isr=2", ("t", 3, 2)),
])
def test_parse_topic_request(text: str, expected: tuple[str, int | None, int | None]) -> None:
    assert parse_topic_request(text) == expected


@pytest.mark.parametrize("text", ["", "rf=3", "t rf=0", "t foo=1", "t rf=x"])
def test_parse_topic_request_rejects_bad_input(text: str) -> None:
    with pytest.raises(ValueError, match=r"topic name|rf=N"):
        parse_topic_request(text)


def test_a_sample_names_its_partition_and_offset_then_its_message_id() -> None:
    assert sample_line(Sample("r1:producer:17", "t", 3, 1204)) == "t/3 @ offset 1,204  r1:producer:17"
    assert sample_line(Sample(None, "t", 0, 5)) == "t/0 @ offset 5"


def test_the_groups_feed_gives_each_cluster_its_own_admin_client_even_on_the_same_ports() -> None:
    """The next run's cluster listens where the last one did; one client crossing from one to the next
    aborted the console inside librdkafka, so a new cluster object means a new client."""
    from kafkalab.feeds.groups_feed import AdminGroupsFeed

    class Cluster:
        bootstrap = "127.0.0.1:1"  # nothing listens: the frames say unreachable, no wait beyond the timeout

    first, second = Cluster(), Cluster()
    current = [first]
    feed = AdminGroupsFeed(lambda: current[0], timeout_s=0.2)
    try:
        feed.groups()
        assert feed._admin is None  # the polls ask the group helper: no client in the console's process
        client = feed._groups().admin  # made for a reset or a watch
        assert feed._groups().admin is client  # the same cluster keeps its client
        current[0] = second
        assert feed._groups().admin is not client
    finally:
        feed.close()


def test_producer_counts_break_only_between_their_parts() -> None:
    running = ProducerStats(name="producer", state=ClientState.RUNNING, attempted=260_000, acked=250_000, failed={},
                            unknown=0, in_flight=10_000, rate=12_345.0, total=500_000)
    parts = counts_parts(running)
    assert [p.plain for p in parts] == [" RUNNING ", "250,000/500,000 acked", "12,345/s", "ETA 20s", "in flight 10,000"]
    whole = "  ".join(p.plain for p in parts)
    for width in (22, 34, 50):
        lines = flow(parts, width).plain.split("\n")
        assert "  ".join(lines) == whole  # every line break replaced a gap: no part split across lines
        assert len(lines) > 1 and all(len(line) <= width for line in lines)
    assert len(flow(parts, 120).plain.split("\n")) == 1
    finished = replace(running, state=ClientState.FINISHED, acked=500_000, attempted=500_000, in_flight=0)
    assert [p.plain for p in counts_parts(finished)] == [" FINISHED ", "500,000/500,000 acked"]  # no rate, no ETA


def test_node_logs_follow_nodes_a_cluster_builds_after_the_console_first_looked(tmp_path) -> None:
    """A cluster builds its nodes in start() (KRaft: after formatting its storage): a console that first saw
    none still tails every node's log once they exist (their panes stayed blank for the whole run)."""
    from types import SimpleNamespace

    from kafkalab.feeds.node_logs import NodeLogs

    cluster = SimpleNamespace(nodes=[])
    logs = NodeLogs()
    assert logs.new_lines(cluster) == {}  # type: ignore[arg-type]
    paths = {name: tmp_path / name / "server.log" for name in ("controller-1", "broker-1")}
    for name, path in paths.items():
        path.parent.mkdir()
        path.write_text(f"[2023-11-14 22:13:20,000] INFO {name} starting\n")
    cluster.nodes = [SimpleNamespace(name=name, log_path=path) for name, path in paths.items()]
    assert logs.new_lines(cluster) == {  # type: ignore[arg-type]
        name: (f"[2023-11-14 22:13:20,000] INFO {name} starting",) for name in paths}
    with paths["broker-1"].open("a") as fh:
        fh.write("[2023-11-14 22:13:21,000] INFO broker-1 started\n")
    assert logs.new_lines(cluster) == {"broker-1": ("[2023-11-14 22:13:21,000] INFO broker-1 started",)}  # type: ignore[arg-type]


def test_log_follower_holds_back_a_partial_line_and_rereads_a_truncated_log(tmp_path) -> None:
    from kafkalab.feeds.node_logs import LogFollower

    log = tmp_path / "server.log"
    follower = LogFollower(log)
    assert follower.new_lines() == ()  # not written yet
    log.write_text("one\ntw")
    assert follower.new_lines() == ("one",)
    with log.open("a") as fh:
        fh.write("o\n")
    assert follower.new_lines() == ("two",)
    log.write_text("fresh\n")  # replaced by a shorter file: its start is new, not the rest of the old one
    assert follower.new_lines() == ("fresh",)
