"""The audit brings back only the nodes a read of the topic needs, and puts them back down after (fakes:
tests/lab_fakes.py, whose leaders are the first running replica). On a real cluster:
tests/test_audit_keeps_state.py."""

from __future__ import annotations

from pathlib import Path

from kafkalab.cluster import EndCause, NodeState
from kafkalab.errors import KafkalabError
from kafkalab.labs import load_lab
from kafkalab.labs.model import Lab
from tests.lab_fakes import World
from tests.test_labs_run import BASE, execute

TO_BROKER_3 = """
[[fault]]
at = "progress 20%"
do = "{action}"
on = "broker 3"
"""


def unreplicated_lab(lab_dir: Path, extra: str) -> Lab:
    """The fake lab with its topic on one replica per partition (partition 2 alone on broker 3), and ``extra``."""
    lab_dir.mkdir(parents=True, exist_ok=True)
    path = lab_dir / "fake.toml"
    topic = BASE.format(drain=30).replace("partitions = 3\n", "partitions = 3\nreplication_factor = 1\n", 1)
    path.write_text(topic + extra + '\n[expect]\n"producer.acked" = "== 1000"\n')
    return load_lab(path)


def test_a_stopped_broker_a_partition_needs_is_brought_back_for_the_read_then_stopped_again(tmp_path: Path) -> None:
    world, said, states_at_read = World(), list[str](), list[NodeState]()
    world.during_audit = lambda _nth: states_at_read.append(world.cluster.node("broker-3").state)  # type: ignore[union-attr]
    _run, result = execute(tmp_path, unreplicated_lab(tmp_path, TO_BROKER_3.format(action="stop")), world, said)
    assert result.passed, result.failures
    assert states_at_read == [NodeState.RUNNING]  # read while it ran
    assert [a[:2] for a in world.actions] == [("stop", "broker-3"), ("start", "broker-3"), ("stop", "broker-3")]
    assert world.cluster is not None
    broker = world.cluster.node("broker-3")
    assert (broker.state, broker.cause) == (NodeState.STOPPED, EndCause.AUDIT)
    assert any("bringing broker-3 back for the audit" in m for m in said)


def test_a_paused_broker_is_paused_again_and_a_killed_one_stopped_by_the_audit(tmp_path: Path) -> None:
    world = World()
    execute(tmp_path / "paused", unreplicated_lab(tmp_path / "paused", TO_BROKER_3.format(action="pause")), world)
    assert [a[:2] for a in world.actions] == [("pause", "broker-3"), ("resume", "broker-3"), ("pause", "broker-3")]
    world = World()
    execute(tmp_path / "killed", unreplicated_lab(tmp_path / "killed", TO_BROKER_3.format(action="kill")), world)
    assert world.cluster is not None
    broker = world.cluster.node("broker-3")
    assert (broker.state, broker.cause) == (NodeState.STOPPED, EndCause.AUDIT)  # grey, said to be the audit's


def test_a_failed_read_still_puts_the_brought_back_broker_down(tmp_path: Path) -> None:
    world = World()

    def fail(_nth: int) -> None:
        raise KafkalabError("cannot read partition 2 of test-topic")

    world.during_audit = fail
    _run, result = execute(tmp_path, unreplicated_lab(tmp_path, TO_BROKER_3.format(action="stop")), world)
    assert "cannot read partition 2" in (result.error or "")
    assert world.cluster is not None
    assert world.cluster.node("broker-3").cause == EndCause.AUDIT


def test_a_broker_the_lab_never_started_is_never_started_by_the_audit(tmp_path: Path) -> None:
    """KRaft: a held-back broker never registered; started, it would stay registered with the quorum."""
    world = World()
    lab = unreplicated_lab(tmp_path, '[cluster]\nmode = "kraft"\nstopped = [3]\n')
    execute(tmp_path, lab, world)
    assert world.cluster is not None
    broker = world.cluster.node("broker-3")
    assert (broker.state, broker.cause) == (NodeState.STOPPED, EndCause.NOT_STARTED)
    assert world.actions == []
