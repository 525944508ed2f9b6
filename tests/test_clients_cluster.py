"""The course's producer/consumer exercises against the real 3-broker cluster, one topic per test."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from kafkalab.admin import Admin
from kafkalab.clients.audit import audit_topic
from kafkalab.clients.consumer import Consumer
from kafkalab.clients.control_words import send_control
from kafkalab.clients.producer import Producer
from kafkalab.clients.stats import ClientEvent
from kafkalab.cluster import Cluster
from kafkalab.cluster.node import NodeState
from kafkalab.priority import BACKGROUND_NICE
from tests.helpers import wait_until

pytestmark = pytest.mark.cluster

KAFKALAB = [sys.executable, "-m", "kafkalab"]
FAST_GROUP = {"consumer.session-timeout": "10000", "consumer.heartbeat-interval": "1000",
              "consumer.poll-period": "200"}


def rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2, ported line by line (32-bit Java int arithmetic)."""
    mask = 0xFFFFFFFF
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(data)) & mask
    full = len(data) // 4
    for i in range(full):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    tail = data[4 * full:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: int, partitions: int) -> int:
    return (murmur2(key.to_bytes(4, "big", signed=True)) & 0x7FFFFFFF) % partitions


def test_murmur2_port_matches_kafkas_own_test_vectors() -> None:
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    assert {k: murmur2(k) for k in cases} == cases


def run_producer(bootstrap: str, log_dir: Path, settings: dict[str, str], run: str = "t",
                 events: list[ClientEvent] | None = None) -> Producer:
    producer = Producer(settings, log_dir, run, bootstrap, on_event=None if events is None else events.append)
    producer.start()
    return producer


def start_consumer(bootstrap: str, log_dir: Path, settings: dict[str, str],
                   events: list[ClientEvent] | None = None) -> Consumer:
    consumer = Consumer({**FAST_GROUP, **settings}, log_dir, bootstrap,
                        on_event=None if events is None else events.append)
    consumer.start()
    return consumer


def drain(consumer: Consumer, count: int, timeout: float = 90) -> None:
    wait_until(lambda: consumer.stats().processed >= count, timeout, 0.2, f"{consumer.name} processing {count}")


def test_cli_defaults_consumer_log_equals_acked_records_and_seed_diff_is_empty(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=6, replication_factor=3)
    common = ["-D", f"bootstrap.server={cluster.bootstrap}", "--log-dir", str(tmp_path), "--run", "e2e"]
    consume = subprocess.Popen(
        [*KAFKALAB, "consume", *common, "-D", f"consumer.topic={topic}", "-D", f"consumer.group-id={topic}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert consume.stdout is not None
        for line in consume.stdout:  # the default auto-offset-reset is latest: produce once assigned
            if "assigned" in line:
                break
        out = subprocess.run([*KAFKALAB, "produce", *common, "-D", f"producer.topic={topic}"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "payload log:" in out.stdout
        produced = rows(tmp_path / "producer.csv")
        assert len(produced) == 100 and {r["status"] for r in produced} == {"acked"}
        wait_until(lambda: (tmp_path / "consumer.csv.partial").exists()
                   and len(rows(tmp_path / "consumer.csv.partial")) >= 100, 60, 0.3, "100 records consumed")
        sent = subprocess.run([*KAFKALAB, "send", "quit", "--topic", topic, "--all-partitions",
                               "-D", f"bootstrap.server={cluster.bootstrap}"], capture_output=True, text=True)
        assert sent.returncode == 0, sent.stderr
        assert consume.wait(60) == 0
    finally:
        if consume.poll() is None:
            consume.kill()
            consume.wait()
    consumed = rows(tmp_path / "consumer.csv")  # complete: renamed on the clean quit
    by_id = {r["msg_id"]: (r["partition"], r["offset"], r["key"], r["value"]) for r in produced}
    assert {r["msg_id"]: (r["partition"], r["offset"], r["key"], r["value"]) for r in consumed} == by_id
    assert len(consumed) == 100 and {r["group"] for r in consumed} == {topic}
    assert all(r["msg_id"].startswith("e2e:producer:") for r in consumed)
    # the producer's keys landed where the Java client's murmur2 puts them
    assert all(int(r["partition"]) == java_partition(int(r["key"]), 6) for r in produced)
    export = subprocess.run([*KAFKALAB, "logs", "export", str(tmp_path), "--seed-format", str(tmp_path / "seed")],
                            capture_output=True, text=True)
    assert export.returncode == 0, export.stderr
    assert (tmp_path / "seed/producer.log").read_text() == (tmp_path / "seed/consumer.log").read_text()
    # what the brokers hold, read back without a group, is the same set of records
    path, count = audit_topic(cluster.bootstrap, topic, tmp_path)
    audited = [r for r in rows(path) if r["msg_id"]]
    assert count == 100 + 6 and {r["msg_id"] for r in audited} == set(by_id)


def test_keys_land_on_the_java_clients_partitions(cluster: Cluster, topic_factory: Callable[..., str],
                                                  tmp_path: Path) -> None:
    topic = topic_factory(partitions=7, replication_factor=1)
    producer = run_producer(cluster.bootstrap, tmp_path, {
        "producer.topic": topic, "producer.num-records-per-roll": "500", "producer.acks": "1"})
    assert producer.join(60)
    produced = rows(tmp_path / "producer.csv")
    assert len(produced) == 500 and len({r["partition"] for r in produced}) == 7
    assert [int(r["partition"]) for r in produced] == [java_partition(int(r["key"]), 7) for r in produced]


def test_acks0_leader_stopped_mid_send_loses_acknowledged_records(
        cluster: Cluster, admin: Admin, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=3, replication_factor=1)
    leader = admin.snapshot().partition(topic, 0).leader  # type: ignore[union-attr]
    assert leader is not None
    led = {str(p.partition) for p in admin.snapshot().topic(topic) if p.leader == leader}
    producer = run_producer(cluster.bootstrap, tmp_path / "p", {
        "producer.topic": topic, "producer.acks": "0", "producer.num-records-per-roll": "20000",
        # ~1k records a second, so the leader is paused mid-send (unpaced, acks=0 sends all 20k in a blink)
        "producer.wait-after-send": "1", "producer.delivery-timeout": "8000", "producer.request-timeout": "4000"})
    try:
        wait_until(lambda: producer.stats().acked > 3000, 60, 0.05, "sending under way")
        # Paused, the leader still takes bytes into its socket buffer, and acks=0 counts them as sent;
        # the kill then destroys them: loss every time, not only when the kill lands mid-batch.
        cluster.node(leader).pause()
        time.sleep(1.5)
        cluster.node(leader).kill()
        assert producer.join(90)
    finally:
        cluster.node(leader).start()
        cluster.wait_state(leader, NodeState.RUNNING, timeout=90)
    admin.wait_for_leaders(topic, timeout_s=60)
    stats = producer.stats()
    assert stats.state == "finished" and stats.acked > 0
    acked = {r["msg_id"]: r for r in rows(tmp_path / "p/producer.csv") if r["status"] == "acked"}
    assert all(r["offset"] == "-1" for r in acked.values())  # acks=0: the broker gave no offset
    consumer = start_consumer(cluster.bootstrap, tmp_path / "c", {
        "consumer.topic": topic, "consumer.group-id": topic, "consumer.auto-offset-reset": "earliest"})
    wait_until(lambda: consumer.stats().assignment and consumer.stats().processed > 0
               and consumer.stats().total_lag == 0 and consumer.stats().lag, 90, 0.3, "consumer caught up")
    consumer.stop()
    assert consumer.join(60)
    consumed = {r["msg_id"] for r in rows(tmp_path / "c/consumer.csv")}
    lost = set(acked) - consumed
    assert lost, "acks=0 with the leader gone should lose acknowledged records"
    # Loss on partition 0, and only on the partitions whose leader died (the broker may lead others too).
    lost_on = {acked[m]["partition"] for m in lost}
    assert "0" in lost_on and lost_on <= led, (lost_on, led)


def test_producer_blocks_while_leaders_are_gone_and_resumes(
        cluster: Cluster, admin: Admin, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=1, replication_factor=1)
    leader = admin.snapshot().partition(topic, 0).leader  # type: ignore[union-attr]
    assert leader is not None
    events: list[ClientEvent] = []
    cluster.node(leader).stop()
    try:
        cluster.wait_state(leader, NodeState.STOPPED, timeout=60)
        # 700k records (~65 bytes of key and value each) overflow the 32 MB send buffer (buffer.memory)
        producer = run_producer(cluster.bootstrap, tmp_path, {
            "producer.topic": topic, "producer.num-records-per-roll": "700000"}, events=events)
        wait_until(lambda: producer.stats().state == "blocked", 90, 0.1, "producer blocked")
        blocked = producer.stats()
        assert blocked.acked == 0 and blocked.in_flight == blocked.attempted > 100_000
        assert any(e.kind == "stalled" for e in events)
    finally:
        cluster.node(leader).start()
    cluster.wait_state(leader, NodeState.RUNNING, timeout=90)
    wait_until(lambda: any(e.kind == "resumed" for e in events), 90, 0.2, "producer resumed")
    producer.stop(drain=False)  # the rest is not needed: purge it, close the log as complete
    assert producer.join(60)
    final = producer.stats()
    assert final.state == "finished" and final.acked > 0
    logged = rows(tmp_path / "producer.csv")
    assert len(logged) == final.attempted
    assert {r["status"] for r in logged} <= {"acked", "failed", "unknown"}


def test_commit_too_early_misses_records_after_a_crash(cluster: Cluster, topic_factory: Callable[..., str],
                                                       tmp_path: Path) -> None:
    topic = topic_factory(partitions=1, replication_factor=3)
    producer = run_producer(cluster.bootstrap, tmp_path, {"producer.topic": topic,
                                                          "producer.num-records-per-roll": "300"})
    assert producer.join(60)
    settings = {"consumer.topic": topic, "consumer.group-id": topic, "consumer.auto-offset-reset": "earliest",
                "consumer.ack-every-x-msgs": "50", "consumer.wait-after-record": "20", "consumer.local-id": "1"}
    first = start_consumer(cluster.bootstrap, tmp_path, settings)
    drain(first, 60)
    first.crash()
    assert first.join(30) and first.stats().state == "crashed"
    second = start_consumer(cluster.bootstrap, tmp_path, {**settings, "consumer.local-id": "2",
                                                          "consumer.wait-after-record": "0"})
    wait_until(lambda: second.stats().assignment, 90, 0.2, "second assigned")
    send_control(cluster.bootstrap, topic, "quit")  # offset 300: the second reads up to it, then closes
    assert second.join(60) and second.stats().state == "finished"
    seen_first = {int(r["offset"]) for r in rows(tmp_path / "consumer-1.csv.partial")}
    seen_second = {int(r["offset"]) for r in rows(tmp_path / "consumer-2.csv")}
    missed = set(range(300)) - seen_first - seen_second
    assert missed and min(missed) >= 50  # the commit at record 50 covered the whole polled batch
    assert min(missed) == max(seen_first) + 1 and max(missed) + 1 == min(seen_second, default=300)


def test_commit_too_late_redelivers_after_a_rebalance(cluster: Cluster, topic_factory: Callable[..., str],
                                                      tmp_path: Path) -> None:
    topic = topic_factory(partitions=4, replication_factor=3)
    producer = run_producer(cluster.bootstrap, tmp_path, {"producer.topic": topic,
                                                          "producer.num-records-per-roll": "400"})
    assert producer.join(60)
    events: list[ClientEvent] = []
    settings = {"consumer.topic": topic, "consumer.group-id": topic, "consumer.auto-offset-reset": "earliest",
                "consumer.ack-every-x-msgs": "100000"}  # commits far too late
    first = start_consumer(cluster.bootstrap, tmp_path, {**settings, "consumer.local-id": "1"}, events)
    drain(first, 400)
    second = start_consumer(cluster.bootstrap, tmp_path, {**settings, "consumer.local-id": "2"}, events)
    wait_until(lambda: second.stats().processed > 0 and second.stats().total_lag == 0 and second.stats().lag,
               90, 0.3, "second consumer caught up")
    for c in (first, second):
        c.stop()
    assert first.join(60) and second.join(60)
    one = {(r["partition"], r["offset"]) for r in rows(tmp_path / "consumer-1.csv")}
    two = {(r["partition"], r["offset"]) for r in rows(tmp_path / "consumer-2.csv")}
    assert len(one) == 400 and two and two <= one  # every record the second got was processed before
    assert any(e.client == "consumer-1" and e.kind == "revoked" and e.partitions for e in events)
    assert first.stats().rebalances >= 1 and second.stats().rebalances >= 1


def _assigned_after_restart(cluster: Cluster, tmp_path: Path, topic: str, instance_id: str | None) -> float:
    settings = {"consumer.topic": topic, "consumer.group-id": f"{topic}-{instance_id or 'dynamic'}"}
    if instance_id:
        settings["consumer.instance-id"] = instance_id
    first = start_consumer(cluster.bootstrap, tmp_path, settings)
    wait_until(lambda: first.stats().assignment, 60, 0.1, "first assignment")
    time.sleep(2)  # a couple of heartbeats in the stable group
    first.crash()
    assert first.join(30)
    events: list[ClientEvent] = []
    began = time.time()
    again = start_consumer(cluster.bootstrap, tmp_path, settings, events)
    try:
        wait_until(lambda: any(e.kind == "assigned" and e.partitions for e in events), 60, 0.1, "reassignment")
        return next(e.ts for e in events if e.kind == "assigned" and e.partitions) - began
    finally:
        again.stop()
        again.join(60)


def test_static_membership_skips_the_session_timeout_wait(cluster: Cluster, topic_factory: Callable[..., str],
                                                          tmp_path: Path) -> None:
    # The lab brokers allow sessions down to group.min.session.timeout.ms=1000; FAST_GROUP uses 10 s.
    topic = topic_factory(partitions=2, replication_factor=3)
    static = _assigned_after_restart(cluster, tmp_path / "static", topic, "member-a")
    dynamic = _assigned_after_restart(cluster, tmp_path / "dynamic", topic, None)
    print(f"assigned after restart: static {static:.1f}s, dynamic {dynamic:.1f}s (session timeout 10s)")
    assert static < 5 <= dynamic


def test_control_words_and_logs_intact_after_crashes(cluster: Cluster, topic_factory: Callable[..., str],
                                                     tmp_path: Path) -> None:
    topic = topic_factory(partitions=1, replication_factor=3)
    events: list[ClientEvent] = []
    consumer = start_consumer(cluster.bootstrap, tmp_path, {
        "consumer.topic": topic, "consumer.group-id": topic, "consumer.auto-offset-reset": "earliest",
        "consumer.wait-cmd-period": "1500", "consumer.local-id": "1"}, events)
    wait_until(lambda: consumer.stats().assignment, 60, 0.1, "assignment")
    base = {"producer.topic": topic, "producer.num-records-per-roll": "20"}
    assert run_producer(cluster.bootstrap, tmp_path, {**base, "producer.local-id": "1"}).join(60)
    drain(consumer, 20)
    send_control(cluster.bootstrap, topic, "wait")
    wait_until(lambda: any(e.kind == "wait" for e in events), 30, 0.1, "wait record seen")
    assert run_producer(cluster.bootstrap, tmp_path, {**base, "producer.local-id": "2"}).join(60)
    drain(consumer, 40)
    send_control(cluster.bootstrap, topic, "crash")
    assert consumer.join(60)
    assert consumer.stats().state == "crashed"
    crashed_log = rows(tmp_path / "consumer-1.csv.partial")
    assert not (tmp_path / "consumer-1.csv").exists()  # a crashed log never looks complete
    assert len(crashed_log) == 40 and all(r["msg_id"] and r["value"] for r in crashed_log)
    assert not {"wait", "crash", "quit"} & {r["value"] for r in crashed_log}

    # a fresh group from the end: quit closes cleanly and the log is complete
    quitter = start_consumer(cluster.bootstrap, tmp_path, {
        "consumer.topic": topic, "consumer.group-id": f"{topic}-2", "consumer.local-id": "2"})
    wait_until(lambda: quitter.stats().assignment, 60, 0.1, "assignment")
    send_control(cluster.bootstrap, topic, "quit")
    assert quitter.join(60) and quitter.stats().state == "finished"
    assert rows(tmp_path / "consumer-2.csv") == []

    # a producer crash leaves a partial log whose every row is whole
    producer = run_producer(cluster.bootstrap, tmp_path, {**base, "producer.num-records-per-roll": "200000",
                                                          "producer.local-id": "3"})
    wait_until(lambda: producer.stats().acked > 2000, 60, 0.05, "sending under way")
    producer.crash()
    assert producer.join(60) and producer.stats().state == "crashed"
    logged = rows(tmp_path / "producer-3.csv.partial")
    assert len(logged) >= 2000 and all(r["status"] == "acked" and r["value"] for r in logged)
    assert len({r["msg_id"] for r in logged}) == len(logged)


def test_consumers_share_partitions_in_a_group_and_each_group_gets_all(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=4, replication_factor=3)
    settings = {"consumer.topic": topic, "consumer.group-id": topic, "consumer.auto-offset-reset": "earliest",
                "consumer.assignment-strategy": "range"}
    group = [start_consumer(cluster.bootstrap, tmp_path, {**settings, "consumer.local-id": str(i)}) for i in (1, 2)]
    other = start_consumer(cluster.bootstrap, tmp_path, {**settings, "consumer.group-id": f"{topic}-b",
                                                         "consumer.local-id": "3"})

    def shared() -> bool:
        a, b = (set(c.stats().assignment) for c in group)
        return bool(a and b and not a & b and len(a | b) == 4)

    wait_until(shared, 90, 0.2, "the group's 4 partitions split between its 2 consumers")
    assert run_producer(cluster.bootstrap, tmp_path, {"producer.topic": topic,
                                                      "producer.num-records-per-roll": "200"}).join(60)
    wait_until(lambda: sum(c.stats().processed for c in group) >= 200 and other.stats().processed >= 200,
               60, 0.2, "all records consumed")
    for c in (*group, other):
        c.stop()
    assert all(c.join(60) for c in (*group, other))
    acked = {r["msg_id"] for r in rows(tmp_path / "producer.csv")}
    one, two = ({r["msg_id"] for r in rows(tmp_path / f"consumer-{i}.csv")} for i in (1, 2))
    assert one and two and not one & two and one | two == acked
    assert {r["msg_id"] for r in rows(tmp_path / "consumer-3.csv")} == acked


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KAFKALAB, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def _client_child(cli: subprocess.Popen[str], module: str) -> psutil.Process:
    """The child process of ``kafkalab produce``/``consume`` running ``module``, once it is sending or polling."""
    def child() -> psutil.Process | None:
        return next((c for c in psutil.Process(cli.pid).children() if module in " ".join(c.cmdline())), None)

    wait_until(lambda: child() is not None, 60, 0.2, f"{module} started")
    found = child()
    assert found is not None
    return found


@pytest.mark.parametrize("role", ["consume", "produce"])
def test_client_process_ends_when_its_parent_is_killed(role: str, cluster: Cluster,
                                                        topic_factory: Callable[..., str], tmp_path: Path) -> None:
    """`kafkalab consume`/`produce` SIGKILLed: its loop's child sees stdin close and ends on its own."""
    topic = topic_factory(partitions=3, replication_factor=3)
    settings = ({"consumer.topic": topic, "consumer.group-id": topic} if role == "consume" else
                {"producer.topic": topic, "producer.num-rolls": "1000", "producer.wait-after-roll": "100"})
    cli = subprocess.Popen(
        [*KAFKALAB, role, "-D", f"bootstrap.server={cluster.bootstrap}",
         *[a for k, v in settings.items() for a in ("-D", f"{k}={v}")], "--log-dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        child = _client_child(cli, f"kafkalab.clients.{role}r_loop")
    finally:
        cli.kill()
        cli.wait()
    _, alive = psutil.wait_procs([child], timeout=30)
    for proc in alive:  # leave nothing behind, whatever the outcome
        proc.kill()
    assert not alive, f"{role} loop pid {child.pid} outlived its parent by 30 s"


def test_producer_runs_niced_in_a_session_of_its_own(cluster: Cluster, topic_factory: Callable[..., str],
                                                     tmp_path: Path) -> None:
    """The producer's librdkafka threads can busy-poll: they get a node's share of the CPU, not kafkalab's."""
    topic = topic_factory(partitions=3, replication_factor=3)
    producer = run_producer(cluster.bootstrap, tmp_path, {
        "producer.topic": topic, "producer.num-rolls": "1000", "producer.wait-after-roll": "100"})
    try:
        wait_until(lambda: producer.stats().acked > 0, 60, 0.1, "producer sending")
        assert producer.pid is not None and producer.pid != os.getpid()
        child = psutil.Process(producer.pid)
        assert child.nice() == psutil.Process().nice() + BACKGROUND_NICE
        assert os.getsid(producer.pid) == producer.pid != os.getsid(0)
        autogroup = Path(f"/proc/{producer.pid}/autogroup")
        if autogroup.exists():
            assert autogroup.read_text().split()[-1] == str(BACKGROUND_NICE)
    finally:
        producer.stop(drain=False)
        assert producer.join(60)
    assert producer.stats().state == "finished"


def test_cli_missing_topic_without_auto_create_one_line_exit_2(distribution: object, tmp_path: Path) -> None:
    from tests.conftest import make_spec

    spec = make_spec("clients-no-autocreate", brokers=1, overrides={"auto.create.topics.enable": "false",
                                                                    "offsets.topic.replication.factor": "1"})
    with Cluster(spec, distribution) as small:  # type: ignore[arg-type]
        small.start(timeout=120)
        for command, option in (("produce", "producer.topic"), ("consume", "consumer.topic")):
            out = _cli(command, "-D", f"bootstrap.server={small.bootstrap}", "-D", f"{option}=absent", cwd=tmp_path)
            assert out.returncode == 2
            lines = out.stderr.strip().splitlines()
            assert len(lines) == 1 and "topic absent does not exist" in lines[0]
        assert not any(tmp_path.rglob("*.csv*"))
