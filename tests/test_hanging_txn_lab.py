"""The hanging-transaction lab as a file (its faults, its fix and wrong fixes read as the grader reads them), the
`uncommitted` trigger, and the producer's pause, resume and crash: SIGSTOP and SIGCONT to a real process group,
as a hung producer is left and then killed."""

from __future__ import annotations

import contextlib
import random
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkalab.clients.child_client import ChildClient
from kafkalab.clients.stats import ClientState
from kafkalab.errors import KafkalabError
from kafkalab.labs import load_lab
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.faults import make_fault, parse_trigger
from kafkalab.labs.fix import ChangeKind, action_change
from kafkalab.labs.run_view import RunControls
from kafkalab.labs.timeline import Timeline

LAB = Path(__file__).resolve().parents[1] / "labs" / "33-hanging-transaction.toml"


def test_the_lab_hangs_its_transactional_producer_and_grades_what_the_consumer_read() -> None:
    lab = load_lab(LAB)
    assert lab.producer.config.transactional and lab.producer.config.transaction_timeout_ms == 60_000
    assert {c.config.isolation_level for c in lab.consumers} == {"read_committed"}
    assert [(f.action, f.target.text) for f in lab.faults] == [
        ("note", ""), ("pause", "producer"), ("type", "topic test-topic"), ("stop", "consumer 1"),
        ("crash", "producer")]
    assert lab.faults[1].at.text == "uncommitted 10"  # records of the open transaction on the brokers
    assert lab.fix is not None and not lab.fix.drop_faults  # graded under the same hang
    [solution] = lab.fix.solution
    assert (solution.name, solution.value) == ("producer.transaction-timeout", "10000")
    assert [[c.name for c in wrong] for wrong in lab.fix.wrong] == [["consumer.isolation-level"],
                                                                     ["consumer.session-timeout"]]
    assert lab.fix.allows(next(iter(lab.fix.solution)))
    assert [e.text for e in lab.expectations][:1] == ["typed == 0"]  # the other app's records never read
    assert {e.text for e in lab.fix.expectations} >= {"typed == 3", "unexpected == 0", "aborted_read == 0"}


class Child(ChildClient):
    """The producer as the run holds it: a real child process in a session of its own, which does nothing."""

    MODULE = "tests.idle_child"

    def __init__(self, tmp: Path) -> None:
        super().__init__("producer", tmp, None)
        self._spawn({}, background=True)

    @property
    def proc(self) -> subprocess.Popen[str]:
        assert self._proc is not None
        return self._proc


@contextlib.contextmanager
def child(tmp: Path) -> Iterator[Child]:
    c = Child(tmp)
    try:
        yield c
    finally:
        c.proc.kill()
        c.proc.wait()


def state_of(pid: int) -> str:
    """The process's state letter (T: stopped), from /proc."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def wait_state(pid: int, wanted: str) -> None:
    deadline = time.monotonic() + 10
    while state_of(pid) != wanted:
        assert time.monotonic() < deadline, f"process {pid} is {state_of(pid)}, not {wanted}"
        time.sleep(0.02)


def test_pause_resume_and_crash_faults_stop_continue_and_kill_the_producer_process(tmp_path: Path) -> None:
    lab = load_lab(LAB)
    pause, crash = lab.faults[1], lab.faults[4]
    resume = make_fault({"at": "start", "do": "resume", "on": "producer"}, brokers=3)
    with child(tmp_path) as producer:
        host = RunControls(SimpleNamespace(clients=SimpleNamespace(producer=producer)))  # type: ignore[arg-type]
        timeline = Timeline(lab.id)
        firing = FaultFiring(lab.faults, timeline, random.Random(1), [1, 2])
        for fault, state in ((pause, "T"), (resume, "S"), (pause, "T")):
            assert firing.fire(host, fault, []) == ["producer"]
            wait_state(producer.proc.pid, state)
            # what its pane shows: a stopped process reports nothing, so its last report's state is not it
            shown = producer._shown_state(ClientState.RUNNING)
            assert shown == (ClientState.PAUSED if state == "T" else ClientState.RUNNING)
        assert firing.fire(host, crash, []) == ["producer"]
        assert producer.proc.wait(10) == -9  # killed while paused: a crash word would wait for it to go on
        assert [e.detail for e in timeline.events()] == ["pause producer", "resume producer", "pause producer",
                                                         "crash producer"]


class Uncommitted:
    """A run's view as the ``uncommitted`` trigger reads it."""

    def __init__(self, held: int) -> None:
        self.held = held

    def producer_uncommitted(self) -> int:
        return self.held


def test_the_uncommitted_trigger_waits_for_records_of_the_open_transaction_on_the_brokers() -> None:
    trigger = load_lab(LAB).faults[1].at
    assert not trigger.due(Uncommitted(9), 0.0)  # type: ignore[arg-type]
    assert trigger.due(Uncommitted(10), 0.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape("'uncommitted 20 [by processor]'")):
        parse_trigger("uncommitted many")


def test_no_producer_running_is_a_failed_pause_that_says_so() -> None:
    host = RunControls(SimpleNamespace(clients=SimpleNamespace(producer=None)))  # type: ignore[arg-type]
    with pytest.raises(KafkalabError, match="the producer is not running: nothing to pause"):
        host.pause_producer(True)


def test_the_operator_s_abort_is_an_action_the_fix_allows() -> None:
    lab = load_lab(LAB)
    assert lab.fix is not None
    change = action_change("producer stalled -> abort-transaction topic test-topic", brokers=3)
    assert change.kind == ChangeKind.ACTION and lab.fix.allows(change)
    assert change.fault is not None and change.fault.partition is None
