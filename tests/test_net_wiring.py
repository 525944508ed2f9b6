"""The network-fault proxy's wiring without a cluster: listeners and ports of a --net-proxies spec, the fault
vocabulary of `kafkalab net` (node words, amounts, links) and its bad input refused in one line."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.cli import main
from kafkalab.cli.net_cmds import net_request
from kafkalab.cluster.netwiring import (
    ClusterNet,
    NetAction,
    NetRequest,
    isolation,
    parse_ms,
    parse_rate,
    proxy_ports,
    status_lines,
)
from kafkalab.cluster.ports import pick_free_ports, spec_ports
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.errors import KafkalabError
from kafkalab.labs.loader import load_lab
from kafkalab.netfaults import Cut, Delay, Direction, Drop, Hold, Limit, Link, ProxyStatus, TargetStatus


def spec(tmp_path: Path, **kwargs: object) -> ClusterSpec:
    return ClusterSpec(state_dir=tmp_path / "state", net_proxies=True, **kwargs)  # type: ignore[arg-type]


def test_brokers_advertise_proxy_ports_and_keep_a_direct_listener(tmp_path: Path) -> None:
    s = spec(tmp_path)
    settings = s.broker_settings(2)
    net = s.net_ports[1]
    assert settings["advertised.listeners"] == (f"PLAINTEXT://127.0.0.1:{s.broker_port(2)},"
                                                f"CLIENT://127.0.0.1:{net.client},BROKER://127.0.0.1:{net.inter}")
    assert settings["listeners"] == (f"PLAINTEXT://127.0.0.1:{s.broker_port(2)},"
                                     f"CLIENT://127.0.0.1:{net.client_real},BROKER://127.0.0.1:{net.inter_real}")
    assert settings["inter.broker.listener.name"] == "BROKER"
    assert settings["zookeeper.connect"] == f"127.0.0.1:{s.zk_proxy_port}"
    assert s.bootstrap == ",".join(f"127.0.0.1:{p}" for p in s.broker_ports)  # kafkalab's admin: direct
    assert s.client_bootstrap == ",".join(f"127.0.0.1:{n.client}" for n in s.net_ports)
    targets = {(p.listen, p.target, p.upstream_port) for p in proxy_ports(s)}
    assert (net.client, "broker-2", net.client_real) in targets and (net.inter, "broker-2", net.inter_real) in targets
    assert (s.zk_proxy_port, "zookeeper", s.zk_port) in targets


def test_the_proxies_are_on_unless_left_out(tmp_path: Path) -> None:
    on = ClusterSpec(state_dir=tmp_path / "on")
    assert on.net_proxies is True and len(on.net_ports) == 3 and on.client_bootstrap != on.bootstrap
    assert ClusterSpec(state_dir=tmp_path / "off", net_proxies=False).net_ports == []


def test_without_proxies_nothing_changes(tmp_path: Path) -> None:
    s = ClusterSpec(state_dir=tmp_path, net_proxies=False)
    assert s.client_bootstrap == s.bootstrap
    assert "inter.broker.listener.name" not in s.broker_settings(1)
    assert s.broker_settings(1)["zookeeper.connect"] == f"127.0.0.1:{s.zk_port}"


def test_kraft_voters_are_reached_through_the_proxy_and_the_quorum_view_directly(tmp_path: Path) -> None:
    s = spec(tmp_path, mode="kraft", controllers=3)
    assert s.controller_ids == [101, 102, 103]
    behind = s.controller_net(102)
    voter = s.controller_port(102)  # the voter endpoint formatted into the storage: the proxy's port
    settings = s.controller_settings(102)
    assert settings["listeners"] == (f"CONTROLLER://127.0.0.1:{behind.real},"
                                     f"CONTROLLER_DIRECT://127.0.0.1:{behind.direct}")
    assert settings["advertised.listeners"] == (f"CONTROLLER://127.0.0.1:{voter},"
                                                f"CONTROLLER_DIRECT://127.0.0.1:{behind.direct}")
    assert settings["controller.listener.names"] == "CONTROLLER,CONTROLLER_DIRECT"  # CONTROLLER first: the voters'
    assert settings["controller.quorum.bootstrap.servers"] == s.bootstrap_controllers
    assert s.bootstrap_controllers == ",".join(f"127.0.0.1:{p}" for p in s.controller_ports)
    assert s.quorum_bootstrap == ",".join(f"127.0.0.1:{n.direct}" for n in s.controller_net_ports)
    broker = s.broker_settings(2)
    net = s.net_ports[1]
    assert broker["listeners"] == (f"PLAINTEXT://127.0.0.1:{s.broker_port(2)},"
                                   f"CLIENT://127.0.0.1:{net.client_real},BROKER://127.0.0.1:{net.inter_real}")
    assert broker["advertised.listeners"] == (f"PLAINTEXT://127.0.0.1:{s.broker_port(2)},"
                                              f"CLIENT://127.0.0.1:{net.client},BROKER://127.0.0.1:{net.inter}")
    assert broker["inter.broker.listener.name"] == "BROKER" and "zookeeper.connect" not in broker
    assert broker["controller.quorum.bootstrap.servers"] == s.bootstrap_controllers
    targets = {(p.listen, p.target, p.upstream_port) for p in proxy_ports(s)}
    assert (voter, "controller-2", behind.real) in targets
    assert (net.client, "broker-2", net.client_real) in targets
    assert not any(p.target == "zookeeper" for p in proxy_ports(s))
    assert ClusterNet(s).nodes == ["controller-1", "controller-2", "controller-3", "broker-1", "broker-2", "broker-3"]


def test_combined_voters_are_brokers_with_controller_listeners_behind_the_proxy(tmp_path: Path) -> None:
    s = spec(tmp_path, mode="kraft", controllers=3, combined=True)
    settings = s.broker_settings(2)
    behind = s.controller_net(2)
    assert settings["listeners"].endswith(f",CONTROLLER://127.0.0.1:{behind.real},"
                                          f"CONTROLLER_DIRECT://127.0.0.1:{behind.direct}")
    assert f"CONTROLLER://127.0.0.1:{s.controller_port(2)}" in settings["advertised.listeners"]
    net = ClusterNet(s)
    assert net.nodes == ["broker-1", "broker-2", "broker-3"]
    assert net.resolve(("controller", "2")) == net.resolve(("controller-2",)) == ["broker-2"]
    assert (s.controller_port(2), "broker-2", behind.real) in {(p.listen, p.target, p.upstream_port)
                                                               for p in proxy_ports(s)}


def test_free_ports_pick_every_kraft_proxy_port_apart(tmp_path: Path) -> None:
    s = spec(tmp_path, mode="kraft", controllers=3)
    pick_free_ports(s)
    ports = spec_ports(s)
    assert len(ports) == 3 + 3 + 3 * 4 + 3 * 2 and len(set(ports)) == len(ports)
    assert not set(ports) & {9092, 9192, 9292, 9093, 9193, 9293}


def test_in_kraft_an_isolated_broker_is_cut_from_the_voters_and_the_brokers(tmp_path: Path) -> None:
    net = ClusterNet(spec(tmp_path, mode="kraft", controllers=3))
    rules = set(net.rules(NetRequest(NetAction.ISOLATE), net.resolve(("broker", "1"))))
    # a dedicated controller never calls a broker: no rule for a link that does not exist
    assert rules == {Cut(Link("broker-1", f"controller-{c}")) for c in (1, 2, 3)} | {
        Cut(Link("broker-1", "broker-2")), Cut(Link("broker-2", "broker-1")),
        Cut(Link("broker-1", "broker-3")), Cut(Link("broker-3", "broker-1"))}


def test_controller_is_the_active_one_at_the_moment_and_isolating_it_cuts_the_voters_and_brokers(
        tmp_path: Path) -> None:
    leader: list[int | None] = [102]
    net = ClusterNet(spec(tmp_path, mode="kraft", controllers=3), lambda: leader[0])
    assert net.resolve(("controller",)) == ["controller-2"]
    assert net.resolve(("controller", "3", "controller-1")) == ["controller-3", "controller-1"]
    rules = set(net.rules(NetRequest(NetAction.ISOLATE), net.resolve(("controller",))))
    assert rules == {Cut(Link("controller-2", "controller-1")), Cut(Link("controller-1", "controller-2")),
                     Cut(Link("controller-2", "controller-3")), Cut(Link("controller-3", "controller-2")),
                     *(Cut(Link(f"broker-{b}", "controller-2")) for b in (1, 2, 3))}
    leader[0] = 103  # resolved when asked: the next request names the new leader
    assert net.resolve(("controller",)) == ["controller-3"]
    leader[0] = None
    with pytest.raises(KafkalabError, match="no active controller is known right now"):
        net.resolve(("controller",))


@pytest.mark.parametrize(("kwargs", "words", "says"), [
    ({"mode": "kraft"}, ("controller-1", "broker", "1"), "controller-1 opens no connection to broker-1"),
    ({"mode": "kraft"}, ("controller", "4"), "unknown node 'controller-4'"),
    ({"mode": "kraft"}, ("zookeeper", "broker", "1"), "unknown node 'zookeeper'"),
    ({}, ("controller", "broker", "1"), "`controller` names a KRaft voter"),
])
def test_bad_kraft_links_are_refused_in_one_line(tmp_path: Path, kwargs: dict[str, object], words: tuple[str, ...],
                                                 says: str) -> None:
    net = ClusterNet(spec(tmp_path, **kwargs), lambda: 101)
    with pytest.raises(KafkalabError, match=says) as caught:
        net.rules(NetRequest(NetAction.CUT, words), net.resolve(words))
    assert "\n" not in str(caught.value)


def test_free_ports_pick_every_proxy_port_apart(tmp_path: Path) -> None:
    s = spec(tmp_path)
    pick_free_ports(s)
    ports = spec_ports(s)
    assert len(ports) == 1 + 3 + 1 + 3 * 4 and len(set(ports)) == len(ports)
    assert not set(ports) & {9092, 9192, 9292, 2181, 2191}


@pytest.mark.parametrize(("text", "ms"), [("200ms", 200), ("200", 200), ("1.5s", 1500), ("2s", 2000)])
def test_delays_parse(text: str, ms: int) -> None:
    assert parse_ms(text) == ms


@pytest.mark.parametrize("text", ["fast", "0ms", "-5", "1.5ms", "10 minutes"])
def test_a_delay_that_does_not_parse_is_refused(text: str) -> None:
    with pytest.raises(KafkalabError, match="does not parse"):
        parse_ms(text)


@pytest.mark.parametrize(("text", "rate"), [("100KB/s", 100_000), ("1MiB/s", 2**20), ("5000", 5000)])
def test_rates_parse(text: str, rate: int) -> None:
    assert parse_rate(text) == rate


def test_isolate_cuts_every_other_node_both_ways_and_keeps_clients(tmp_path: Path) -> None:
    net = ClusterNet(spec(tmp_path))
    rules = set(net.rules(NetRequest(NetAction.ISOLATE), net.resolve(("broker", "1"))))
    assert rules == {Cut(Link("broker-1", "zookeeper")), Cut(Link("broker-1", "broker-2")),
                     Cut(Link("broker-2", "broker-1")), Cut(Link("broker-1", "broker-3")),
                     Cut(Link("broker-3", "broker-1"))}
    assert set(isolation("zookeeper", net.nodes, net.spec)) == {Cut(Link(f"broker-{b}", "zookeeper"))
                                                                for b in (1, 2, 3)}


def test_links_rules(tmp_path: Path) -> None:
    net = ClusterNet(spec(tmp_path))
    link = net.resolve(("clients", "broker-1"))
    assert net.rules(NetRequest(NetAction.DROP_REPLIES), link) == [Drop(Link("clients", "broker-1"),
                                                                        Direction.REPLIES)]
    delay = NetRequest(NetAction.DELAY, ms=200, jitter_ms=50, direction=Direction.REQUESTS)
    assert net.rules(delay, net.resolve(("2", "broker", "1"))) == [
        Delay(Link("broker-2", "broker-1"), Direction.REQUESTS, 200, 50)]
    assert net.rules(NetRequest(NetAction.LIMIT, bytes_per_s=1000), link) == [
        Limit(Link("clients", "broker-1"), Direction.BOTH, 1000)]
    assert net.rules(NetRequest(NetAction.CUT, both_ways=True), net.resolve(("broker", "2", "broker", "3"))) == [
        Cut(Link("broker-2", "broker-3")), Cut(Link("broker-3", "broker-2"))]


def test_hold_keeps_one_direction_of_a_link_or_both(tmp_path: Path) -> None:
    net = ClusterNet(spec(tmp_path))
    held = NetRequest(NetAction.HOLD, direction=Direction.REQUESTS)
    assert net.rules(held, net.resolve(("clients", "broker", "1"))) == [Hold(Link("clients", "broker-1"),
                                                                             Direction.REQUESTS)]
    assert net.rules(NetRequest(NetAction.HOLD), net.resolve(("broker-2", "zookeeper"))) == [
        Hold(Link("broker-2", "zookeeper"), Direction.BOTH)]
    request = net_request(args_of("hold", "clients", "broker", "1", "--direction", "replies"))
    assert (request.action, request.words, request.direction) == (NetAction.HOLD, ("clients", "broker", "1"),
                                                                  Direction.REPLIES)
    assert NetRequest.from_json(request.to_json()) == request


@pytest.mark.parametrize(("action", "words", "says"), [
    (NetAction.ISOLATE, ("broker", "7"), "unknown node '7'"),
    (NetAction.ISOLATE, ("clients",), "isolate takes one node"),
    (NetAction.CUT, ("broker", "1"), "cut takes a link"),
    (NetAction.CUT, ("broker", "1", "clients"), "clients are only a source"),
    (NetAction.CUT, ("broker", "1", "broker", "1"), "is no link"),
    (NetAction.CUT, ("zookeeper", "broker", "1"), "ZooKeeper opens no connection"),
    (NetAction.CUT, ("controller-1", "broker", "1"), "unknown node"),
    (NetAction.CUT, ("broker",), "needs its id"),
    (NetAction.HOLD, ("broker", "1"), "hold takes a link: SOURCE TARGET"),
    (NetAction.HOLD, ("broker", "1", "clients"), "clients are only a source"),
    (NetAction.HOLD, ("zookeeper", "broker", "2"), "ZooKeeper opens no connection"),
    (NetAction.HOLD, ("clients", "zookeeper"), "clients do not reach ZooKeeper"),
])
def test_bad_links_are_refused_in_one_line(tmp_path: Path, action: NetAction, words: tuple[str, ...],
                                           says: str) -> None:
    net = ClusterNet(spec(tmp_path))
    with pytest.raises(KafkalabError, match=says) as caught:
        net.rules(NetRequest(action, words), net.resolve(words))
    assert "\n" not in str(caught.value)


def with_clients(tmp_path: Path, *names: str) -> ClusterNet:
    """A ClusterNet (no proxy process) told of the run's clients ``names``, as a lab run tells it."""
    net = ClusterNet(spec(tmp_path))
    for name in names:
        net.client_started(name, os.getpid())
    return net


def test_the_run_s_clients_are_sources_by_name(tmp_path: Path) -> None:
    net = with_clients(tmp_path, "producer", "consumer-1", "consumer-2")
    assert net.resolve(("producer", "broker", "2")) == ["producer", "broker-2"]
    assert net.resolve(("consumer", "2")) == net.resolve(("consumer-2",)) == ["consumer-2"]
    assert net.rules(NetRequest(NetAction.CUT), net.resolve(("producer", "broker", "1"))) == [
        Cut(Link("producer", "broker-1"))]
    assert net.rules(NetRequest(NetAction.HOLD, direction=Direction.REPLIES),
                     net.resolve(("consumer", "1", "broker", "3"))) == [Hold(Link("consumer-1", "broker-3"),
                                                                           Direction.REPLIES)]
    assert net.named_clients.keys() == {"producer", "consumer-1", "consumer-2"}
    assert "producer" not in net.nodes and all(not n.startswith("consumer") for n in net.nodes)


@pytest.mark.parametrize(("action", "words", "says"), [
    (NetAction.CUT, ("consumer", "3", "broker", "1"), "no client 'consumer-3' in this run (clients known by name: "
                                                      "consumer-1, producer)"),
    (NetAction.CUT, ("broker", "1", "producer"), "producer is only a source"),
    (NetAction.HOLD, ("broker", "1", "consumer-1"), "consumer-1 is only a source"),
    (NetAction.ISOLATE, ("producer",), "isolate takes one node"),
    (NetAction.CUT, ("consumer-1", "zookeeper"), "consumer-1 does not reach ZooKeeper"),
    (NetAction.CUT, ("consumer", "broker", "1"), "`consumer` needs its number"),
])
def test_named_clients_are_refused_in_one_line_where_they_cannot_be(tmp_path: Path, action: NetAction,
                                                                     words: tuple[str, ...], says: str) -> None:
    net = with_clients(tmp_path, "producer", "consumer-1")
    with pytest.raises(KafkalabError, match="^" + re.escape(says)) as caught:
        net.rules(NetRequest(action, words), net.resolve(words))
    assert "\n" not in str(caught.value)


def test_a_run_without_clients_named_refuses_them_and_a_client_takes_no_node_s_name(tmp_path: Path) -> None:
    net = ClusterNet(spec(tmp_path))
    with pytest.raises(KafkalabError, match=r"no client 'producer' in this run .*none: a lab run names its producer"):
        net.resolve(("producer", "broker", "1"))
    with pytest.raises(KafkalabError, match="a client is named producer or consumer-K, not 'broker-1'"):
        net.client_started("broker-1", os.getpid())
    assert net.named_clients == {}


def test_status_lists_the_named_clients_apart_from_the_nodes(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    status = ProxyStatus(pid=7, targets=(TargetStatus("broker-1", True, (1,)), TargetStatus("zookeeper", False, (2,))),
                         nodes={"broker-1": 11}, links=(), clients={"producer": os.getpid(), "consumer-1": gone.pid})
    lines = status_lines(status, [])
    assert lines[1] == "down (refusing connections): broker-1"
    assert lines[2] == f"clients known by name: consumer-1 (pid {gone.pid}, ended), producer (pid {os.getpid()})"


def args_of(*argv: str) -> argparse.Namespace:
    from kafkalab.cli import build_parser

    return build_parser().parse_args(["net", *argv])


def test_the_command_line_parses_amounts_before_asking_the_owner() -> None:
    request = net_request(args_of("delay", "broker", "2", "broker", "1", "200ms", "--jitter", "50ms"))
    assert (request.action, request.words, request.ms, request.jitter_ms) == (
        NetAction.DELAY, ("broker", "2", "broker", "1"), 200, 50)
    assert NetRequest.from_json(request.to_json()) == request


@pytest.mark.parametrize(("argv", "says"), [
    (("delay", "broker", "2", "broker", "1", "fast"), "a delay 'fast' does not parse"),
    (("delay", "broker", "2", "broker", "1", "20ms", "--jitter", "50ms"), "more than the 20 ms delay"),
    (("limit", "broker", "2", "broker", "1", "lots"), "a bandwidth 'lots' does not parse"),
    (("cut", "broker", "2", "broker", "1", "--jitter", "5ms"), "--jitter goes with delay"),
    (("isolate", "broker", "2", "--both-ways"), "--both-ways goes with cut"),
    (("status", "broker", "1"), "status takes no node"),
    (("hold", "clients", "broker", "1", "--jitter", "5ms"), "--jitter goes with delay"),
    (("hold", "clients", "broker", "1", "--both-ways"), "--both-ways goes with cut"),
    (("cut", "clients", "broker", "1", "--direction", "requests"), "--direction goes with hold, delay and limit"),
])
def test_bad_input_exits_2_in_one_line_before_any_cluster_is_asked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], says: str) -> None:
    assert main(["net", *argv, "--state-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_no_cluster_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["net", "isolate", "broker", "1", "--state-dir", str(tmp_path)]) == 2
    assert "no kafkalab owns a cluster" in capsys.readouterr().err


def test_a_lab_file_says_net_proxies_or_leaves_it_to_the_default(tmp_path: Path) -> None:
    shipped = (Path(__file__).parent.parent / "labs" / "01-setup-check.toml").read_text()
    path = tmp_path / "01-setup-check.toml"
    path.write_text(shipped)
    assert load_lab(path).cluster.net_proxies is None  # unsaid: the cluster's default
    for said in (True, False):
        path.write_text(shipped.replace("[cluster]\n", f"[cluster]\nnet_proxies = {str(said).lower()}\n", 1))
        assert load_lab(path).cluster.net_proxies is said  # in either mode: KRaft is wired too
    path.write_text(shipped.replace("[cluster]\n", "[cluster]\nnet_proxies = \"yes\"\n", 1))
    with pytest.raises(KafkalabError, match=r"net_proxies.*must be"):
        load_lab(path)


def test_a_jvm_s_dual_stack_address_is_its_ipv4_one() -> None:
    from kafkalab.netfaults.sources import plain

    assert plain("::ffff:127.0.0.1") == "127.0.0.1" and plain("127.0.0.1") == "127.0.0.1" and plain("::1") == "::1"
