"""Free ports come from below the kernel's ephemeral range, where no ``bind(0)`` can take them first."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kafkalab.cluster import ports
from kafkalab.cluster.ports import ephemeral_range, free_port
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.labs import find_lab, load_lab
from kafkalab.labs.run import PortChoice


def test_free_ports_are_outside_the_ephemeral_range_and_bindable() -> None:
    low, high = ephemeral_range()
    ports = {free_port() for _ in range(50)}
    assert len(ports) > 40  # picked at random, not one port again and again
    for port in ports:
        assert not low <= port <= high, (port, low, high)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports.pop()))


def test_a_port_the_kernel_gives_to_bind_0_is_never_a_free_port_pick() -> None:
    """The CI failure: Spark's accumulator server bound port 0 and got the port a broker was to take."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        kernels = taken.getsockname()[1]
        assert all(free_port() != kernels for _ in range(200))


def test_free_ports_are_distinct_even_when_a_pick_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    picks = iter([20001, 20001, 20002, 20001, 20003, 20004])
    monkeypatch.setattr(ports, "free_port", lambda: next(picks))
    assert ports.free_ports(4) == [20001, 20002, 20003, 20004]


def test_a_runs_ports_and_a_clusters_ports_come_from_one_helper(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """`PortChoice.picked` (lab runs) and `pick_free_ports` (cluster up, console) both pick with ``free_ports``:
    one rule for N distinct free ports, not two copies of the loop."""
    asked: list[int] = []

    def fake(count: int) -> list[int]:
        asked.append(count)
        return list(range(21000, 21000 + count))

    monkeypatch.setattr(ports, "free_ports", fake)
    kraft = load_lab(find_lab("quorum-loss"))  # 3 brokers, 3 dedicated controllers
    choice = PortChoice.picked(kraft)
    assert (choice.zk_port, choice.broker_ports, choice.controller_ports) == (
        21000, (21001, 21002, 21003), (21004, 21005, 21006))
    zk = ClusterSpec(tmp_path / "zk", brokers=3, net_proxies=False)  # the proxies' ports: test_net_wiring
    ports.pick_free_ports(zk)
    assert (zk.zk_port, zk.broker_ports, zk.free_ports) == (21000, [21001, 21002, 21003], True)
    kraft_spec = ClusterSpec(tmp_path / "kraft", brokers=2, mode="kraft", controllers=3, net_proxies=False)
    ports.pick_free_ports(kraft_spec)
    assert (kraft_spec.broker_ports, kraft_spec.controller_ports) == ([21000, 21001], [21002, 21003, 21004])
    assert asked == [7, 4, 5]
