"""Interrupts and what the files say (issue 33, items 0-3 and 15), on fakes: a listener's error, an exception
escaping a run, signals in the wait loop, a stop during the cluster's start and during the analysis, a stopped
run's consumers, a killed broker's last line, and a client child whose parent dies.

The same, on a real cluster through the real command: tests/test_interrupts_cluster.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kafkalab.analysis.report import Report
from kafkalab.clients.stats import ClientState
from kafkalab.cluster import EndCause, NodeState
from kafkalab.errors import KafkalabError
from kafkalab.labs import LabSession, Phase
from kafkalab.labs.events import EventKind
from kafkalab.labs.results import RunMessage, SessionEvent
from kafkalab.labs.run import LabRun
from kafkalab.labs.session import Interrupted
from tests.lab_fakes import World, clean_report
from tests.test_labs_run import lab_of

BOUND_S = 10.0  # a test that would hang on the old code fails after this instead


def wait_for(condition: Any, bound_s: float = BOUND_S) -> None:
    deadline = time.monotonic() + bound_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def saved(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "result.json").read_text())
    return data


# ---- item 0: a listener's error, an exception in a run, a dead thread ---------------------------------
def test_a_listener_raising_system_exit_does_not_end_the_run(tmp_path: Path) -> None:
    """Rich raises SystemExit(1) when stdout's reader is gone (`| head`): the run goes on to its result."""
    world = World()
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", seed=5, deps=world.deps())

    def closed_stdout(event: SessionEvent) -> None:
        if isinstance(event, RunMessage):
            raise SystemExit(1)

    session.add_listener(closed_stdout)
    session.start_run()
    result = session.wait(BOUND_S)
    assert result is not None and result.outcome == "passed"
    assert saved(result.run_dir)["outcome"] == "passed"


def test_any_exception_in_a_run_ends_it_with_an_error_result_saying_what(tmp_path: Path) -> None:
    def analysis_exits(_dir: Path, _audits: list[Path], _leaders: object) -> Report:
        raise SystemExit("the analysis called exit")

    world = World()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run = LabRun(lab_of(tmp_path, ""), run_dir, replace(world.deps(), analyze=analysis_exits), seed=3)
    thread = threading.Thread(target=run.execute, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive()
    assert saved(run_dir)["outcome"] == "error"
    assert saved(run_dir)["error"] == "SystemExit: the analysis called exit"
    assert (run_dir / "timeline.json").exists()
    assert world.cluster is not None and world.cluster.shut_down


def test_a_run_whose_thread_ends_without_a_result_is_reported_not_waited_for(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The old wait loop spun at 100 % CPU for good once the thread was gone without a result."""
    def cannot_write(_self: LabRun, _result: object, _duration_s: float) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(LabRun, "_finish", cannot_write)
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", seed=5, deps=World().deps())
    raised: list[BaseException] = []

    def run() -> None:
        try:
            session.run()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive(), "LabSession.run waits for good on a dead run thread"
    assert isinstance(raised[0], KafkalabError) and "No space left on device" in str(raised[0])


# ---- signals in the wait loop (SIGTERM, SIGHUP as Ctrl-C) ------------------------------------------------
@pytest.fixture
def hup_guard() -> Iterator[list[int]]:
    """SIGHUP's default ends pytest: a handler that only notes it, for a session that does not take it."""
    noted: list[int] = []
    previous = signal.signal(signal.SIGHUP, lambda signum, _frame: noted.append(signum))
    yield noted
    signal.signal(signal.SIGHUP, previous)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_run_its_files_written(tmp_path: Path, signum: int, hup_guard: list[int]) -> None:
    world = World()
    world.stuck = True  # the producer never finishes: only the signal ends the run
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", seed=5, deps=world.deps())

    def send() -> None:
        wait_for(lambda: session.state().phase == Phase.RUNNING)
        os.kill(os.getpid(), signum)
        time.sleep(BOUND_S)
        session.stop_run(timeout=0)  # the old code ignored SIGHUP: end the run so the test fails, not hangs

    threading.Thread(target=send, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(Interrupted) as stop:
        session.run()
    assert time.monotonic() - started < BOUND_S
    assert stop.value.signum == signum and not hup_guard
    assert stop.value.result is not None
    run_dir = stop.value.result.run_dir
    assert saved(run_dir)["outcome"] == "stopped"
    assert (run_dir / "timeline.json").exists()
    assert signal.getsignal(signal.SIGHUP) is not signal.SIG_DFL  # the handler before the run is back


# ---- item 2: a stop during the cluster's start -------------------------------------------------------------
def test_a_stop_during_the_cluster_start_acts_at_once_and_starts_no_client(tmp_path: Path) -> None:
    world = World()
    world.start_s = 30.0  # the old run waited for the whole start, then started its clients
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", seed=5, deps=world.deps())
    session.start_run()
    wait_for(lambda: world.cluster is not None)
    time.sleep(0.2)
    stopped_at = time.monotonic()
    session.stop_run(timeout=BOUND_S)
    assert time.monotonic() - stopped_at < 2.0
    result = session.result
    assert result is not None and result.outcome == "stopped"
    assert "starting" in saved(result.run_dir)["error"]
    assert world.consumers == [] and world.producer is None
    assert world.cluster is not None and world.cluster.shut_down


# ---- a stopped run's consumers close; a killed broker's last line --------------------------------------------
def test_a_stopped_runs_consumers_are_ended_not_closed_nor_reported_crashed(tmp_path: Path) -> None:
    world = World()
    world.stuck = True
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", seed=5, deps=world.deps())
    session.start_run()
    wait_for(lambda: session.state().phase == Phase.RUNNING)
    session.stop_run(timeout=BOUND_S)
    # ended at once (their logs written, no leave-group to wait for), not asked for a clean close
    assert world.consumers and all((c.end_calls, c.stop_calls) == (1, 0) for c in world.consumers)
    assert all(c.stats().state == ClientState.FINISHED for c in world.consumers)


class ListenedCluster:
    """Just enough of a cluster for a run's node listener."""

    def __init__(self) -> None:
        self.listeners: list[Any] = []
        self.net = None  # no network-fault proxy

    def add_listener(self, listener: Any) -> None:
        self.listeners.append(listener)


class NamedNode:
    silence_note = "silent past its 3 s ZooKeeper session, the controller moves its leaderships"

    def __init__(self, name: str) -> None:
        self.name = name
        self.cause: EndCause | None = None  # why it is down, as a real node keeps it


def test_a_killed_brokers_last_line_says_the_kill_ended_it_not_the_runs_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run = LabRun(lab_of(tmp_path, ""), run_dir, World().deps(), seed=3)
    cluster = ListenedCluster()
    run._listen(cluster)  # type: ignore[arg-type]
    record = cluster.listeners[0]
    broker_1, broker_2 = NamedNode("broker-1"), NamedNode("broker-2")
    for node in (broker_1, broker_2):
        record(node, NodeState.RUNNING, "ready")
    broker_1.cause = EndCause.KILLED
    record(broker_1, NodeState.KILLED, "SIGKILL sent")
    broker_1.cause = broker_2.cause = EndCause.ENDED
    record(broker_1, NodeState.STOPPED, "run ended")
    record(broker_2, NodeState.STOPPED, "run ended")
    lines = [e.detail for e in run.timeline.events(EventKind.NODE)]
    assert lines[-3] == f"broker-1 killed: SIGKILL sent; {NamedNode.silence_note}"  # how the mode notices it
    assert lines[-2] == "broker-1 stopped: it was already down (killed earlier); run ended"
    assert lines[-1] == "broker-2 stopped: run ended"  # the run's end did end this one


# ---- item 1: a stop during the analysis ------------------------------------------------------------------
class CancellableSpark:
    """A warm session whose analysis job runs until cancelled."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def cancel_analysis(self) -> None:
        self.cancelled.set()

    def stop(self) -> None:
        """Nothing to stop: no JVM behind it."""


def test_a_stop_during_the_analysis_cancels_it_and_no_file_says_passed(tmp_path: Path) -> None:
    spark = CancellableSpark()
    finished = threading.Event()

    def slow_analysis(run_dir: Path, _audits: list[Path], _leaders: object) -> Report:
        spark.cancelled.wait(5.0)  # a Spark job: ends when cancelled, else after its work
        (run_dir / "report.json").write_text("{}\n")  # as the real analysis: written once the job returns
        finished.set()
        return clean_report("nothing lost")

    world = World()
    session = LabSession(lab_of(tmp_path, ""), tmp_path / "runs", seed=5, spark=spark,
                         deps=replace(world.deps(), analyze=slow_analysis))
    session.start_run()
    wait_for(lambda: session.state().phase == Phase.ANALYZING)
    time.sleep(0.1)
    stopped_at = time.monotonic()
    session.stop_run(timeout=BOUND_S)
    assert time.monotonic() - stopped_at < 2.0
    assert spark.cancelled.is_set()
    result = session.result
    assert result is not None and result.outcome == "stopped" and not result.expectations
    assert saved(result.run_dir)["outcome"] == "stopped"
    assert "analyzing" in saved(result.run_dir)["error"]
    finished.wait(BOUND_S)
    assert not (result.run_dir / "report.json").exists()


# ---- the command's output gone -------------------------------------------------------------------------
def test_a_command_whose_reader_stopped_ends_quietly() -> None:
    """`kafkalab labs --json | true` (a reader gone before the first write): no BrokenPipeError traceback."""
    proc = subprocess.run(f"{sys.executable} -m kafkalab labs --json | true", shell=True, capture_output=True,
                          text=True, timeout=60)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


# ---- item 3: a client child whose parent dies ------------------------------------------------------------
DEAF_CHILD = textwrap.dedent("""
    import sys, time
    from kafkalab.clients.child_io import serve
    from kafkalab.clients.stats import ClientState

    class Deaf:  # a loop whose close never returns, as librdkafka's with the cluster gone
        state = ClientState.RUNNING
        def run(self):
            while True:
                time.sleep(1)
        def report_stats(self):
            pass
        def fail(self, exc):
            pass

    sys.exit(serve(lambda spec, sink: Deaf(), {"stop": lambda loop: None}, orphaned="stop", stats_every=1.0))
""")
PARENT = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.PIPE, text=True,
                             stdout=subprocess.DEVNULL, pass_fds=())
    child.stdin.write("{}\\n")
    child.stdin.flush()
    print(child.pid, flush=True)
    time.sleep(60)
""")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie (reaped by init soon) counts as gone
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("stdin_held", [False, True])
def test_a_client_child_ends_within_seconds_of_its_parents_kill_9(tmp_path: Path, stdin_held: bool) -> None:
    """stdin_held: another process keeps the pipe's write end open, so only the parent-pid watch sees it."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    parent_src = PARENT.replace("pass_fds=()", "close_fds=False") if stdin_held else PARENT
    if stdin_held:  # the parent forks a sleeper that inherits the child's stdin pipe and outlives the parent
        parent_src = parent_src.replace("print(child.pid, flush=True)",
                                        "holder = subprocess.Popen(['sleep', '30'], close_fds=False, "
                                        "pass_fds=(child.stdin.fileno(),))\nprint(child.pid, flush=True)")
    parent = subprocess.Popen([sys.executable, "-c", parent_src, DEAF_CHILD], stdout=subprocess.PIPE, text=True,
                              env=env, start_new_session=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    time.sleep(1.0)  # the child is serving
    assert alive(child)
    parent.kill()
    parent.wait()
    killed_at = time.monotonic()
    try:
        wait_for(lambda: not alive(child), bound_s=8.0)
        assert time.monotonic() - killed_at < 4.0
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):  # the pipe's holder, started in the parent's group
            os.killpg(parent.pid, signal.SIGKILL)
