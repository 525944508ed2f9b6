"""LabSession: one lab's runs, driven by the console or headless; each run is a :class:`LabRun`.

    session = LabSession(lab, runs_root=Path("kafkalab-runs"))
    session.add_listener(print)          # SessionEvent: PhaseChanged / TimelineEvent / RunMessage / RunFinished
    session.start_run()                  # returns at once; the run goes on in a thread
    session.state()                      # a SessionState snapshot, safe to read from any thread
    result = session.wait()              # RunResult (expectations, metrics, report, paths)
    session.stop_run()                   # ends a run early: clients and nodes stopped, files kept
    session.reset()                      # ready for a fresh run (new run dir, fresh cluster state)

The session keeps what outlives runs: the lab (edited between runs), the listeners, the run's thread and
the warm Spark session. A run's files stay in ``runs_root/<lab>-<timestamp>/``: payload logs, audit.csv,
report.json, result.json, timeline.json, and cluster/ with each node's logs (the data dirs are removed).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Protocol

from kafkalab import kafka_install as kdist
from kafkalab.cluster import Cluster
from kafkalab.errors import KafkalabError
from kafkalab.labs.model import Lab
from kafkalab.labs.recording import RunRecorder
from kafkalab.labs.results import FaultStatus, Phase, PhaseChanged, RunMessage, RunResult, SessionEvent
from kafkalab.labs.reuse import why_fresh
from kafkalab.labs.run import LabRun, PortChoice, cluster_spec
from kafkalab.labs.run_deps import RunDeps, real_deps
from kafkalab.labs.session_state import SessionState
from kafkalab.paths import RUNS_DIR

# A lab run's Spark session starts beside its cluster and is needed as soon as the run ends: a light
# warm-up is done sooner (commit-too-late's report 17 s after its run against 20-25 s with 100k rows).
LAB_WARMUP_ROWS = 10_000
# ... and its cost is the JVM's start and first job, not rows: the client compiler only (C1, no C2) and no
# whole-stage code generation took the first job from 10.6 s to 6.4 s on 2 cores (later jobs: about the
# same, 1.7 s against 1.5 s). The console's session, warmed while idle for runs of any size, keeps both.
LAB_SPARK_CONF = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1", "spark.sql.codegen.wholeStage": "false"}

__all__ = ["Interrupted", "LabSession", "Phase", "RunResult", "SessionEvent", "SessionState"]


Listener = Callable[[SessionEvent], None]


class AnalysisSpark(Protocol):
    """The Spark a session's runs analyse on (a :class:`~kafkalab.analysis.WarmSession`; fakes in tests)."""

    def cancel_analysis(self) -> None:
        """End the analysis job running now, if any (a run stopped mid-analysis)."""

    def stop(self) -> None:
        """Stop the session once it is up."""

# what stops a run started by run(): Ctrl-C, a kill's default signal, and the terminal closing
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def signal_name(signum: int) -> str:
    """SIGINT as "Ctrl-C", the others by name (SIGHUP: the terminal closed)."""
    words = {signal.SIGINT: "Ctrl-C", signal.SIGHUP: "SIGHUP: the terminal closed"}
    return words.get(signal.Signals(signum), signal.Signals(signum).name)


class Interrupted(KeyboardInterrupt):
    """:meth:`LabSession.run` ended by a signal: the run was stopped and its files written (``result``: the
    stopped run's, None if its thread ended without one)."""

    def __init__(self, signum: int, result: RunResult | None) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum
        self.result = result


class LabSession:
    """Owns one lab's runs. Thread-safe for its public methods; listeners run in the session's threads."""

    def __init__(
        self,
        lab: Lab,
        runs_root: Path = RUNS_DIR,
        *,
        seed: int | None = None,
        distribution: kdist.Distribution | None = None,
        spark: AnalysisSpark | None = None,
        zk_port: int | None = None,
        broker_ports: list[int] | None = None,
        controller_ports: list[int] | None = None,
        free_ports: bool = True,
        deps: RunDeps | None = None,
        keep_cluster: bool = False,
    ) -> None:
        """``deps``: what runs build (fakes in tests); by default the real cluster, clients and Spark.

        ``keep_cluster``: a run's cluster stays up after it (the console: the instructor keeps exploring);
        the next run reuses it when it fits (:mod:`kafkalab.labs.reuse`), else ends it, as a reset or close do.
        """
        self.keep_cluster = keep_cluster
        self.lab = lab
        self.runs_root = Path(runs_root)
        self.seed = seed
        self._dist = distribution
        self._spark = spark  # started on the first run if None
        self._deps = deps
        self._ports = PortChoice(free_ports, zk_port, tuple(broker_ports or ()), tuple(controller_ports or ()))
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._run: LabRun | None = None
        self._recorder = RunRecorder(self)  # recording.jsonl in every run dir, for `kafkalab replay`
        self.add_listener(self._recorder.on_event)

    # ---- the current run, as the console reads it ------------------------------------------------
    @property
    def current(self) -> LabRun | None:
        """The run under way or last ended (None before the first and after reset)."""
        return self._run

    @property
    def cluster(self) -> Cluster | None:
        return self._run.cluster if self._run is not None else None

    @property
    def result(self) -> RunResult | None:
        return self._run.result if self._run is not None else None

    # ---- public API ------------------------------------------------------------------------------
    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start_run(self) -> Path:
        """Begin a run in a background thread; returns its directory."""
        with self._lock:
            if self.running:
                raise KafkalabError(f"lab {self.lab.id} is already running: stop it first")
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")[:-3]
            run_dir = (self.runs_root / f"{self.lab.id}-{stamp}").resolve()
            reuse, why = self._kept_for(run_dir)
            run_dir.mkdir(parents=True, exist_ok=False)
            self._run = run = LabRun(self.lab, run_dir, self._deps or self._real_deps(), seed=self.seed,
                                     ports=self._ports, emit=self._emit, keep_cluster=self.keep_cluster,
                                     reuse=reuse, cancel_analysis=self._cancel_analysis)
            run.cluster_note = (f"{why}: starting a fresh cluster" if why
                                else "reusing the running cluster" if reuse else "")
            self._thread = threading.Thread(target=self._execute, args=(run,), name=f"kafkalab-lab-{self.lab.id}",
                                            daemon=True)
            self._thread.start()
            return run_dir

    def _execute(self, run: LabRun) -> None:
        """The run's thread: whatever escapes the run (its result.json could not be written...) is kept as the
        run's ``crash``, for :meth:`run` to report, never a thread that ends without a word."""
        try:
            run.execute()
        except BaseException as exc:
            run.crash = exc

    def _cancel_analysis(self) -> None:
        """End the run's Spark job now (a stop during the analysis): the warm session's, when it has one."""
        if self._spark is not None:
            self._spark.cancel_analysis()

    def _real_deps(self) -> RunDeps:
        if self._spark is None:
            from kafkalab.analysis import WarmSession

            self._spark = WarmSession(warmup_rows=LAB_WARMUP_ROWS, warmup_shapes=(self.lab.audit,),
                                      extra_conf=LAB_SPARK_CONF, log_path=self.runs_root / "spark.log").start()
        return real_deps(self._dist, self._spark, self.lab.cluster.kafka_version)

    def _kept_for(self, run_dir: Path) -> tuple[Cluster | None, str]:
        """The cluster the last run kept, when it fits the next run (see :mod:`kafkalab.labs.reuse`); else
        it is ended and the second value says why a fresh one starts ("" when no cluster was kept)."""
        last = self._run
        if last is None or not last.keep_cluster or last.cluster_ended or last.cluster is None:
            return None, ""
        why = why_fresh(last.cluster, self.lab, cluster_spec(self.lab, run_dir, self._ports))
        if not why:
            return last.hand_over(), ""
        self._end_kept_cluster(f"{why}: the next run starts a fresh cluster")
        return None, why

    def _end_kept_cluster(self, reason: str) -> None:
        if self._run is not None and self._run.keep_cluster:
            self._run.end_cluster(reason)

    def wait(self, timeout: float | None = None) -> RunResult | None:
        """The result once the run ended (None if still running after ``timeout``)."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return None
        return self.result

    def run(self, on_tick: Callable[[], None] = lambda: None, tick_s: float = 0.2,
            on_stop: Callable[[], None] = lambda: None) -> RunResult:
        """start_run + wait, calling ``on_tick`` every ``tick_s`` (a progress line). Ctrl-C (SIGINT), SIGTERM or
        SIGHUP (the terminal closed) stops the run cleanly, its files written, then :class:`Interrupted` is
        raised; ``on_stop`` is called as the stop begins (the headless runner ends its Spark JVM meanwhile). A run
        whose thread ended without a result raises KafkalabError saying why."""
        signals: list[int] = []
        previous = {}
        if threading.current_thread() is threading.main_thread():
            def on_signal(signum: int, _frame: object) -> None:
                signals.append(signum)  # acted on by the loop below, within a tick: no work in a handler

            previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
        self.start_run()
        stopping = False
        try:
            while (result := self.wait(tick_s)) is None:
                if not self.running:  # the thread ended without a result: say so, do not wait for good
                    break
                if signals and not stopping:
                    stopping = True
                    self._emit(RunMessage(f"stopping ({signal_name(signals[0])}): ending the clients and the "
                                          "cluster, keeping the run's files"))
                    self.stop_run(timeout=0)
                    on_stop()
                on_tick()
        except KeyboardInterrupt:  # a handler installed meanwhile (Spark's) raises instead
            signals.append(signal.SIGINT)
            self.stop_run()
            result = self.result
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if signals:
            raise Interrupted(signals[0], result)
        if result is None:
            crash = self._run.crash if self._run is not None else None
            raise KafkalabError(f"the run ended without a result ({crash!r}): see its files in "
                                f"{self._run.run_dir if self._run is not None else self.runs_root}")
        return result

    def stop_run(self, timeout: float = 90.0) -> None:
        """End the run early: clients closed, nodes stopped, everything written so far kept; waits up to
        ``timeout`` for its thread (0: not at all)."""
        if self._run is not None:
            self._run.stop()
        if timeout and self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def reset(self) -> None:
        """Stop any run and forget it: the next start_run begins from a fresh cluster state."""
        self.stop_run()
        with self._lock:
            self._end_kept_cluster("run reset")
            self._run = None
        self._emit(PhaseChanged(Phase.IDLE))

    def close(self) -> None:
        """Stop any run, the cluster it kept and the Spark session this session started."""
        self.stop_run()
        self._end_kept_cluster("console closed")
        if self._spark is not None:
            self._spark.stop()

    def state(self) -> SessionState:
        run = self._run
        if run is None:
            faults = [FaultStatus(i, f.describe()) for i, f in enumerate(self.lab.faults)]
            return SessionState(self.lab.id, Phase.IDLE, None, 0.0, "", [], None, None, {}, faults, [], 0, None)
        clients = run.clients
        return SessionState(
            lab_id=run.lab.id, phase=run.phase, run_dir=run.run_dir, elapsed_s=run.elapsed(), message=run.message,
            nodes=run.cluster.infos() if run.cluster is not None else [], snapshot=run.snapshot(),
            producer=run.producer_stats(), consumers=clients.latest_stats() if clients is not None else {},
            faults=[f.copy() for f in run.faults.statuses], checks=list(run.faults.checks),
            events=len(run.timeline.events()), result=run.result, throughput=self._recorder.throughput(),
            processor=tuple(clients.processor_stats()) if clients is not None else (),
        )

    def _emit(self, event: SessionEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except BaseException:  # a broken listener must not break the run (Rich's SystemExit on a closed
                continue  # stdout, say: the run goes on, its files are written; the listener's loss is its own)
