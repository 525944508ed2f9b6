"""Lab runs with --free-ports pick every listener's port, the KRaft controllers' too (no default-port race)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.cli import lab_cmds, main
from kafkalab.cluster.spec import DEFAULT_CONTROLLER_PORTS
from kafkalab.labs import LabSession, find_lab, load_lab
from kafkalab.labs.run import PortChoice
from tests.lab_fakes import World
from tests.test_labs_run import lab_of


def test_picked_ports_cover_zookeeper_brokers_and_every_controller() -> None:
    kraft = load_lab(find_lab("quorum-loss"))  # 3 brokers, 3 dedicated controllers
    choice = PortChoice.picked(kraft)
    ports = [choice.zk_port, *choice.broker_ports, *choice.controller_ports]
    assert (len(choice.broker_ports), len(choice.controller_ports)) == (3, 3)
    assert len(set(ports)) == len(ports) == 7, "two listeners were given one port"
    assert not set(choice.controller_ports) & set(DEFAULT_CONTROLLER_PORTS)
    assert PortChoice.picked(load_lab(find_lab("leader-failover"))).controller_ports == (), "ZooKeeper mode"


def test_a_session_starts_its_kraft_cluster_on_the_chosen_controller_ports(tmp_path: Path) -> None:
    lab = lab_of(tmp_path, '[cluster]\nmode = "kraft"\ncontrollers = 3\n')
    choice = PortChoice.picked(lab)
    world = World()
    session = LabSession(lab, tmp_path / "runs", seed=1, deps=world.deps(), zk_port=choice.zk_port,
                         broker_ports=list(choice.broker_ports), controller_ports=list(choice.controller_ports))
    assert session.run().passed
    spec = world.cluster.spec
    assert spec.controller_ports == list(choice.controller_ports)
    assert spec.broker_ports == list(choice.broker_ports)


class _Picked(Exception):
    """Ends the command once the run's ports are known."""


def test_run_free_ports_hands_the_controller_ports_to_the_run(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    seen: list[PortChoice | None] = []

    def headless(*_args: object, ports: PortChoice | None = None, **_kwargs: object) -> None:
        seen.append(ports)
        raise _Picked

    monkeypatch.setattr(lab_cmds, "HeadlessRun", headless)
    with pytest.raises(_Picked):
        main(["run", "controller-failover", "--headless", "--free-ports", "--runs-dir", str(tmp_path)])
    (choice,) = seen
    assert choice is not None and len(choice.controller_ports) == 3
    assert not set(choice.controller_ports) & set(DEFAULT_CONTROLLER_PORTS)
