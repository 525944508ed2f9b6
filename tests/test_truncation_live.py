"""A truncation said the same in every live view, from lines Kafka 3.9.2 wrote (a zombie leader, broker 2 of a
ZooKeeper-mode cluster, isolated, given 2,200 acks=1 records through its proxy, healed): the sentence, the
watch as a source's frames bring the lines, the frame that carries it, the CLI's lines from a cluster's state
dir, the console's toast."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from kafkalab.cli.truncation_lines import cluster_truncations, truncation_lines
from kafkalab.cluster import NodeState
from kafkalab.cluster.control_socket import SPEC_FILE
from kafkalab.cluster.truncations import Truncation, TruncationWatch, read_truncations
from kafkalab.feeds.cluster_source import ClusterSource
from kafkalab.feeds.frames import NodesFrame
from kafkalab.feeds.lab_source import LabSource
from kafkalab.ui.logtail import LogTail
from kafkalab.ui.toasts import ToastKind, toast_kind
from tests.test_labs_run import lab_of
from tests.test_ui_app import running, settle, sync
from tests.test_ui_feed import FakeSource
from tests.test_unclean_election import BROKER_2_LOG

ZOMBIE = ("broker-2 truncated test-topic/0 from 2,500 to 300 to match broker-3's log: 2,200 records gone "
          "(uncommitted: acknowledged only if written with acks=1)")


def stamp(at: float) -> str:
    return time.strftime("[%Y-%m-%d %H:%M:%S,000]", time.localtime(at))


def zombie_lines(at: float) -> list[str]:
    """Broker 2's lines as it rejoined (the ``Leader`` line before: it had been leader, at epoch 0)."""
    return [
        f"{stamp(at)} INFO [Broker id=2] Leader test-topic-0 with topic id Some(WMIFXM_8R_Sb_GLmWQUIiQ) starts at "
        "leader epoch 0 from offset 0 with partition epoch 0, high watermark 0, ISR [2,3,1], adding replicas [] and "
        "removing replicas [] . Previous leader None and previous leader epoch was -1. (state.change.logger)",
        f"{stamp(at)} INFO [Broker id=2] Follower test-topic-0 starts at leader epoch 2 from offset 2500 with "
        "partition epoch 2 and high watermark 300. Current leader is 3. Previous leader Some(3) and previous leader "
        "epoch was 2. (state.change.logger)",
        f"{stamp(at)} INFO [ReplicaFetcher replicaId=2, leaderId=3, fetcherId=0] Truncating partition test-topic-0 "
        "with TruncationState(offset=300, completed=true) due to leader epoch and offset EpochEndOffset(errorCode=0, "
        "partition=0, leaderEpoch=0, endOffset=300) (kafka.server.ReplicaFetcherThread)",
        f"{stamp(at)} INFO [UnifiedLog partition=test-topic-0, dir=/tmp/g-state/broker-2/data] Truncating to offset "
        "300 (kafka.log.UnifiedLog)",
    ]


def test_a_zombie_s_truncation_is_said_with_its_count_and_that_none_of_it_was_committed() -> None:
    [cut] = read_truncations(zombie_lines(time.time()), 2, 0.0, None)
    assert (cut.from_offset, cut.to_offset, cut.records, cut.committed) == (2500, 300, 2200, 0)
    assert cut.said() == ZOMBIE


def test_an_unclean_election_s_truncation_says_how_many_committed_records_went() -> None:
    [cut] = read_truncations(BROKER_2_LOG, 2, 0.0, {"test-topic"})
    assert cut.said() == ("broker-2 truncated test-topic/0 from 3,847 to 917 to match broker-3's log: 2,930 records "
                          "gone, 2,862 of them committed (acknowledged even with acks=all)")


def test_the_watch_reads_a_truncation_across_frames_and_only_the_brokers_lines_since_it_began() -> None:
    now = time.time()
    watch = TruncationWatch(since=now)
    lines = zombie_lines(now + 1)
    assert watch.feed({"broker-2": lines[:2], "zookeeper": lines}) == []
    [cut] = watch.feed({"broker-2": lines[2:], "controller-1": lines})
    assert cut.said() == ZOMBIE
    assert TruncationWatch(since=now + 2).feed({"broker-2": lines}) == []  # before the console began: no news


def test_the_cli_lines_are_this_cluster_s_own(tmp_path: Path) -> None:
    now = time.time()
    logs = tmp_path / "broker-2" / "logs"
    logs.mkdir(parents=True)
    (logs / "server.log").write_text("\n".join(zombie_lines(now - 600) + zombie_lines(now)) + "\n")
    (tmp_path / SPEC_FILE).write_text("{}")
    os.utime(tmp_path / SPEC_FILE, (now - 60, now - 60))  # started a minute ago: the first episode is an earlier one's
    said = f"{time.strftime('%H:%M:%S', time.localtime(now))} {ZOMBIE}"
    assert truncation_lines(cluster_truncations(tmp_path)) == [said]


def broker_2_cluster(state_dir: Path) -> SimpleNamespace:
    """A cluster as the sources read one: broker-2 alone (starting: no control socket yet), its log empty, no
    quorum, no proxy."""
    log = state_dir / "broker-2" / "logs" / "server.log"
    log.parent.mkdir(parents=True)
    log.touch()
    broker = SimpleNamespace(name="broker-2", log_path=log, state=NodeState.STARTING)
    return SimpleNamespace(spec=SimpleNamespace(state_dir=state_dir, kraft=True), nodes=[broker], brokers=[broker],
                           metadata_nodes=[], infos=list, quorum=lambda timeout_s: None, net=None)


def log(cluster: SimpleNamespace, lines: list[str]) -> None:
    with cluster.nodes[0].log_path.open("a") as fh:
        fh.write("".join(f"{line}\n" for line in lines))


def test_the_source_reads_the_truncation_into_its_frame_once(tmp_path: Path) -> None:
    """The frame carries the truncation its lines tell, read in the source's thread; the console only says it."""
    now = time.time()
    cluster = broker_2_cluster(tmp_path)
    log(cluster, zombie_lines(now - 600))  # an episode before the console began: no news
    source = ClusterSource(cluster, owned=False)  # type: ignore[arg-type]
    try:
        first = source.nodes()
        assert first.new_log_lines["broker-2"] and first.truncations == ()
        log(cluster, zombie_lines(now + 5))
        frame = source.nodes()
        assert frame.new_log_lines == {"broker-2": tuple(zombie_lines(now + 5))}
        assert [cut.said() for cut in frame.truncations] == [ZOMBIE]
        assert source.nodes().truncations == ()  # said by the frame that brought its lines, not again
    finally:
        source.close()


def test_a_lab_s_next_cluster_is_read_by_a_fresh_watch(tmp_path: Path) -> None:
    """A lab's next run (or a reset) brings a new cluster: its broker-2 is not the last one's, so the last one's
    "starts at ... from offset 2500" does not size the new one's truncation."""
    lines = zombie_lines(time.time() + 5)
    first, second = broker_2_cluster(tmp_path / "first"), broker_2_cluster(tmp_path / "second")
    session = SimpleNamespace(lab=lab_of(tmp_path, ""), cluster=first, close=lambda: None)
    source = LabSource(session)  # type: ignore[arg-type]
    try:
        log(first, lines[:2])
        assert source.nodes().truncations == ()
        session.cluster = second
        log(second, lines[2:])
        [cut] = source.nodes().truncations
        assert cut.from_offset is None and cut.said().endswith("(how far its log went is not in the lines read)")
    finally:
        source.close()


class CuttingSource(FakeSource):
    """The fake feed, its next frame carrying ``cuts`` as a real source's carries what it read from the lines."""

    def __init__(self) -> None:
        super().__init__()
        self.cuts: tuple[Truncation, ...] = ()

    def nodes(self) -> NodesFrame:
        frame = super().nodes()
        with self.lock:
            cuts, self.cuts = self.cuts, ()
        return replace(frame, truncations=cuts)


def truncation_toasts(app: object) -> list[tuple[str | None, str, str]]:
    return [(n.title, n.message, n.severity) for n in app._notifications  # type: ignore[attr-defined]
            if toast_kind(n) == ToastKind.TRUNCATED]


@sync
async def test_the_console_toasts_the_truncation_its_frame_brings() -> None:
    feed = CuttingSource()
    async with running(feed) as (app, pilot):
        lines = zombie_lines(time.time() + 1)
        with feed.lock:
            feed.logs = {"broker-2": tuple(lines)}
            feed.cuts = tuple(read_truncations(lines, 2, 0.0, None))
        await settle(pilot)
        assert truncation_toasts(app) == [("records truncated", ZOMBIE, "warning")]


@sync
async def test_the_console_does_not_read_truncations_from_log_lines() -> None:
    """Lines that tell a truncation, in a frame that carries none: shown in the broker's pane, never toasted."""
    feed = FakeSource()
    async with running(feed) as (app, pilot):
        with feed.lock:
            feed.logs = {"broker-2": tuple(zombie_lines(time.time() + 1))}
        await settle(pilot)
        assert app.pane("broker-2").query_one(LogTail).line_count == 4
        assert truncation_toasts(app) == []
