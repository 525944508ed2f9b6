"""A real ZooKeeper-mode cluster with its network-fault proxies: the leader of a partition isolated and written to
with acks=1 through its proxy (it acknowledges alone), then healed. Every snapshot taken meanwhile shows the
cluster's view, never the isolated broker's stale one, and `cluster status` says whose view it shows and names the
isolated broker left out; after the heal `kafkalab net status` and `cluster status` say what it truncated, counted as
the producer was acknowledged."""

from __future__ import annotations

import io
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafkalab import kafka_install
from kafkalab.admin import Admin, MetadataView
from kafkalab.cli import main
from kafkalab.cluster import Cluster
from kafkalab.cluster.control_socket import ControlServer, write_cluster_file
from tests.conftest import make_spec, started

pytestmark = pytest.mark.cluster
TOPIC = "zombie"
REPLICATED = 100  # written with acks=all before the cut: every replica has them
AFTER = 50  # written with acks=all to the leader elected in the isolated one's place


Seen = tuple[int | None, tuple[int, ...], tuple[int, ...], int | None]  # a snapshot's leader, ISR, disowned, end


@dataclass
class Episode:
    state_dir: Path
    isolated: int
    seen: list[Seen]  # the snapshots taken from the cut on
    moved: int  # the first of them to show the new leader
    written: int  # the first taken once the new leader had AFTER records more
    acknowledged: int  # by the isolated leader alone
    status: str  # `kafkalab cluster status` while the new leader led


@pytest.fixture(scope="module")
def episode(distribution: kafka_install.Distribution) -> Iterator[Episode]:
    with contextmanager(started)(make_spec("zombie", net_proxies=True), distribution, 180) as cluster:
        write_cluster_file(cluster)
        server = ControlServer(cluster, threading.Event())
        try:
            yield isolate_write_heal(cluster)
        finally:
            server.close()


def isolate_write_heal(cluster: Cluster) -> Episode:
    admin = Admin(cluster.bootstrap, timeout_s=5)
    admin.create_topic(TOPIC, 1, 3, timeout_s=60)
    isolated = admin.snapshot().partition(TOPIC, 0).leader  # type: ignore[union-attr]
    assert isolated is not None
    state = ["--state-dir", str(cluster.state_dir)]
    # through the leader's proxy port: its metadata, from the leader, keeps the producers writing there
    assert send(writer(client_port(cluster, isolated), "all"), REPLICATED) == REPLICATED
    zombie_writer = writer(client_port(cluster, isolated), "1")  # connected before the cut: it never asks the others
    assert main(["net", "isolate", "broker", str(isolated), *state]) == 0
    acknowledged = send(zombie_writer, 1000)
    seen: list[Seen] = []
    deadline = time.monotonic() + 60
    while not seen or seen[-1][0] in (None, isolated):
        assert time.monotonic() < deadline, f"the controller never moved broker {isolated}'s leadership: {seen}"
        seen.append(look(cluster))
    moved, leader = len(seen) - 1, seen[-1][0]
    assert leader is not None and send(writer(client_port(cluster, leader), "all"), AFTER) == AFTER
    written = len(seen)
    seen += [look(cluster) for _ in range(60)]
    with io.StringIO() as out, redirect_stdout(out):
        assert main(["cluster", "status", *state]) == 0
        status = out.getvalue()
    assert main(["net", "heal", *state]) == 0
    deadline = time.monotonic() + 90
    while isolated not in (admin.snapshot(offsets=False).partition(TOPIC, 0) or ()).isr:  # type: ignore[union-attr]
        assert time.monotonic() < deadline, f"broker {isolated} not back in the ISR 90 s after the heal"
        time.sleep(0.5)
    return Episode(cluster.state_dir, isolated, seen, moved, written, acknowledged, status)


def look(cluster: Cluster) -> Seen:
    """A snapshot as `cluster status` takes one: a new client each time."""
    snap = Admin(cluster.bootstrap).snapshot()
    part = snap.partition(TOPIC, 0)
    return (part.leader, part.isr, snap.disowned, part.end_offset) if part else (None, (), snap.disowned, None)


def client_port(cluster: Cluster, broker: int) -> int:
    return cluster.spec.net_ports[broker - 1].client


def writer(port: int, acks: str) -> Producer:
    producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": acks, "enable.idempotence": False})
    producer.list_topics(TOPIC, timeout=10)
    return producer


def send(producer: Producer, n: int) -> int:
    """``n`` records to partition 0; how many were acknowledged."""
    ok: list[bool] = []
    for i in range(n):
        producer.produce(TOPIC, str(i).encode(), partition=0, on_delivery=lambda err, _msg: ok.append(err is None))
    producer.flush(30)
    return sum(ok)


def test_the_isolated_leader_s_own_view_is_never_shown_once_the_controller_moved_its_leadership(
        episode: Episode) -> None:
    isolated, seen = episode.isolated, episode.seen
    zombie = [s for s in seen[episode.moved:] if s[0] == isolated or isolated in s[1]]
    assert not zombie, f"{len(zombie)} of {len(seen) - episode.moved} snapshots showed broker {isolated}'s view: " \
                       f"{zombie[:3]}"
    # nor its end offset: the new leader's log went on, the isolated one's high watermark stayed where it was cut
    ends = [end for _leader, _isr, _disowned, end in seen[episode.written:]]
    assert ends == [REPLICATED + AFTER] * len(ends), ends
    # never shown, at most named: a snapshot waits for the rest only briefly once most brokers answered (a paused
    # one never answers), so one the isolated broker did not answer in time names nothing; no other is named
    assert all(s[2] in ((), (isolated,)) for s in seen)


def test_cluster_status_says_whose_view_it_shows_and_names_the_isolated_broker_left_out(episode: Episode) -> None:
    print(episode.status)
    said = " ".join(episode.status.split())
    whose = re.search(r"view of broker (\d+)", said)
    assert whose is not None and int(whose[1]) != episode.isolated, episode.status
    by = int(whose[1])
    # named when it answered within the grace the others leave it (see above); it answers on its direct listener
    named = MetadataView(by, (episode.isolated,)).said()
    assert named in said or (MetadataView(by).said() in said and "left out" not in said), episode.status


def test_after_the_heal_both_statuses_say_what_the_rejoining_leader_truncated(
        episode: Episode, capsys: pytest.CaptureFixture[str]) -> None:
    n = episode.acknowledged
    assert n == 1000  # the isolated leader acknowledged every acks=1 record alone
    said = (f"broker-{episode.isolated} truncated {TOPIC}/0 from {REPLICATED + n:,} to {REPLICATED:,} to match "
            f"broker-")
    gone = f"{n:,} records gone (uncommitted: acknowledged only if written with acks=1)"
    for command in ("net", "cluster"):
        assert main([command, "status", "--state-dir", str(episode.state_dir)]) == 0
        out = capsys.readouterr().out
        print(out)
        assert said in " ".join(out.split()) and gone in " ".join(out.split()), out
