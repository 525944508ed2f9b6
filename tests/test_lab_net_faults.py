"""Network faults in lab files: the vocabulary parsed, bad input refused in one line naming the field, and
faults fired through a fake host as the NetRequests the cluster's proxy takes (checked against its own rules)."""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.cli import main
from kafkalab.clients.stats import EventCallback
from kafkalab.cluster import NodeAction, NodeState
from kafkalab.cluster.netwiring import ClusterNet, NetAction, NetRequest
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.labs import load_lab
from kafkalab.labs.events import EventKind
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.faults import TargetKind, make_fault
from kafkalab.labs.loader import find_lab
from kafkalab.labs.model import ConsumerPlan, ProducerPlan
from kafkalab.labs.results import FaultState
from kafkalab.labs.run_clients import RunClients
from kafkalab.labs.timeline import Timeline
from kafkalab.netfaults import Direction
from tests.lab_fakes import FakeConsumer, FakeProducer, World
from tests.test_labs_unit import error_of, write

LAB = """\
[lab]
id = "demo"
title = "Demo"
teaches = "nothing"
why = "because"
instructions = "do it"

[cluster]
modes = ["zookeeper"]

[[topic]]
name = "orders"

[producer]
"producer.topic" = "orders"

[consumers]

[[consumer]]
local_id = 1

[[fault]]
at = "progress 20%"
do = "isolate"
on = "leader orders/0"

[[fault]]
at = "after 2s"
do = "cut"
on = "followers orders/1"
to = "leader orders/1"
both_ways = true

[[fault]]
at = "after 2s"
do = "delay"
on = "clients"
to = "broker 2"
ms = "1.5s"
jitter_ms = 100

[[fault]]
at = "after 2s"
do = "limit"
on = "broker 3"
to = "zookeeper"
rate = "100KB/s"

[[fault]]
at = "after 2s"
do = "heal"
on = "same"

[[fault]]
at = "after 2s"
do = "heal"

[expect]
lost = "> 0"
"""


def test_network_faults_parse_and_turn_the_proxies_on(tmp_path: Path) -> None:
    plain = load_lab(write(tmp_path, LAB.split("[[fault]]")[0] + "[expect]\nlost = 0\n"))
    assert not plain.cluster.net_proxies
    lab = load_lab(write(tmp_path, LAB))
    assert lab.cluster.net_proxies  # a lab with a network fault needs the proxies: never a run without them
    isolate, cut, delay, limit, heal_same, heal_all = lab.faults
    assert isolate.net_action is NetAction.ISOLATE and isolate.to is None
    assert (cut.net_action, cut.target.kind, cut.both_ways) == (NetAction.CUT, TargetKind.FOLLOWERS, True)
    assert cut.to is not None and (cut.to.kind, cut.to.topic, cut.to.partition) == (TargetKind.LEADER, "orders", 1)
    assert (delay.target.kind, delay.ms, delay.jitter_ms) == (TargetKind.CLIENTS, 1500, 100)
    assert (limit.target.brokers, limit.bytes_per_s) == ((3,), 100_000)
    assert limit.to is not None and limit.to.kind == TargetKind.ZOOKEEPER
    assert heal_same.target.kind == TargetKind.SAME and heal_all.target.kind == TargetKind.NONE
    assert cut.describe() == "cut followers orders/1 to leader orders/1 after 2s"  # never "at after"


def fault_block(fields: str) -> str:
    return LAB.split("[[fault]]")[0] + f"[[fault]]\nat = \"start\"\n{fields}\n\n[expect]\nlost = 0\n"


@pytest.mark.parametrize(("fields", "field", "says"), [
    ('do = "partition"\non = "broker 1"', "fault[1].do", "cannot be done on broker 1"),
    ('do = "cut"\non = "broker 1"\nto = "broker 4"', "fault[1].to",
     "broker 4 does not exist: this lab has brokers 1..3"),
    ('do = "cut"\non = "broker 1"', "fault[1].to", "cut acts on links: name their far end"),
    ('do = "cut"\non = "broker 1"\nto = "broker 1"', "fault[1].to", "itself is no link"),
    ('do = "cut"\non = "broker 1"\nto = "clients"', "fault[1].to", "is not a node a link goes to"),
    ('do = "cut"\non = "zookeeper"\nto = "broker 1"', "fault[1].on", "ZooKeeper opens no connection"),
    ('do = "isolate"\non = "broker 1"\nto = "broker 2"', "fault[1].to", "isolate cuts a node from every other"),
    ('do = "isolate"\non = "clients"', "fault[1].do", "'isolate' cannot be done on clients"),
    ('do = "delay"\non = "broker 1"\nto = "broker 2"', "fault[1].ms", "delay needs ms"),
    ('do = "delay"\non = "broker 1"\nto = "broker 2"\nms = "fast"', "fault[1].ms", "'fast' does not parse"),
    ('do = "delay"\non = "broker 1"\nto = "broker 2"\nms = 100\njitter_ms = 200', "fault[1].jitter_ms",
     "more than the delay"),
    ('do = "limit"\non = "broker 1"\nto = "broker 2"\nrate = "lots"', "fault[1].rate", "'lots' does not parse"),
    ('do = "cut"\non = "broker 1"\nto = "broker 2"\nrate = "1MB/s"', "fault[1].rate", "only limit takes rate"),
    ('do = "kill"\non = "broker 1"\nto = "broker 2"', "fault[1].to", "take to, not kill"),
    ('do = "heal"\nto = "broker 2"', "fault[1].to", "a heal with a link names both ends"),
    ('do = "cut"\non = "controllers 2"\nto = "broker 1"', "fault[1].on", "acts on brokers or ZooKeeper"),
    ('do = "stop"\non = "clients"', "fault[1].do", "cannot be done on clients"),
    ('do = "hold"\non = "clients"', "fault[1].to", "hold acts on links: name their far end"),
    ('do = "hold"\non = "clients"\nto = "broker 1"\ndirection = "up"', "fault[1].direction",
     "'up' is not a direction"),
    ('do = "hold"\non = "clients"\nto = "broker 1"\nms = 100', "fault[1].ms", "only delay takes ms"),
    ('do = "cut"\non = "broker 1"\nto = "broker 2"\ndirection = "requests"', "fault[1].direction",
     "only hold, delay, limit take direction, not cut"),
    ('do = "hold"\non = "broker 1"\nto = "clients"', "fault[1].to", "is not a node a link goes to"),
    ('do = "cut"\non = "broker 1"\nto = "producer"', "fault[1].to", "'producer' is not a node a link goes to "
     "(a client is only a source)"),
    ('do = "cut"\non = "broker 1"\nto = "consumer 1"', "fault[1].to", "(a client is only a source)"),
    ('do = "cut"\non = "consumers"\nto = "broker 1"', "fault[1].on", "cut acts on one client's links: name it"),
    ('do = "cut"\non = "consumer 4"\nto = "broker 1"', "fault[1].on", "consumer 4 is not a [[consumer]] local_id"),
    ('do = "isolate"\non = "producer"', "fault[1].do", "'isolate' cannot be done on producer"),
    ('do = "hold"\non = "producer"\nto = "zookeeper"', "fault[1].to",
     "producer does not reach ZooKeeper through the proxy"),
])
def test_bad_network_faults_are_refused_naming_the_field(tmp_path: Path, fields: str, field: str, says: str) -> None:
    msg = error_of(tmp_path, fault_block(fields))
    assert f": {field}: " in msg and says in msg, msg
    assert "\n" not in msg


def test_a_network_fault_runs_in_kraft_too_and_turns_the_proxies_on_unless_the_lab_turned_them_off(
        tmp_path: Path) -> None:
    text = fault_block('do = "isolate"\non = "broker 1"').replace('modes = ["zookeeper"]',
                                                                    'modes = ["zookeeper", "kraft"]')
    lab = load_lab(write(tmp_path, text))
    assert lab.cluster.modes == ("zookeeper", "kraft") and lab.cluster.net_proxies is True
    msg = error_of(tmp_path, text.replace("[cluster]\n", "[cluster]\nnet_proxies = false\n", 1))
    assert "fault[1].do: isolate is a network fault, which needs the network-fault proxies" in msg
    assert "drop [cluster] net_proxies = false" in msg


def test_labs_check_refuses_a_bad_network_fault_in_one_line_with_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, fault_block('do = "delay"\non = "broker 1"\nto = "broker 2"\nms = "soon"'))
    assert main(["labs", "--check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fault[1].ms" in err[0] and "does not parse" in err[0], err


class NetHost:
    """A FaultHost for network faults: a cluster of ZooKeeper and brokers 1..3, the requests it was asked."""

    def __init__(self, snap: ClusterSnapshot, spec: ClusterSpec) -> None:
        self.snap = snap
        self.requests: list[NetRequest] = []
        self.owner = ClusterNet(spec)  # the proxy's owner, for its own checks of each request (no process)

    def node_states(self) -> Mapping[str, NodeState]:
        return {n: NodeState.RUNNING for n in self.owner.nodes}

    def fresh_snapshot(self) -> ClusterSnapshot:
        return self.snap

    def active_controller(self) -> None:
        return None

    def node_action(self, name: str, action: NodeAction) -> None:
        raise AssertionError("a network fault touched a process")

    def net(self, request: NetRequest) -> list[str]:
        self.requests.append(request)
        if request.action is NetAction.HEAL:
            self.owner.resolve(request.words)
            return ["healed"] * max(1, len(request.words))
        return [str(r) for r in self.owner.rules(request, self.owner.resolve(request.words))]


def snapshot() -> ClusterSnapshot:
    parts = (PartitionState("orders", 0, 1, (1, 2, 3), (1, 2, 3)), PartitionState("orders", 1, 2, (2, 3, 1), (2, 3, 1)))
    return ClusterSnapshot(taken_at=0.0, reachable=True, controller=1, brokers=(1, 2, 3), partitions=parts)


def test_network_faults_fire_as_proxy_requests_on_the_resolved_nodes(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, LAB))
    host = NetHost(snapshot(), ClusterSpec(state_dir=tmp_path / "state", net_proxies=True))
    timeline = Timeline(lab.id)
    firing = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    previous: list[str] = []
    for fault in lab.faults:
        targets = firing.fire(host, fault, previous)  # type: ignore[arg-type]
        previous = targets or previous
    words = [(r.action, r.words, r.both_ways, r.ms, r.jitter_ms, r.bytes_per_s) for r in host.requests]
    assert words == [
        (NetAction.ISOLATE, ("broker-1",), False, 0, 0, 0),
        (NetAction.CUT, ("broker-3", "broker-2"), True, 0, 0, 0),
        (NetAction.CUT, ("broker-1", "broker-2"), True, 0, 0, 0),
        (NetAction.DELAY, ("clients", "broker-2"), False, 1500, 100, 0),
        (NetAction.LIMIT, ("broker-3", "zookeeper"), False, 0, 0, 100_000),
        (NetAction.HEAL, ("broker-3",), False, 0, 0, 0),  # same: the previous network fault's `on` nodes
        (NetAction.HEAL, (), False, 0, 0, 0),
    ]
    lines = [e.detail for e in timeline.events(EventKind.FAULT)]
    assert lines[0] == "isolate broker-1: 5 rules"  # cut both ways from brokers 2 and 3, and to ZooKeeper
    assert lines[1] == "cut broker-3 <-> broker-2, broker-1 <-> broker-2: 4 rules"
    assert lines[2] == "delay clients -> broker-2: 1 rule 1500 ms +/- 100 ms"
    assert lines[-1] == "heal every link: 1 rule healed"


def test_a_link_that_names_no_node_now_fails_the_fault_not_the_run(tmp_path: Path) -> None:
    text = fault_block('do = "cut"\non = "leader orders/0"\nto = "broker 1"')
    lab = load_lab(write(tmp_path, text))
    host = NetHost(snapshot(), ClusterSpec(state_dir=tmp_path / "state", net_proxies=True))
    timeline = Timeline(lab.id)
    firing = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    firing.run(host, None, lambda _s: None, 0.01, lambda: False)  # type: ignore[arg-type]
    assert firing.statuses[0].state == FaultState.FAILED
    assert "names no link right now" in firing.statuses[0].detail and not host.requests


def test_a_hold_fires_as_a_hold_request_and_its_line_says_what_was_held(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, fault_block('do = "hold"\non = "clients"\nto = "leader orders/1"\n'
                                               'direction = "requests"\n\n[[fault]]\nat = "after 1s"\n'
                                               'do = "delay"\non = "broker 1"\nto = "broker 3"\nms = 200\n'
                                               'direction = "replies"')))
    hold, delay = lab.faults
    assert (hold.net_action, hold.direction, delay.direction) == (NetAction.HOLD, Direction.REQUESTS,
                                                                  Direction.REPLIES)
    host = NetHost(snapshot(), ClusterSpec(state_dir=tmp_path / "state", net_proxies=True))
    timeline = Timeline(lab.id)
    firing = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    for fault in lab.faults:
        firing.fire(host, fault, [])  # type: ignore[arg-type]
    assert [(r.action, r.words, r.direction) for r in host.requests] == [
        (NetAction.HOLD, ("clients", "broker-2"), Direction.REQUESTS),
        (NetAction.DELAY, ("broker-1", "broker-3"), Direction.REPLIES)]
    lines = [e.detail for e in timeline.events(EventKind.FAULT)]
    assert lines == ["hold clients -> broker-2: 1 rule, the requests kept by the proxy until healed",
                     "delay broker-1 -> broker-3: 1 rule 200 ms (replies only)"]


def test_the_producer_and_one_consumer_are_network_sources_of_their_own(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, fault_block(
        'do = "cut"\non = "producer"\nto = "leader orders/0"\n\n'
        '[[fault]]\nat = "after 1s"\ndo = "hold"\non = "consumer 1"\nto = "broker 3"\ndirection = "replies"\n\n'
        '[[fault]]\nat = "after 1s"\ndo = "heal"\non = "producer"')))
    assert [f.target.kind for f in lab.faults] == [TargetKind.PRODUCER, TargetKind.CONSUMER, TargetKind.PRODUCER]
    host = NetHost(snapshot(), ClusterSpec(state_dir=tmp_path / "state", net_proxies=True))
    for name in ("producer", "consumer-1"):
        host.owner.client_started(name, os.getpid())
    timeline = Timeline(lab.id)
    firing = FaultFiring(lab.faults, timeline, random.Random(1), [1])
    for fault in lab.faults:
        firing.fire(host, fault, [])  # type: ignore[arg-type]
    assert [(r.action, r.words) for r in host.requests] == [
        (NetAction.CUT, ("producer", "broker-1")), (NetAction.HOLD, ("consumer-1", "broker-3")),
        (NetAction.HEAL, ("producer",))]
    assert [e.detail for e in timeline.events(EventKind.FAULT)][:2] == [
        "cut producer -> broker-1: 1 rule", "hold consumer-1 -> broker-3: 1 rule, the replies kept by the proxy "
        "until healed"]


def test_a_link_from_a_client_the_run_has_not_started_fails_the_fault_not_the_run(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, fault_block('do = "cut"\non = "consumer 1"\nto = "broker 1"')))
    host = NetHost(snapshot(), ClusterSpec(state_dir=tmp_path / "state", net_proxies=True))  # no client named
    firing = FaultFiring(lab.faults, Timeline(lab.id), random.Random(1), [1])
    firing.run(host, None, lambda _s: None, 0.01, lambda: False)  # type: ignore[arg-type]
    assert firing.statuses[0].state == FaultState.FAILED
    assert "no client 'consumer-1' in this run" in firing.statuses[0].detail


def test_the_run_tells_the_proxy_its_clients_by_name_as_they_start(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, LAB))
    world = World()
    pids = iter(range(4001, 4100))

    def producer(plan: ProducerPlan, _dir: Path, _bootstrap: str, on_event: EventCallback, _seed: int) -> Any:
        made = FakeProducer(world, plan, on_event)
        made.pid = next(pids)  # type: ignore[attr-defined]
        return made

    def consumer(plan: ConsumerPlan, _dir: Path, _bootstrap: str, on_event: EventCallback) -> Any:
        made = FakeConsumer(world, plan, on_event)
        made.pid = next(pids)  # type: ignore[attr-defined]
        return made

    deps = dataclasses.replace(world.deps(), producer=producer, consumer=consumer)
    told: list[tuple[str, int]] = []
    clients = RunClients(lab, tmp_path, "127.0.0.1:1", Timeline(lab.id), deps, lambda _s: None, lambda _m: None,
                         on_started=lambda name, pid: told.append((name, pid)))
    clients.start_consumer(lab.consumers[0])
    clients.make_producer(1)
    clients.start_producer()
    assert told == [("consumer-1", 4001), ("producer", 4002)]
    clients.act_on_consumer(1, "crash")
    clients.start_consumer(lab.consumers[0])  # started again: a new process, told under the same name
    assert told[-1] == ("consumer-1", 4003)


def test_make_fault_takes_amounts_as_numbers_or_text() -> None:
    fault = make_fault({"at": "start", "do": "delay", "on": "broker 1", "to": "broker 2", "ms": 250}, 3)
    assert (fault.ms, fault.jitter_ms) == (250, 0)


@pytest.mark.parametrize("lab_id", ["zombie-leader", "lost-replies"])
def test_the_network_labs_run_with_the_proxies_in_both_modes(lab_id: str) -> None:
    lab = load_lab(find_lab(lab_id))
    assert lab.cluster.net_proxies and lab.cluster.modes == ("zookeeper", "kraft")
    assert any(f.net_action is not None for f in lab.faults) and lab.fix is not None
