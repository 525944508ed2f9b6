"""LabRun: one run of a lab, from a fresh cluster to its result, created per run by :class:`LabSession`.

fresh state dir -> cluster -> topics -> consumers (assigned) -> processor (assigned) -> producer -> faults in
order -> producer finished -> processor, then consumers, drained and closed (the audit reading every partition
back meanwhile, or after, with the brokers healed: :mod:`kafkalab.labs.audit_step`) -> analysis -> expectations
judged -> teardown. Whatever happens, ``result.json`` and ``timeline.json`` are written in the run dir; the cluster,
clients, audit and analysis come from :class:`~kafkalab.labs.run_deps.RunDeps` factories.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafkalab.admin import Admin, ClusterSnapshot
from kafkalab.analysis.report import Report
from kafkalab.clients import ProducerStats
from kafkalab.clients.foreign import no_log_said
from kafkalab.cluster import Cluster, ClusterSpec, Node, NodeState
from kafkalab.cluster.control_socket import NETWORK
from kafkalab.cluster.netwiring import ClusterNet, NetChange
from kafkalab.cluster.spec import DEFAULT_ZK_PORT
from kafkalab.errors import KafkalabError
from kafkalab.labs import judge, metrics
from kafkalab.labs.audit_step import AuditStep
from kafkalab.labs.events import EventKind, NetEvent
from kafkalab.labs.failover import lab_topics
from kafkalab.labs.failover_news import narrated
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.interruptible import in_thread
from kafkalab.labs.model import Lab
from kafkalab.labs.node_events import node_event
from kafkalab.labs.results import (
    Outcome,
    Phase,
    PhaseChanged,
    RunFinished,
    RunMessage,
    RunResult,
    SessionEvent,
    TimelineEvent,
)
from kafkalab.labs.reuse import clean_for, create_after_delete
from kafkalab.labs.run_clients import RunClients
from kafkalab.labs.run_context import RunContext
from kafkalab.labs.run_deps import RunDeps, WatchSnapshots
from kafkalab.labs.run_view import RunControls
from kafkalab.labs.timeline import ClusterWatch, Timeline

Emit = Callable[[SessionEvent], None]


ANALYSIS_CANCEL_S = 3.0  # a stopped run waits this long for its cancelled Spark job to end (about 1 s)


class Aborted(Exception):
    """stop() was called: the run unwinds."""


@dataclass(frozen=True)
class PortChoice:
    """Where the run's cluster listens: fixed ports, or free ones found at start."""

    free: bool = True
    zk_port: int | None = None
    broker_ports: tuple[int, ...] = ()
    controller_ports: tuple[int, ...] = ()  # KRaft: the controller quorum's listeners

    @classmethod
    def picked(cls, lab: Lab) -> PortChoice:
        """Distinct free ports for every listener ``lab``'s cluster has (ZooKeeper, brokers and, in KRaft mode,
        the controllers), picked now: two runs started at once never both reach for a default port."""
        from kafkalab.cluster.ports import free_ports

        controllers = lab.cluster.controllers if lab.cluster.mode == "kraft" else 0
        zk, *rest = free_ports(1 + lab.cluster.brokers + controllers)
        return cls(True, zk, tuple(rest[:lab.cluster.brokers]), tuple(rest[lab.cluster.brokers:]))


def cluster_spec(lab: Lab, run_dir: Path, ports: PortChoice) -> ClusterSpec:
    """The fresh cluster a run of ``lab`` starts, in ``run_dir``/cluster."""
    return ClusterSpec(
        state_dir=run_dir / "cluster", brokers=lab.cluster.brokers, free_ports=ports.free,
        overrides=dict(lab.cluster.overrides),
        broker_overrides={k: dict(v) for k, v in lab.cluster.broker_overrides.items()},
        zk_port=ports.zk_port or DEFAULT_ZK_PORT,  # no ports given: the spec takes its defaults
        broker_ports=list(ports.broker_ports), controller_ports=list(ports.controller_ports),
        mode=lab.cluster.mode, controllers=lab.cluster.controllers, combined=lab.cluster.combined,
        net_proxies=lab.cluster.net_proxies,
    )


class LabRun:
    """One run's state and pipeline. ``execute`` runs it (in the session's thread); ``stop`` ends it early."""

    def __init__(self, lab: Lab, run_dir: Path, deps: RunDeps, *, seed: int | None = None,
                 ports: PortChoice = PortChoice(), emit: Emit = lambda _event: None,
                 keep_cluster: bool = False, reuse: Cluster | None = None,
                 cancel_analysis: Callable[[], None] = lambda: None) -> None:
        """``cancel_analysis``: ends the Spark job in hand at once when the run is stopped during its analysis.
        ``keep_cluster``: the cluster outlives the run (the console's: explored, then ended by
        :meth:`end_cluster`); otherwise the teardown ends it. ``reuse``: the running cluster the last run
        kept (see :mod:`kafkalab.labs.reuse`), cleaned of the lab's topics and groups instead of a fresh one."""
        self.lab = lab
        self.keep_cluster = keep_cluster
        self.cluster_ended = False
        self.reuse = reuse
        self._net_heard: ClusterNet | None = None  # the proxy whose changes this run records
        self.owns_cluster = True  # False once the next run reused it: its node events are no longer ours
        self.cluster_note = ""  # set by the session: "reusing the running cluster", or why a fresh one starts
        self.run_dir = run_dir
        self.deps = deps
        self.ports = ports
        self.seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
        self._emit = emit
        self.abort = threading.Event()
        self._cancel_analysis = cancel_analysis
        self.phase = Phase.IDLE
        self.message = ""
        self.started = 0.0  # monotonic, when the clients started (0: not yet)
        self.cluster: Cluster | None = None
        self.admin: Admin | None = None
        self.clients: RunClients | None = None
        self.watch: ClusterWatch | None = None
        self.watch_snapshots: WatchSnapshots | None = None  # the watch's helper process: ended in the teardown
        self.timeline = Timeline(lab.id, listeners=[lambda e: self._emit(TimelineEvent(e))])
        narrated(self.timeline, lab_topics(lab), self.say)  # each failover said once seen, after its leader change
        self.faults = FaultFiring(lab.faults, self.timeline, random.Random(self.seed),
                                  [c.local_id for c in lab.consumers])
        self.actions = FaultFiring(lab.actions, self.timeline, random.Random(self.seed),
                                   [c.local_id for c in lab.consumers], attendee=True)
        self._producer_done = threading.Event()  # ends the actions' track: a trigger not seen by then never comes
        self.result: RunResult | None = None
        self.crash: BaseException | None = None  # what escaped execute() (set by the session's thread)

    # ---- driving it ------------------------------------------------------------------------------
    def stop(self) -> None:
        """End the run early: it unwinds at its next wait (the cluster's start and the Spark job included);
        clients closed, nodes stopped, files kept."""
        self.abort.set()
        if self.phase == Phase.ANALYZING:
            self._cancel_analysis()

    def elapsed(self) -> float:
        return time.monotonic() - self.started if self.started else 0.0

    def snapshot(self) -> ClusterSnapshot | None:
        """The latest cluster snapshot the run's watch took."""
        return self.watch.last if self.watch is not None else None

    def producer_stats(self) -> ProducerStats | None:
        return self.clients.producer_stats() if self.clients is not None else None

    def set_phase(self, phase: Phase) -> None:
        self.phase = phase
        self.timeline.say(EventKind.PHASE, "lab", str(phase))
        self._emit(PhaseChanged(phase))

    def say(self, message: str) -> None:
        self.message = message
        self._emit(RunMessage(message))

    def sleep(self, seconds: float) -> None:
        """Wait; Aborted when the run is stopped meanwhile."""
        if self.abort.wait(seconds):
            raise Aborted

    def _check_abort(self) -> None:
        if self.abort.is_set():
            raise Aborted

    def past_deadline(self) -> bool:
        return self.elapsed() > self.lab.max_duration_s

    # ---- the pipeline ----------------------------------------------------------------------------
    def execute(self) -> RunResult:
        """Run it to the end (or to a stop); the result is also written as ``result.json``."""
        started = time.monotonic()
        result = RunResult(self.lab.id, self.run_dir, Outcome.ERROR, seed=self.seed, mode=self.lab.cluster.mode,
                           kafka_version=self.lab.cluster.kafka_version, lab_sha256=self.lab.file_sha256(),
                           changes=list(self.lab.changes))
        if self.lab.source is not None:
            shutil.copy(self.lab.source, self.run_dir / "lab.toml")
        try:
            context = self._start_clients(*self._start_cluster())
            self.set_phase(Phase.RUNNING)
            controls = RunControls(context)
            actions = self._start_actions(controls)
            self.faults.run(controls, controls, self.sleep, self.deps.timing.tick_s, self.past_deadline)
            context.clients.wait_producer(self.past_deadline)
            self._producer_done.set()
            if actions is not None:
                actions.join()
            before_drain = context.clients.live_metrics()
            self.set_phase(Phase.DRAINING)
            audit = AuditStep(context)
            audit.start_early()
            context.clients.drain()
            report = self._analyze(audit.logs())
            judge.judge(result, self.lab, before_drain, context.clients.live_metrics(), report, self.faults,
                        self.timeline)
        except BaseException as exc:  # whatever ended it is said in the result: never a run without one
            self._record_end(result, exc)
            if isinstance(exc, KeyboardInterrupt):
                raise
        finally:
            try:
                self._teardown()
            except Exception as exc:
                result.error = result.error or f"teardown: {type(exc).__name__}: {exc}"
        return self._finish(result, time.monotonic() - started)

    def _record_end(self, result: RunResult, exc: BaseException) -> None:
        """The outcome and words of a run ended by ``exc``: stopped once stop() was called (whatever the stop
        made fail: a cancelled start or Spark job), else an error naming it."""
        if isinstance(exc, Aborted) or self.abort.is_set():
            result.outcome = Outcome.STOPPED
            result.error = (f"stopped in the {self.phase} phase, before the end: the run's files so far are kept"
                            if self.phase not in (Phase.IDLE, Phase.RUNNING) else
                            "stopped before the end: the run's files so far are kept")
        elif isinstance(exc, KafkalabError):
            result.error = str(exc)
        else:  # reported in the result; the console must not crash on it
            result.error = f"{type(exc).__name__}: {exc}"

    def _start_actions(self, controls: RunControls) -> threading.Thread | None:
        """A fix attempt's live actions, fired beside the lab's faults once their triggers hold."""
        if not self.actions.faults:
            return None

        def track() -> None:
            with contextlib.suppress(Aborted):
                self.actions.run(controls, controls, self.sleep, self.deps.timing.tick_s,
                                 lambda: self.past_deadline() or self._producer_done.is_set())

        thread = threading.Thread(target=track, name=f"kafkalab-actions-{self.lab.id}", daemon=True)
        thread.start()
        return thread

    def _finish(self, result: RunResult, duration_s: float) -> RunResult:
        self._producer_done.set()
        result.faults = [f.copy() for f in [*self.faults.statuses, *self.actions.statuses]]
        result.checks = list(self.faults.checks)
        result.duration_s = duration_s
        if result.outcome == Outcome.ERROR and result.expectations:
            result.outcome = Outcome.PASSED if all(e.held for e in result.expectations) else Outcome.FAILED
        self.timeline.save(self.run_dir / "timeline.json")
        (self.run_dir / "result.json").write_text(json.dumps(result.as_dict(), indent=2) + "\n", encoding="utf-8")
        self.result = result
        self.phase = {Outcome.STOPPED: Phase.STOPPED, Outcome.ERROR: Phase.ERROR}.get(result.outcome, Phase.DONE)
        self._emit(PhaseChanged(self.phase))
        self._emit(RunFinished(result))
        return result

    def _start_cluster(self) -> tuple[Cluster, Admin]:
        lab = self.lab
        self.set_phase(Phase.STARTING)
        if self.reuse is not None:
            return self._reuse_cluster(self.reuse)
        if self.cluster_note:
            self.say(self.cluster_note)
        spec = cluster_spec(lab, self.run_dir, self.ports)
        self.cluster = cluster = self.deps.cluster(spec)
        self._listen(cluster)
        if self.abort.is_set():
            raise Aborted
        try:
            timing = self.deps.timing
            # KRaft: the brokers the cluster grows by are not started, so never registered with the quorum (a
            # started then stopped one stays registered, fenced, and new topics may place followers on it)
            held_back = lab.cluster.stopped if spec.kraft else ()
            for b in held_back:
                self.say(f"broker {b} not started: it registers with the quorum, and joins the cluster, later")
            cluster.start(timeout=timing.kraft_cluster_timeout_s if spec.kraft else timing.cluster_timeout_s,
                          progress=self.say, cancelled=self.abort.is_set, held_back=held_back)
        except BaseException:
            self.cluster_ended = True  # a failed start ends what it started
            raise
        self._listen_net(cluster)  # the cluster's proxy exists once it started
        self.admin = admin = self.deps.admin(cluster.bootstrap)
        stopped_after_start = () if spec.kraft else lab.cluster.stopped  # ZooKeeper counts only live brokers
        for b in stopped_after_start:
            self.say(f"stopping broker {b}: it joins the cluster later")
            cluster.node(b).stop()
        for b in stopped_after_start:
            self.wait_node(f"broker-{b}", (NodeState.STOPPED, NodeState.KILLED), 60)
        if stopped_after_start:
            self._wait_left_metadata(admin, stopped_after_start, 60)
        for t in lab.topics:
            if t.create:
                self._check_abort()
                self.create_topic(t.name)
        self._check_abort()  # a stop while the cluster started: no client is started after it
        return cluster, admin

    def _reuse_cluster(self, cluster: Cluster) -> tuple[Cluster, Admin]:
        """The kept cluster, its nodes' events now in this run's timeline, cleaned of the lab's topics and
        groups (so the analysis reads only this run's records), then the lab's topics created afresh."""
        self.cluster = cluster
        self._listen(cluster)
        self.say(f"reusing the running cluster (nodes and logs in {cluster.state_dir.parent.name}): "
                 "recreating the lab's topics and groups")
        (self.run_dir / "cluster.txt").write_text(f"this run reused the cluster in {cluster.state_dir}\n")
        self.admin = admin = self.deps.admin(cluster.bootstrap)
        clean_for(self.lab, admin, self.sleep, self.say)
        for t in self.lab.topics:
            if t.create:
                create_after_delete(t.name, self.create_topic, self.sleep)
        return cluster, admin

    def _listen(self, cluster: Cluster) -> None:
        last: dict[str, NodeState] = {}

        def record(node: Node, state: NodeState, reason: str) -> None:
            if self.owns_cluster:
                before, last[node.name] = last.get(node.name), state
                self.timeline.add(node_event(node, state, reason, before, self.timeline.actors))

        cluster.add_listener(record)
        self._listen_net(cluster)

    def _listen_net(self, cluster: Cluster) -> None:
        """The proxy's changes on the timeline, once (a fresh cluster has its proxy only after its start)."""
        net = cluster.net
        if net is not None and net is not self._net_heard:
            self._net_heard = net
            net.add_listener(self._net_changed)

    def _net_changed(self, change: NetChange) -> None:
        if self.owns_cluster:
            self.timeline.add(NetEvent(source="network", detail=change.line(), action=change.action.value,
                                       nodes=change.nodes, rules=change.rules,
                                       actor=self.timeline.actors.actor_of(NETWORK)))

    def hand_over(self) -> Cluster | None:
        """The kept cluster, for the next run to reuse: this run no longer records or ends it."""
        self.owns_cluster = False
        self.cluster_ended = True
        return self.cluster

    def create_topic(self, name: str, timeout_s: float = 60.0) -> None:
        assert self.admin is not None
        plan = next(t for t in self.lab.topics if t.name == name)
        self.say(f"creating topic {name}: {plan.partitions} partitions, replication factor {plan.replication_factor}")
        up = sum(b.state == NodeState.RUNNING for b in self.cluster.brokers) if self.cluster is not None else 0
        self.admin.create_topic(name, plan.partitions, plan.replication_factor, plan.configs, timeout_s, brokers_up=up)

    def _wait_left_metadata(self, admin: Admin, gone: Sequence[int], timeout: float) -> None:
        """Until the live brokers' metadata no longer lists the brokers just stopped. It lags ZooKeeper (the
        controller tells the brokers, later still when the stopped one was the controller), and a topic created
        before then may place a partition on a stopped broker: offline until it returns."""
        deadline = time.monotonic() + timeout
        while True:
            snap = admin.snapshot(offsets=False)
            listed = sorted(set(snap.brokers) & set(gone)) if snap.reachable else list(gone)
            if snap.brokers and not listed:
                return
            if time.monotonic() > deadline:
                raise KafkalabError(f"brokers {', '.join(map(str, listed))} still listed as live {timeout:.0f}s "
                                    "after they stopped; see their logs in the run folder")
            self._check_abort()
            self.sleep(self.deps.timing.tick_s)

    def wait_node(self, name: str, states: tuple[NodeState, ...], timeout: float) -> None:
        assert self.cluster is not None
        deadline = time.monotonic() + timeout
        node = self.cluster.node(name)
        while node.state not in states:
            if time.monotonic() > deadline:
                raise KafkalabError(f"{name} is {node.state}, not {'/'.join(states)}, after {timeout:.0f}s")
            self.sleep(self.deps.timing.tick_s)

    def _start_clients(self, cluster: Cluster, admin: Admin) -> RunContext:
        """The clients and the cluster watch started: the run's context, for its faults and audit."""
        self.timeline.restart_clock()
        self.started = time.monotonic()
        if roles := self.lab.foreign_roles:
            self.say(f"played by your command: {', '.join(roles)} (its files in {self.run_dir}/ROLE/)")
            if blind := metrics.foreign_blind(self.lab):
                self.say(f"not observed with a foreign client unless it reports them (they judge nothing): "
                         f"{', '.join(blind)}")
        self.clients = clients = RunClients(self.lab, self.run_dir, cluster.spec.client_bootstrap, self.timeline,
                                            self.deps, self.sleep, self.say,
                                            on_started=cluster.net.client_started if cluster.net else None,
                                            admin_bootstrap=cluster.bootstrap)
        quorum = (lambda: cluster.quorum(timeout_s=1.5)) if cluster.spec.kraft else None
        self.watch_snapshots = snapshots = self.deps.watch_snapshots(cluster.bootstrap, self.run_dir)
        self.watch = watch = ClusterWatch(self.timeline, snapshots.snapshot, clients.producer_stats, quorum=quorum)
        watch.poll()
        watch.start()
        waiting = [c for c in self.lab.consumers if c.start]
        for plan in waiting:
            clients.start_consumer(plan)
        for plan in waiting:
            if plan.wait_assigned:
                self.say(f"waiting for {plan.name} to be assigned partitions")
                clients.wait_assigned(plan.local_id)
        if self.lab.processor is not None and self.lab.processor.start:
            clients.start_processor(wait_assigned=True)  # the producer's first records are read, however it starts
        clients.make_producer(self.seed)
        if self.lab.producer.start:
            clients.start_producer()
        return RunContext(self.lab, self.run_dir, self.deps, cluster, admin, clients, watch, self.timeline,
                          say=self.say, set_phase=self.set_phase, sleep=self.sleep, wait_node=self.wait_node,
                          create_topic=self.create_topic)

    def _analyze(self, audits: list[Path]) -> Report:
        if said := [why for role in self.lab.foreign_roles if (why := no_log_said(role, self.run_dir))]:
            raise KafkalabError(said[0])  # before Spark: nothing to compare, and why in one line
        self.set_phase(Phase.ANALYZING)
        self.say("analysing the payload logs with Spark")
        leader_changes: Mapping[tuple[str, int], int] = self.timeline.leader_changes()
        try:
            report = in_thread(lambda: self.deps.analyze(self.run_dir, audits, leader_changes), self.sleep,
                               self.deps.timing.tick_s, "analysis", grace_s=ANALYSIS_CANCEL_S)
            self._check_abort()  # stopped as Spark finished: no verdict
        except Aborted:  # nor a report.json the stop came before: every file says stopped
            (self.run_dir / "report.json").unlink(missing_ok=True)
            raise
        return report

    def _teardown(self) -> None:
        """Whatever happened: clients ended, the watch stopped (its helper process too), every node stopped, data
        dirs removed. A stopped run does these side by side, none waiting on a graceful end (see
        :meth:`_teardown_stopped`)."""
        self.say("stopping the clients" + ("" if self.keep_cluster else " and the cluster"))
        if self.abort.is_set():
            self._teardown_stopped()
            return
        try:
            if self.clients is not None:
                self.clients.close()
            if self.watch is not None:
                self.watch.stop()
        finally:  # no helper process outlives the run, even when the clients' close failed
            if self.watch_snapshots is not None:
                self.watch_snapshots.close()
        if not self.keep_cluster:
            self.end_cluster("run ended")

    def _teardown_stopped(self) -> None:
        """A stopped run (Ctrl-C, the console's stop): its files and every process ended, not a graceful leave.
        The clients (ended without their close unless the cluster is kept, each wait bounded), the watch and
        its helper, and the nodes (SIGKILL) are independent: done at once in threads, so the stop takes the
        longest of them, not their sum (about 1 s, 0.5 s and 0.5 s on 2 loaded cores). The first error is raised
        once all are done."""
        steps: list[Callable[[], None]] = [self._end_watch]
        if self.clients is not None:  # a kept cluster outlives the stop: there its groups are left cleanly, as
            # the next run deletes them (a member that did not leave holds its group for the session timeout)
            steps.append(self.clients.close if self.keep_cluster else self.clients.end_stopped)
        if not self.keep_cluster:
            steps.append(lambda: self.end_cluster("run ended"))
        errors: list[BaseException] = []

        def step(work: Callable[[], None]) -> None:
            try:
                work()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=step, args=(work,), name=f"kafkalab-stop-{i}", daemon=True)
                   for i, work in enumerate(steps)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()  # each step bounds its own waits
        if errors:
            raise errors[0]

    def _end_watch(self) -> None:
        try:
            if self.watch is not None:
                self.watch.stop()
        finally:
            if self.watch_snapshots is not None:
                self.watch_snapshots.close()

    def end_cluster(self, reason: str) -> None:
        """Every node ended (shown as stopped with ``reason``), data dirs removed; once."""
        if self.cluster is not None and not self.cluster_ended:
            self.cluster_ended = True
            self.cluster.shutdown(graceful=False, reason=reason)
            for node in self.cluster.nodes:
                shutil.rmtree(node.node_dir / "data", ignore_errors=True)
