"""The engine against a real cluster: failover on SIGKILL, controlled shutdown on SIGTERM, pause and resume.

Each runs on ZooKeeper mode (local and docker backends) and on KRaft mode (3 dedicated controllers).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Producer

from kafkalab.admin import Admin, PartitionState
from kafkalab.cluster import Cluster, NodeState
from kafkalab.errors import KafkalabError
from kafkalab.priority import BACKGROUND_NICE
from tests.helpers import wait_until

pytestmark = pytest.mark.cluster

BACKENDS = ["local", "docker", "kraft"]  # kraft: KRaft mode on the local backend
CONTROLLED_SHUTDOWN_DONE = {  # what a broker logs when the controller has moved its leaderships away
    "zookeeper": "Controlled shutdown request returned successfully",
    "kraft": "The controller has asked us to exit controlled shutdown",
}
# A broker back in the ISR: it must catch up and, in KRaft, register again; in the full suite on 2 cores the
# docker KRaft cluster (six JVMs in containers) has taken over 60 s, alone it takes 10-20 s.
REJOIN_S = 120


def isr_holds(admin: Admin, topic: str, check: Callable[[tuple[int, ...]], bool]) -> bool:
    """``check`` on partition 0's ISR; False while the admin API cannot be reached (the caller retries)."""
    p = admin.snapshot(offsets=False).partition(topic, 0)
    return p is not None and check(p.isr)


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest) -> tuple[Cluster, Admin, Callable[..., str]]:
    """(cluster, admin, topic_factory) for each backend and mode."""
    if request.param == "local":
        return request.getfixturevalue("cluster"), request.getfixturevalue("admin"), request.getfixturevalue(
            "topic_factory")
    return request.getfixturevalue(f"{request.param}_engine")  # type: ignore[no-any-return]


def test_sigkill_of_leader_elects_new_leader_from_isr_and_restart_restores_isr(engine) -> None:
    cluster, admin, topic_factory = engine
    topic = topic_factory(partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"})

    def settled() -> PartitionState | None:  # the broker answering may not have the just-created topic in its cache yet
        p = admin.snapshot().partition(topic, 0)
        return p if p is not None and p.leader is not None and len(p.isr) == 3 else None

    before = wait_until(settled, 30, what=f"{topic}/0 with a leader and 3 in-sync replicas")
    leader = before.leader
    killed_at = time.monotonic()
    cluster.node(leader).kill()
    assert cluster.node(leader).state == NodeState.KILLED  # observable at once

    def new_leader() -> object:
        p = admin.snapshot(offsets=False).partition(topic, 0)
        return p if p is not None and p.leader not in (None, leader) else None

    bound = cluster.spec.session_timeout_s + 10  # session expiry (ZooKeeper's or KRaft's) plus the election
    after = wait_until(new_leader, bound, what="a new leader for partition 0")
    assert time.monotonic() - killed_at < bound
    assert after.leader in before.isr  # type: ignore[attr-defined]
    assert leader not in after.isr  # type: ignore[attr-defined]

    cluster.node(leader).start()  # at once: before its ZooKeeper session could have expired for sure
    assert cluster.node(leader).state == NodeState.STARTING
    cluster.wait_state(leader, NodeState.RUNNING, timeout=90)
    wait_until(lambda: isr_holds(admin, topic, lambda isr: len(isr) == 3), REJOIN_S, what="the ISR back to 3")


def test_sigterm_moves_leadership_before_the_process_exits(engine) -> None:
    cluster, admin, topic_factory = engine
    topic = topic_factory(partitions=3, replication_factor=3)
    leader = admin.snapshot().partition(topic, 0).leader
    led = [p.partition for p in admin.snapshot().topic(topic) if p.leader == leader]
    node = cluster.node(leader)
    log_start = node.log_path.stat().st_size
    node.stop()
    cluster.wait_state(leader, NodeState.STOPPED, timeout=60)
    assert node.reason == "stopped (controlled shutdown)"  # the JVM's 143 is the stop asked for, not a failure
    # The broker asks the controller to move its leaderships and exits only after the controller
    # answered; the reply is logged, so the log proves the order even when a poll would be too slow.
    with open(node.log_path, "rb") as fh:
        fh.seek(log_start)
        shutdown_log = fh.read().decode(errors="replace")
    assert CONTROLLED_SHUTDOWN_DONE[cluster.spec.mode] in shutdown_log
    moved = wait_until(lambda: (parts := admin.snapshot(offsets=False).topic(topic)) and all(
        p.leader not in (None, leader) for p in parts if p.partition in led), 10, what="leaders elsewhere")
    assert moved
    node.start()
    cluster.wait_state(leader, NodeState.RUNNING, timeout=90)


def test_paused_follower_leaves_isr_and_returns_on_resume(engine) -> None:
    cluster, admin, topic_factory = engine
    topic = topic_factory(partitions=1, replication_factor=3)
    snapshot = admin.snapshot()
    p = snapshot.partition(topic, 0)
    follower = next(r for r in p.replicas if r not in (p.leader, snapshot.controller))
    cluster.node(follower).pause()
    assert cluster.node(follower).state == NodeState.PAUSED
    # A follower that has everything counts as caught up however long it is silent: keep writing, so the
    # paused one falls behind and the leader drops it after replica.lag.time.max.ms.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1", "log_level": 0})

    seen: dict[str, int] = {}  # every distinct observation and how often: a failure says what happened

    def out_of_isr() -> bool:
        producer.produce(topic, b"tick")
        producer.poll(0)
        snap = admin.snapshot(offsets=False)
        part = snap.partition(topic, 0)
        what = snap.error or (f"leader {part.leader} isr {part.isr}" if part else "topic missing")
        key = f"{what} (metadata of broker {snap.answered_by})"
        seen[key] = seen.get(key, 0) + 1
        return part is not None and follower not in part.isr

    try:
        try:
            wait_until(out_of_isr, 60, interval=0.2, what=f"broker {follower} out of the ISR")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; paused broker {follower}; observed: {seen}") from None
    finally:
        cluster.node(follower).resume()
        producer.flush(10)
    wait_until(lambda: cluster.node(follower).state == NodeState.RUNNING, 90, what="the follower running again")
    wait_until(lambda: isr_holds(admin, topic, lambda isr: follower in isr), REJOIN_S,
               what=f"broker {follower} back in the ISR")


def test_node_infos_report_pid_uptime_memory_and_log_tail(cluster: Cluster) -> None:
    infos = {i.name: i for i in cluster.infos()}
    assert set(infos) == {"zookeeper", "broker-1", "broker-2", "broker-3"}
    for info in infos.values():
        if info.state == NodeState.RUNNING:
            assert info.pid and info.rss_bytes > 10 * 2**20 and info.uptime_s > 0
    log_lines = cluster.node(1).log_path.read_text(errors="replace").splitlines()
    assert cluster.node(1).log_tail(20) == log_lines[-20:] and len(log_lines) >= 20
    assert any("[KafkaServer id=1] started" in line for line in log_lines)


def test_nodes_run_at_a_lower_cpu_priority_than_kafkalab(cluster: Cluster) -> None:
    """The console and the clients get the CPU first on a busy laptop (BACKGROUND_NICE)."""
    own = os.getpriority(os.PRIO_PROCESS, 0)
    autogroups = Path("/proc/self/autogroup").exists()
    for info in cluster.infos():
        if info.state != NodeState.RUNNING:
            continue
        jvm = psutil.Process(info.pid)
        assert jvm.nice() == own + BACKGROUND_NICE, info.name
        assert all(psutil.Process(t.id).nice() == own + BACKGROUND_NICE for t in jvm.threads()[:20]), info.name
        if autogroups:
            assert Path(f"/proc/{info.pid}/autogroup").read_text().split()[-1] == str(BACKGROUND_NICE), info.name


def test_admin_snapshots_keep_answering_while_the_broker_they_talk_to_is_paused(cluster: Cluster) -> None:
    """A paused broker holds its connections open and never answers: snapshots must go round it.

    Six admins, each connected to a broker picked by librdkafka: most likely one of them talks to the
    paused broker, and every one must still answer within its timeout, from another broker.
    """
    admins = [Admin(cluster.bootstrap, timeout_s=2.0) for _ in range(6)]
    assert all(a.snapshot(offsets=False).reachable for a in admins)
    paused = 1
    cluster.node(paused).pause()
    try:
        for a in admins:
            began = time.monotonic()
            snap = a.snapshot(offsets=False)
            assert snap.reachable, f"no metadata while broker {paused} is paused: {snap.error}"
            assert snap.answered_by != paused
            assert time.monotonic() - began < 2 * a.timeout_s + 1  # metadata, then describe_cluster at most
    finally:
        cluster.node(paused).resume()


def test_a_refused_replication_factor_is_asked_again_only_up_to_the_brokers_known_to_run(admin: Admin) -> None:
    """Just after a start the controller may count fewer brokers than run; a factor within what the caller
    knows runs is asked again until the timeout, a factor beyond it is refused at once."""
    started = time.monotonic()
    with pytest.raises(KafkalabError, match="larger than available brokers"):
        admin.create_topic("rf-too-big-at-once", 1, 4, timeout_s=3.0)
    assert time.monotonic() - started < 2.0
    started = time.monotonic()
    with pytest.raises(KafkalabError, match="larger than available brokers"):
        admin.create_topic("rf-asked-again", 1, 4, timeout_s=3.0, brokers_up=4)
    assert time.monotonic() - started >= 3.0
