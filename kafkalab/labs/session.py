"""LabSession: one lab's cluster, clients, fault timeline and analysis, driven by the console or headless.

    session = LabSession(lab, runs_root=Path("kafkalab-runs"))
    session.add_listener(print)          # SessionEvent: phase / timeline / message / result
    session.start_run()                  # returns at once; the run goes on in a thread
    session.state()                      # a SessionState snapshot, safe to read from any thread
    result = session.wait()              # RunResult (expectations, metrics, report, paths)
    session.stop_run()                   # ends a run early: clients and nodes stopped, files kept
    session.reset()                      # ready for a fresh run (new run dir, fresh cluster state)

A run: fresh state dir -> cluster -> topics -> consumers (assigned) -> producer -> faults in order ->
producer finished -> consumers drained and closed -> brokers healed -> audit -> analysis -> expectations.
Its files stay in ``runs_root/<lab>-<timestamp>/``: payload logs, audit.csv, report.json, result.json,
timeline.json, and cluster/ with each node's logs (the data dirs are removed).
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from kafkalab import dist as kdist
from kafkalab.admin import Admin, ClusterSnapshot
from kafkalab.clients import Consumer, ConsumerStats, Producer, ProducerStats
from kafkalab.clients.audit import audit_topic
from kafkalab.clients.control import send_control
from kafkalab.clients.payload_log import log_files
from kafkalab.cluster import Cluster, ClusterSpec, NodeInfo, NodeState
from kafkalab.errors import KafkalabError
from kafkalab.labs import actions, metrics
from kafkalab.labs.expectations import Expectation, parse_check
from kafkalab.labs.faults import Fault
from kafkalab.labs.model import ConsumerPlan, Lab
from kafkalab.labs.recording import RunRecorder
from kafkalab.labs.timeline import ClusterWatch, Event, Timeline

TICK_S = 0.1
# A lab run's Spark session starts beside its cluster and is needed as soon as the run ends: a light
# warm-up is done sooner (commit-too-late's report 17 s after its run against 20-25 s with 100k rows).
LAB_WARMUP_ROWS = 10_000
ASSIGN_TIMEOUT_S = 60.0


class Phase(StrEnum):
    IDLE = "idle"
    STARTING = "starting"  # cluster, topics, consumers
    RUNNING = "running"  # producer and faults
    DRAINING = "draining"  # consumers catching up, then closed
    AUDITING = "auditing"  # brokers healed, every partition read back
    ANALYZING = "analyzing"
    DONE = "done"  # result ready (passed or failed)
    STOPPED = "stopped"  # ended early by stop_run
    ERROR = "error"  # could not run (cluster would not start, bad lab at run time...)


class Aborted(Exception):
    """stop_run was called: the run unwinds."""


@dataclass(frozen=True)
class SessionEvent:
    kind: str  # phase | timeline | message | result
    data: Any


@dataclass
class FaultStatus:
    index: int
    text: str
    state: str = "pending"  # pending, waiting, fired, missed, failed
    fired_at: float | None = None  # seconds since the run began
    targets: list[str] = field(default_factory=list)
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class ExpectationResult:
    text: str
    held: bool
    actual: float | None
    wanted: float | None
    line: int = 0
    at: float | None = None  # for checks: seconds since the run began

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class RunResult:
    lab_id: str
    run_dir: Path
    outcome: str  # passed, failed, stopped, error
    expectations: list[ExpectationResult] = field(default_factory=list)
    checks: list[ExpectationResult] = field(default_factory=list)
    faults: list[FaultStatus] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    report: dict[str, Any] | None = None
    verdict: str = ""
    error: str = ""
    duration_s: float = 0.0
    seed: int = 0

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def failures(self) -> list[str]:
        """What did not hold, in words (empty when passed)."""
        out = [f"{e.text} (was {_num(e.actual)})" for e in self.expectations if not e.held]
        out += [f"check at {_num(c.at)}s: {c.text} (was {_num(c.actual)})" for c in self.checks if not c.held]
        out += [f"fault {f.index + 1} ({f.text}) {f.state}: {f.detail}" for f in self.faults
                if f.state in ("missed", "failed")]
        if self.error:
            out.append(self.error)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab_id, "run_dir": str(self.run_dir), "outcome": self.outcome, "passed": self.passed,
            "duration_s": round(self.duration_s, 2), "seed": self.seed, "verdict": self.verdict,
            "error": self.error, "failures": self.failures,
            "expectations": [e.as_dict() for e in self.expectations],
            "checks": [c.as_dict() for c in self.checks],
            "faults": [f.as_dict() for f in self.faults], "metrics": self.metrics,
        }


@dataclass(frozen=True)
class SessionState:
    """Everything the console shows, copied at one moment."""

    lab_id: str
    phase: Phase
    run_dir: Path | None
    elapsed_s: float
    message: str
    nodes: list[NodeInfo]
    snapshot: ClusterSnapshot | None
    producer: ProducerStats | None
    consumers: dict[str, ConsumerStats]
    faults: list[FaultStatus]
    checks: list[ExpectationResult]
    events: int
    result: RunResult | None


Listener = Callable[[SessionEvent], None]


class LabSession:
    """Owns one lab's runs. Thread-safe for its public methods; listeners run in the session's threads."""

    def __init__(
        self,
        lab: Lab,
        runs_root: Path = Path("kafkalab-runs"),
        *,
        seed: int | None = None,
        distribution: kdist.Distribution | None = None,
        spark: Any = None,
        zk_port: int | None = None,
        broker_ports: list[int] | None = None,
        free_ports: bool = True,
    ) -> None:
        self.lab = lab
        self.runs_root = Path(runs_root)
        self.seed = seed
        self._dist = distribution
        self._spark = spark  # a WarmSession (or SparkSession); started on the first run if None
        self._zk_port = zk_port
        self._broker_ports = broker_ports
        self._free_ports = free_ports
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._abort = threading.Event()
        self._reset_run_state()
        self.add_listener(RunRecorder(self).on_event)  # recording.jsonl in every run dir, for `kafkalab replay`

    def _reset_run_state(self) -> None:
        self.phase = Phase.IDLE
        self.message = ""
        self.run_dir: Path | None = None
        self.cluster: Cluster | None = None
        self.admin: Admin | None = None
        self.timeline = Timeline(self.lab.id)
        self.timeline.add_listener(lambda e: self._emit("timeline", e))
        self._watch: ClusterWatch | None = None
        self.producer: Producer | None = None
        self._consumers: dict[int, list[Consumer]] = {}
        self._fault_status = [FaultStatus(i, f.describe()) for i, f in enumerate(self.lab.faults)]
        self._checks: list[ExpectationResult] = []
        self._rng = random.Random(self.seed)
        self._run_started = 0.0
        self._before_drain: dict[str, float] = {}
        self.result: RunResult | None = None

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
            self._reset_run_state()
            self._abort.clear()
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")[:-3]
            self.run_dir = (self.runs_root / f"{self.lab.id}-{stamp}").resolve()
            self.run_dir.mkdir(parents=True, exist_ok=False)
            if self._spark is None:
                from kafkalab.analysis import WarmSession

                self._spark = WarmSession(warmup_rows=LAB_WARMUP_ROWS).start()
            self._thread = threading.Thread(target=self._run, name=f"kafkalab-lab-{self.lab.id}", daemon=True)
            self._thread.start()
            return self.run_dir

    def wait(self, timeout: float | None = None) -> RunResult | None:
        """The result once the run ended (None if still running after ``timeout``)."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return None
        return self.result

    def run(self) -> RunResult:
        """start_run + wait; Ctrl-C (SIGINT) or SIGTERM stops the run cleanly, then KeyboardInterrupt is raised."""
        interrupted = threading.Event()
        previous = {}
        if threading.current_thread() is threading.main_thread():
            def on_signal(_signum: int, _frame: object) -> None:
                interrupted.set()
                self._abort.set()
            previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        self.start_run()
        try:
            while (result := self.wait(0.2)) is None:
                pass
        except KeyboardInterrupt:  # a handler installed later (Spark's) raises instead
            interrupted.set()
            self.stop_run()
            result = self.result
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if interrupted.is_set():
            raise KeyboardInterrupt
        assert result is not None
        return result

    def stop_run(self, timeout: float = 90.0) -> None:
        """End the run early: clients closed, nodes stopped, everything written so far kept."""
        self._abort.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def reset(self) -> None:
        """Stop any run and forget it: the next start_run begins from a fresh cluster state."""
        self.stop_run()
        with self._lock:
            self._reset_run_state()
        self._emit("phase", self.phase)

    def close(self) -> None:
        """Stop any run and the Spark session this session started."""
        self.stop_run()
        stop = getattr(self._spark, "stop", None)
        if stop is not None:
            stop()

    def state(self) -> SessionState:
        consumers = {c.name: c.stats() for cs in list(self._consumers.values()) for c in cs[-1:]}
        return SessionState(
            lab_id=self.lab.id, phase=self.phase, run_dir=self.run_dir,
            elapsed_s=time.monotonic() - self._run_started if self._run_started else 0.0,
            message=self.message,
            nodes=self.cluster.infos() if self.cluster is not None else [],
            snapshot=self._watch.last if self._watch is not None else None,
            producer=self.producer.stats() if self.producer is not None else None,
            consumers=consumers, faults=[FaultStatus(**vars(f)) for f in self._fault_status],
            checks=list(self._checks), events=len(self.timeline.events()), result=self.result,
        )

    # ---- the run ---------------------------------------------------------------------------------
    def _emit(self, kind: str, data: Any) -> None:
        for listener in list(self._listeners):
            try:
                listener(SessionEvent(kind, data))
            except Exception:  # a broken listener must not break the run
                continue

    def _set_phase(self, phase: Phase) -> None:
        self.phase = phase
        self.timeline.add("phase", "lab", str(phase))
        self._emit("phase", phase)

    def _say(self, message: str) -> None:
        self.message = message
        self._emit("message", message)

    def _check_abort(self) -> None:
        if self._abort.is_set():
            raise Aborted

    def _sleep(self, seconds: float) -> None:
        if self._abort.wait(seconds):
            raise Aborted

    def _run(self) -> None:
        assert self.run_dir is not None
        lab = self.lab
        started = time.monotonic()
        seed = self.seed if self.seed is not None else random.SystemRandom().randrange(1 << 31)
        self._rng = random.Random(seed)
        result = RunResult(lab.id, self.run_dir, "error", seed=seed)
        if lab.source is not None:
            shutil.copy(lab.source, self.run_dir / "lab.toml")
        try:
            self._start_cluster()
            self._start_clients(seed)
            self._set_phase(Phase.RUNNING)
            self._run_faults()
            self._wait_producer()
            self._before_drain = self.live_metrics()
            self._set_phase(Phase.DRAINING)
            self._drain()
            report = self._audit_and_analyze()
            result = self._judge(result, report)
        except Aborted:
            result.outcome = "stopped"
            result.error = "stopped before the end: the run's files so far are kept"
        except KafkalabError as exc:
            result.error = str(exc)
        except Exception as exc:  # reported in the result; the console must not crash on it
            result.error = f"{type(exc).__name__}: {exc}"
        finally:
            try:
                self._teardown()
            except Exception as exc:
                result.error = result.error or f"teardown: {type(exc).__name__}: {exc}"
        result.faults = [FaultStatus(**vars(f)) for f in self._fault_status]
        result.checks = list(self._checks)
        result.duration_s = time.monotonic() - started
        if result.outcome == "error" and result.expectations:
            result.outcome = "passed" if all(e.held for e in result.expectations) else "failed"
        self.timeline.save(self.run_dir / "timeline.json")
        (self.run_dir / "result.json").write_text(json.dumps(result.as_dict(), indent=2) + "\n", encoding="utf-8")
        self.result = result
        self.phase = {"stopped": Phase.STOPPED, "error": Phase.ERROR}.get(result.outcome, Phase.DONE)
        self._emit("phase", self.phase)
        self._emit("result", result)

    def _start_cluster(self) -> None:
        assert self.run_dir is not None
        lab = self.lab
        self._set_phase(Phase.STARTING)
        spec = ClusterSpec(
            state_dir=self.run_dir / "cluster", brokers=lab.cluster.brokers,
            free_ports=self._free_ports, overrides=dict(lab.cluster.overrides),
            broker_overrides={k: dict(v) for k, v in lab.cluster.broker_overrides.items()},
            **({"zk_port": self._zk_port} if self._zk_port else {}),
            **({"broker_ports": list(self._broker_ports)} if self._broker_ports else {}),
        )
        self.cluster = Cluster(spec, self._dist or kdist.locate())
        self.cluster.add_listener(
            lambda node, state, reason: self.timeline.add("node", node.name, f"{node.name} {state}: {reason}",
                                                          state=str(state)))
        self._check_abort()
        self.cluster.start(timeout=180, progress=self._say)
        self.admin = Admin(self.cluster.bootstrap, timeout_s=1.5)
        for b in lab.cluster.stopped:
            self._say(f"stopping broker {b}: it joins the cluster later")
            self.cluster.node(b).stop()
        for b in lab.cluster.stopped:
            self._wait_node(f"broker-{b}", (NodeState.STOPPED, NodeState.KILLED), 60)
        for t in lab.topics:
            if t.create:
                self._create_topic(t.name)

    def _create_topic(self, name: str) -> None:
        assert self.admin is not None
        plan = next(t for t in self.lab.topics if t.name == name)
        self._say(f"creating topic {name}: {plan.partitions} partitions, replication factor {plan.replication_factor}")
        self.admin.create_topic(name, plan.partitions, plan.replication_factor, plan.configs, timeout_s=60)

    def _wait_node(self, name: str, states: tuple[NodeState, ...], timeout: float) -> None:
        assert self.cluster is not None
        deadline = time.monotonic() + timeout
        node = self.cluster.node(name)
        while node.state not in states:
            if time.monotonic() > deadline:
                raise KafkalabError(f"{name} is {node.state}, not {'/'.join(states)}, after {timeout:.0f}s")
            self._sleep(TICK_S)

    def _start_clients(self, seed: int) -> None:
        assert self.cluster is not None and self.admin is not None and self.run_dir is not None
        self.timeline.restart_clock()
        self._run_started = time.monotonic()
        self._watch = ClusterWatch(self.timeline, self.admin,
                                   lambda: self.producer.stats() if self.producer is not None else None)
        self._watch.poll()
        self._watch.start()
        waiting = [c for c in self.lab.consumers if c.start]
        for plan in waiting:
            self._start_consumer(plan)
        for plan in waiting:
            if plan.wait_assigned:
                self._say(f"waiting for {plan.name} to be assigned partitions")
                self._wait_assigned(plan.local_id)
        self.producer = Producer(self.lab.producer.settings, self.run_dir, self.run_dir.name,
                                 bootstrap=self.cluster.bootstrap, on_event=self.timeline.add_client_event, seed=seed)
        if self.lab.producer.start:
            self._start_producer()

    def _start_producer(self) -> None:
        assert self.producer is not None
        if self.producer.stats().state == "starting" and not self.producer.running:
            self._say("producer started")
            self.producer.start()

    def _start_consumer(self, plan: ConsumerPlan) -> None:
        assert self.cluster is not None and self.run_dir is not None
        instances = self._consumers.setdefault(plan.local_id, [])
        if instances and instances[-1].running:
            return
        consumer = Consumer(plan.settings, self.run_dir, bootstrap=self.cluster.bootstrap,
                            on_event=self.timeline.add_client_event)
        instances.append(consumer)
        self.timeline.add("consumer-launch", plan.name, f"{plan.name} started (group {plan.group})")
        consumer.start()

    def _wait_assigned(self, local_id: int) -> None:
        deadline = time.monotonic() + ASSIGN_TIMEOUT_S
        consumer = self._consumers[local_id][-1]
        while not consumer.stats().assignment:
            stats = consumer.stats()
            if stats.state in ("failed", "crashed", "finished"):
                raise KafkalabError(f"{consumer.name} ended before it got partitions: {stats.error or stats.state}")
            if time.monotonic() > deadline:
                raise KafkalabError(f"{consumer.name} got no partitions within {ASSIGN_TIMEOUT_S:.0f}s")
            self._sleep(TICK_S)

    def _deadline_passed(self) -> bool:
        return time.monotonic() - self._run_started > self.lab.max_duration_s

    def _run_faults(self) -> None:
        previous_nodes: list[str] = []
        fired_prev_at = 0.0
        view = _View(self)
        for i, fault in enumerate(self.lab.faults):
            status = self._fault_status[i]
            status.state = "waiting"
            turn = time.monotonic()
            while not fault.at.due(view, fired_prev_at):
                if time.monotonic() - turn > fault.timeout_s or self._deadline_passed():
                    status.state = "missed"
                    status.detail = f"'{fault.at.text}' did not happen within {fault.timeout_s:.0f}s"
                    self.timeline.add("fault-missed", "lab", f"fault {i + 1}: {status.detail}", index=i)
                    for rest in self._fault_status[i + 1:]:
                        rest.state, rest.detail = "missed", "an earlier fault never fired"
                    return
                self._sleep(TICK_S)
            fired_prev_at = self.timeline.now()
            status.fired_at = round(fired_prev_at, 2)
            try:
                targets = self._apply(fault, previous_nodes)
            except KafkalabError as exc:
                status.state, status.detail = "failed", str(exc)
                self.timeline.add("fault-failed", "lab", f"fault {i + 1} ({fault.describe()}): {exc}", index=i)
                continue
            status.state, status.targets = "fired", targets
            if fault.target.category == "nodes":
                previous_nodes = targets

    def _apply(self, fault: Fault, previous_nodes: list[str]) -> list[str]:
        """Do one fault now; returns what it acted on."""
        assert self.cluster is not None and self.admin is not None
        target, action = fault.target, fault.action
        label = f"{action} {fault.word}".strip()
        if action == "note":
            self.timeline.add("note", "lab", fault.note or fault.at.text)
            return []
        if action == "check":
            return self._check(fault)
        if target.category == "nodes":
            snap = None
            if target.kind in ("leader", "controller", "random-follower", "followers"):
                snap = self.admin.snapshot(offsets=False)
                if not snap.reachable and self._watch is not None:
                    snap = self._watch.last  # a paused broker can make a fresh snapshot fail
            states = {n.name: str(n.state) for n in self.cluster.nodes}
            names = target.nodes(snap, previous_nodes, self._rng, states)
            if not names:
                raise KafkalabError(f"{target.text} names no node right now")
            for name in names:
                getattr(self.cluster.node(name), action)()
            self._fault_event(fault, label, names)
            return names
        if target.category == "producer":
            if action == "start":
                self._start_producer()
            elif self.producer is not None:
                self.producer.stop(drain=True)
            self._fault_event(fault, label, ["producer"])
            return ["producer"]
        if target.category == "consumers":
            ids = [target.local_id] if target.kind == "consumer" else [c.local_id for c in self.lab.consumers]
            done: list[str] = []
            for local_id in ids:
                assert local_id is not None
                if action == "start":
                    self._start_consumer(self.lab.consumer(local_id))
                elif self._consumers.get(local_id) and self._consumers[local_id][-1].running:
                    consumer = self._consumers[local_id][-1]
                    consumer.crash() if action == "crash" else consumer.stop()
                else:
                    continue
                done.append(f"consumer-{local_id}")
            self._fault_event(fault, label, done)
            return done
        return self._topic_action(fault, label)

    def _topic_action(self, fault: Fault, label: str) -> list[str]:
        assert self.cluster is not None and self.admin is not None
        topic = fault.target.topic
        action = fault.action
        detail = ""
        if action == "send":
            n = send_control(self.cluster.bootstrap, topic, fault.word, all_partitions=True)
            detail = f"{fault.word!r} sent to {n} partitions"
        elif action == "create":
            self._create_topic(topic)
        elif action == "alter-config":
            self.admin.alter_topic_configs(topic, dict(fault.configs))
            detail = ", ".join(f"{k}={v}" for k, v in fault.configs.items())
        elif action == "replicate":
            snap = self.admin.snapshot(offsets=False)
            plan = actions.plan_replicas(snap.topic(topic), list(snap.brokers), fault.replication_factor)
            detail = actions.reassign(self._dist or kdist.locate(), self.cluster.bootstrap, topic, plan)
        elif action == "elect-preferred":
            parts = next(t.partitions for t in self.lab.topics if t.name == topic)
            actions.elect_preferred(self.cluster.bootstrap, topic, parts)
        self._fault_event(fault, label, [f"topic {topic}"], detail)
        return [f"topic {topic}"]

    def _fault_event(self, fault: Fault, label: str, targets: list[str], detail: str = "") -> None:
        text = f"{label} {', '.join(targets)}".strip() + (f": {detail}" if detail else "")
        self.timeline.add("fault", "lab", text, action=fault.action, targets=targets, trigger=fault.at.text)

    def _check(self, fault: Fault) -> list[str]:
        expectation = parse_check(fault.expect, fault.line)
        held, actual, wanted = expectation.evaluate(self.live_metrics())
        result = ExpectationResult(expectation.text, held, actual, wanted, fault.line, round(self.timeline.now(), 2))
        self._checks.append(result)
        self.timeline.add("check", "lab", f"{expectation.text}: {'held' if held else 'did not hold'} "
                          f"(was {_num(actual)})", held=held)
        return []

    def live_metrics(self) -> dict[str, float]:
        """What is known while the run goes on: clients' counters and the timeline's counts."""
        out = metrics.producer_metrics(self.producer.stats() if self.producer else None)
        instances = {i: [c.stats() for c in cs] for i, cs in self._consumers.items() if cs}
        groups = {c.local_id: c.group for c in self.lab.consumers}
        out |= metrics.consumer_metrics(instances, groups)
        out |= metrics.timeline_metrics(self.timeline, {t.name for t in self.lab.topics},
                                        [c.local_id for c in self.lab.consumers])
        return out

    def _wait_producer(self) -> None:
        if self.producer is None:
            return
        while self.producer.running:
            if self._deadline_passed():
                self.producer.stop(drain=False)
                raise KafkalabError(f"the lab ran past its {self.lab.max_duration_s:.0f}s limit with the "
                                    "producer still sending")
            self._sleep(TICK_S * 2)
        stats = self.producer.stats()
        if stats.state == "failed":
            raise KafkalabError(f"the producer failed: {stats.error}")

    def _drain(self) -> None:
        """Let running consumers catch up (lag 0, nothing new for a second), at most ``drain_s``; close them."""
        deadline = time.monotonic() + self.lab.drain_s
        running = [cs[-1] for cs in self._consumers.values() if cs and cs[-1].running]
        self._say(f"draining {len(running)} consumers")
        last, quiet_since = -1, time.monotonic()
        while running and time.monotonic() < deadline:
            stats = [c.stats() for c in running]
            processed = sum(s.processed for s in stats)
            if processed != last:
                last, quiet_since = processed, time.monotonic()
            caught_up = all(  # every assigned partition's lag known and zero
                s.assignment and set(s.assignment) <= set(s.lag) and s.total_lag == 0
                for s in stats if s.state == "running") and self._groups_cover(stats)
            if caught_up and time.monotonic() - quiet_since >= 1.0:
                break
            self._sleep(0.25)
        for c in running:
            c.stop()
        for c in running:
            if not c.join(20):
                c.crash()
                c.join(5)

    def _groups_cover(self, stats: list[ConsumerStats]) -> bool:
        """Each group with a running member owns every partition of the topic: partitions a crashed member
        held are someone's again (after its session timed out) before the drain may end, or its records
        would count as lost when the lesson is their redelivery."""
        partitions = next((t.partitions for t in self.lab.topics if t.name == self.lab.topic), 0)
        owned: dict[str, set[int]] = {}
        for s in stats:
            if s.state == "running":
                owned.setdefault(s.group, set()).update(s.assignment)
        return all(len(parts) >= partitions for parts in owned.values())

    def _heal(self) -> None:
        assert self.cluster is not None
        for node in self.cluster.nodes:
            if node.state == NodeState.PAUSED:
                node.resume()
            elif node.state in (NodeState.STOPPED, NodeState.KILLED, NodeState.FAILED):
                node.start()
        for node in self.cluster.nodes:
            self._wait_node(node.name, (NodeState.RUNNING,), 90)

    def _audit_and_analyze(self) -> dict[str, Any]:
        assert self.cluster is not None and self.admin is not None and self.run_dir is not None
        audits: list[Path] = []
        if self.lab.audit:
            self._set_phase(Phase.AUDITING)
            if self.lab.heal_before_audit:
                self._say("bringing every broker back for the audit")
                self._heal()
                self.admin.wait_for_leaders(self.lab.topic, timeout_s=60)
            self._say(f"reading every partition of {self.lab.topic} back")
            path, _read = audit_topic(self.cluster.bootstrap, self.lab.topic, self.run_dir)
            audits.append(path)
        self._set_phase(Phase.ANALYZING)
        self._say("analysing the payload logs with Spark")
        from kafkalab.analysis import analyze

        report = analyze(log_files(self.run_dir, "producer"), log_files(self.run_dir, "consumer"), audits,
                         session=self._spark, leader_changes=self.timeline.leader_changes())
        report.write_json(self.run_dir / "report.json")
        return report.to_json()

    def _judge(self, result: RunResult, report: dict[str, Any]) -> RunResult:
        assert self.run_dir is not None
        # a consumer's partitions are those it held when the producer was done (draining closes them all)
        held = {k: v for k, v in self._before_drain.items() if k.endswith(".partitions")}
        values = self.live_metrics() | held | metrics.report_metrics(report)
        values["faults.missed"] = float(sum(f.state in ("missed", "failed") for f in self._fault_status))
        if any(e.metric.startswith("group.") or e.other.startswith("group.") for e in self.lab.expectations):
            logs = {p: self.lab.consumer(int(p.name.split("-")[1].split(".")[0])).group
                    for p in log_files(self.run_dir, "consumer") if p.name.split(".")[0] != "consumer"}
            values |= metrics.group_metrics(logs)
        result.metrics = {k: round(v, 3) for k, v in sorted(values.items())}
        result.report = report
        result.verdict = str(report.get("verdict", ""))
        result.expectations = [_evaluate(e, values) for e in self.lab.expectations]
        held = all(e.held for e in result.expectations) and all(c.held for c in self._checks)
        missed = any(f.state in ("missed", "failed") for f in self._fault_status)
        result.outcome = "passed" if held and not missed else "failed"
        return result

    def _teardown(self) -> None:
        """Whatever happened: clients ended, the watch stopped, every node stopped, data dirs removed."""
        self._say("stopping the clients and the cluster")
        if self.producer is not None and self.producer.running:
            self.producer.stop(drain=False)
            self.producer.join(15)
        for instances in self._consumers.values():
            for c in instances:
                if c.running:
                    c.crash()
                    c.join(5)
        if self._watch is not None:
            self._watch.stop()
        if self.cluster is not None:
            self.cluster.shutdown(graceful=False)
            for node in self.cluster.nodes:
                shutil.rmtree(node.node_dir / "data", ignore_errors=True)


class _View:
    """The run as fault triggers see it."""

    def __init__(self, session: LabSession) -> None:
        self.s = session

    def elapsed(self) -> float:
        return self.s.timeline.now()

    def producer_progress(self) -> tuple[float, int, str]:
        if self.s.producer is None:
            return 0.0, 0, "starting"
        st = self.s.producer.stats()
        return st.progress, st.acked, st.state

    def consumed(self, local_id: int | None) -> int:
        groups = self.s._consumers.items()
        return sum(c.stats().processed for i, cs in groups if local_id in (None, i) for c in cs)

    def assignment(self, local_id: int) -> tuple[int, ...]:
        cs = self.s._consumers.get(local_id)
        return cs[-1].stats().assignment if cs else ()

    def snapshot(self) -> ClusterSnapshot | None:
        return self.s._watch.last if self.s._watch is not None else None

    def events_since(self, since: float, kind: str) -> list[Event]:
        return self.s.timeline.events(kind, since=since)


def _evaluate(e: Expectation, values: dict[str, float]) -> ExpectationResult:
    held, actual, wanted = e.evaluate(values)
    return ExpectationResult(e.text, held, actual, wanted, e.line)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:g}" if x != int(x) else f"{int(x)}"
