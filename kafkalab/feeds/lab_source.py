"""The console's source for a lab: a :class:`LabSession`, the object the headless runner drives too.

A lab's cluster starts with its first run and stays up after it (the instructor keeps exploring); the next
run, a reset or quit ends it, and its nodes then show as stopped with that reason.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Sequence

from kafkalab.admin import ClusterSnapshot, replication_plan
from kafkalab.admin.snapshot_helper import SnapshotHelper
from kafkalab.analysis import WarmSession
from kafkalab.analysis.job import CLASSES, Sample
from kafkalab.analysis.report import failed_reasons, loss_split
from kafkalab.clients.control_words import send_control
from kafkalab.cluster import Cluster, EndCause, NodeAction, NodeState
from kafkalab.cluster.control_socket import NETWORK, ControlServer, write_cluster_file
from kafkalab.cluster.netwiring import NET_ACTIONS, NetRequest
from kafkalab.errors import KafkalabError
from kafkalab.feeds.by_hand import act_by_hand, by_hand
from kafkalab.feeds.exercise import Exercise
from kafkalab.feeds.frames import (
    CLUSTER_DOWN,
    CLUSTER_STARTING,
    NO_CLUSTER_YET,
    ExerciseView,
    LabView,
    Marker,
    MarkerKind,
    NodesFrame,
    PlatformRun,
    ReportView,
    RunFrame,
    TimelineStep,
)
from kafkalab.feeds.metadata_facts import MetadataFacts
from kafkalab.feeds.node_logs import NodeLogs, nodes_frame
from kafkalab.feeds.players import played
from kafkalab.feeds.source import EXERCISE_ACTIONS, SNAPSHOT_WAIT_S, ConsoleAction, NotOffered, Source, apply_net
from kafkalab.labs import metrics
from kafkalab.labs.events import Event, FaultEvent, NetEvent, NodeEvent, by_whom
from kafkalab.labs.failover import Leadership, lab_topics, leader_changes, leadership
from kafkalab.labs.fix import partitions_line
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import who_am_i
from kafkalab.labs.graded_check import CheckPhase, CheckStatus, GradedCheck
from kafkalab.labs.model import Lab, platform_name, platform_short
from kafkalab.labs.node_events import action_of, node_label
from kafkalab.labs.results import FaultState, FaultStatus, Outcome, RunResult
from kafkalab.labs.run import LabRun
from kafkalab.labs.session import LabSession, Phase

LIVE_PHASES = (Phase.STARTING, Phase.RUNNING, Phase.DRAINING, Phase.AUDITING, Phase.ANALYZING)
# what every lab offers; a lab with a [fix] or an [incident] adds its exercise's keys
LAB_ACTIONS = frozenset(ConsoleAction) - frozenset(EXERCISE_ACTIONS)
FAULT_MARK = (FaultState.FIRED, FaultState.MISSED, FaultState.FAILED)  # a step ticked off: its turn is over
# a lab's faults that the chart marks by the change they made (a node's, the network's), as a key's would be
MARKED_BY_THEIR_CHANGE = frozenset(NET_ACTIONS) | {a.value for a in NodeAction}


class LabSource(Source):
    """A lab's runs: every console action, the cluster of the current run, a report after each."""

    offers = LAB_ACTIONS

    def __init__(self, session: LabSession, spark: WarmSession | None = None, *,
                 exercise: Exercise | None = None, who: str | None = None) -> None:
        """``spark`` is the warm session given to ``session`` too: started at boot, stopped by the session.
        ``exercise``: the lab's [fix] / [incident] as played here (default: one kept in the state root's
        progress, for a lab that has either); ``who``: the name on its grades (default: :func:`who_am_i`)."""
        self.session = session
        self.spark = spark
        lab = session.lab
        if exercise is None and (lab.fix is not None or lab.incident is not None):
            exercise = Exercise(lab)
        self.exercise = exercise
        self.who = who
        self.offers = LAB_ACTIONS | exercise_actions(lab)
        self._check: GradedCheck | None = None  # the graded check under way
        self.title = f"kafkalab · {session.lab.title}"
        self.label = session.lab.id
        self.platform = platform_short(session.lab.cluster.mode, session.lab.cluster.kafka_version)
        self._cluster: Cluster | None = None
        self._up = False  # the current cluster's brokers have run: its table is asked for
        self.admin_helper = SnapshotHelper()  # the table's polls run in a helper process
        self._server: ControlServer | None = None
        self._logs = NodeLogs()
        self._facts = MetadataFacts()
        self._down = threading.Event()
        self._lock = threading.Lock()

    @property
    def lab(self) -> Lab:
        return self.session.lab

    def cluster_now(self) -> Cluster | None:
        return self.session.cluster

    def boot(self, progress: Callable[[str], None]) -> None:
        """Warm Spark in the background so the first report comes quickly; the cluster starts with a run. Its
        warm-up rounds after the first stop when a run starts: the cluster's start needs the cores."""
        if self.spark is not None:
            self.spark.start(go_on=lambda: not self.session.running)
        progress("press g to start a run")

    # ---- cluster tracking ------------------------------------------------------------------------
    def _track(self) -> Cluster | None:
        """Follow the session's current cluster: logs, whether it is up, the control socket."""
        cluster = self.session.cluster
        with self._lock:
            if cluster is not self._cluster:
                self._close_server()
                self._cluster, self._up = cluster, False
                self._logs = NodeLogs()  # a new cluster's logs, and its truncations from now on
            if cluster is not None and not self._up and any(b.state == NodeState.RUNNING for b in cluster.brokers):
                self._up = True
                write_cluster_file(cluster)
                try:
                    self._server = ControlServer(cluster, self._down, by_hand(self.session))
                except OSError:  # a run dir too deep for a unix socket's path: only this console drives it
                    self._server = None
            if cluster is not None and self._server is not None and not any(
                    n.state.alive for n in cluster.metadata_nodes or cluster.brokers):
                self._close_server()  # the run's teardown stopped the cluster
        return cluster

    def _close_server(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def nodes(self) -> NodesFrame:
        cluster = self._track()
        if cluster is None:
            return NodesFrame(())
        return nodes_frame(cluster, self._logs, self._facts, self._down.is_set())

    def snapshot(self) -> ClusterSnapshot:
        cluster = self._track()
        if cluster is None or not self._up:
            return ClusterSnapshot(time.time(), False, error=no_cluster_words(cluster))
        return self.admin_helper.snapshot(cluster.bootstrap, cluster, SNAPSHOT_WAIT_S)

    def node_action(self, node: str, action: NodeAction) -> None:
        act_by_hand(self.session, node, action)

    def net_request(self, request: NetRequest) -> str:
        cluster = self.session.cluster
        if cluster is None:
            raise NotOffered("no cluster yet: the lab's cluster starts with the run (press g)")
        with by_hand(self.session)(NETWORK, None):
            return apply_net(cluster.net, request, self.net_why_not)

    # ---- the run ---------------------------------------------------------------------------------
    def run(self) -> RunFrame:
        state = self.session.state()
        lab = self.lab
        run = self.session.current
        exercise = self.exercise.view() if self.exercise else None
        checking = exercise is not None and exercise.check.running  # between graded runs too: no verdict yet
        events = run.timeline.events() if run else []
        return RunFrame(
            live=state.phase in LIVE_PHASES or checking, phase=state.phase, producer=state.producer,
            consumers=tuple(state.consumers.values()), throughput=state.throughput,
            markers=markers(events, lab_topics(lab)), lab=lab_view(lab, state.faults, exercise),
            report=None if checking else report_view(state.result), settings=dict(lab.producer.settings),
            message=state.message, leadership=run_leadership(run, lab, events, live=state.phase in LIVE_PHASES),
            processor=state.processor,
        )

    def start_run(self) -> str:
        """Starts the run; says whether it reuses the running cluster or why a fresh one starts. In a fix lab
        it is the demonstration with the attendee's changes (its own expectations, not graded)."""
        self._refuse_while_grading()
        self.session.start_run()
        if self.exercise is not None:
            self.exercise.set_check(CheckStatus())  # Results shows this run's report, not the last check's grade
        run = self.session.current
        return run.cluster_note if run is not None and run.cluster_note else "run started"

    def stop_run(self) -> None:
        """Stops the run; during a graded check, the check (no grade)."""
        check = self._check
        if check is not None:
            check.stop()
        self.session.stop_run()

    def reset(self) -> None:
        self.stop_run()
        self.session.reset()

    def send_control(self, word: str) -> None:
        run = self.session.current
        if run is None or run.cluster is None or run.phase not in LIVE_PHASES:
            raise KafkalabError(f"no run is live: {word!r} goes to running consumers (start a run with g)")
        send_control(run.cluster.bootstrap, self.lab.topic, word, all_partitions=True)

    def choose_players(self, text: str) -> str:
        """Who plays the clients from the next run (``clients java``, ``producer-cmd CMD``...); says what."""
        self._refuse_while_grading()
        if self.session.running:
            raise KafkalabError("who plays the clients changes between runs: stop the run first (x)")
        lab, said = played(self.lab, text)
        if self.exercise is not None:  # the exercise's runs and graded checks are built on its shipped lab
            self.exercise.shipped = played(self.exercise.shipped, text)[0]
            lab = self.exercise.demo_lab() if self.exercise.fix is not None else lab
        self.session.lab = lab
        return said

    def change_setting(self, name: str, value: str) -> None:
        """A producer.* or consumer.* option for the next run (validated like the command line)."""
        if self.exercise is not None and self.exercise.fix is not None:
            self.add_change(f"{name}={value}")
            return
        if self.session.running:
            raise KafkalabError("settings change between runs: stop the run first (x)")
        self.session.lab = self.lab.with_setting(name, value)

    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
        """During a run: on the live topic now (min ISR set, the replicas reassigned for an RF change), and in a
        fix lab kept as a change for the next runs. Between runs: the lab's topic plan for the next run."""
        self._refuse_while_grading()
        kept = ""
        if self.exercise is not None and self.exercise.fix is not None:
            words = [f"rf={replication_factor}" if replication_factor else "", f"min.isr={min_isr}" if min_isr else ""]
            changes = self.exercise.parse(" ".join(["topic", topic, *filter(None, words)]))
            self.exercise.add(changes)
            kept = "; kept as your change " + ", ".join(c.text for c in changes)
        if self.session.running:
            return self._alter_live(topic, replication_factor, min_isr) + kept
        self.session.lab = self.exercise.demo_lab() if kept and self.exercise else \
            self.lab.with_topic(topic, replication_factor, min_isr)
        what = ", ".join(w for w in (f"RF {replication_factor}" if replication_factor else "",
                                     f"min.insync.replicas {min_isr}" if min_isr else "") if w)
        return f"{topic}: {what or 'as planned'} from the next run" + kept

    def _alter_live(self, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
        """The live run's topic, now: min ISR set, an RF change reassigned (as the lab's `replicate` fault does)."""
        run = self.session.current
        if run is None or run.admin is None or run.cluster is None or not self._up:
            raise KafkalabError("the cluster is not up yet: try again in a moment")
        said = []
        if min_isr is not None:
            run.admin.alter_topic_configs(topic, {"min.insync.replicas": str(min_isr)})
            said.append(f"min.insync.replicas {min_isr} now")
        if replication_factor is not None:
            plan = replication_plan(run.admin, topic, replication_factor)
            run.deps.reassign(run.cluster.bootstrap, topic, plan)
            said.append(f"reassigning to RF {replication_factor} during the run (the ISR column shows it complete)")
        return f"{topic}: {'; '.join(said) or 'unchanged'}"

    def _grow_live(self, topic: str, partitions: int) -> str:
        """Partitions added to the live run's topic now (the partition table shows them with its next poll); never
        kept for the next runs: Kafka cannot take them back."""
        self._refuse_while_grading()
        run = self.session.current
        if run is None or run.admin is None or not self._up:
            raise KafkalabError("the cluster is not up yet: try again in a moment")
        return f"{topic}: {run.admin.add_partitions(topic, partitions)}"

    # ---- the exercise ----------------------------------------------------------------------------------
    def _exercise(self) -> Exercise:
        if self.exercise is None:
            raise KafkalabError(f"lab {self.lab.id} has no [fix] or [incident]: `kafkalab labs` marks those that do")
        return self.exercise

    def _refuse_while_grading(self) -> None:
        if self._check is not None:
            raise KafkalabError("a graded check is under way: wait for its grade, or stop it (x)")

    def add_change(self, text: str) -> str:
        """A change for the next runs, or one taken back (refused, in one line, when the lab does not allow it).
        During a run, ``topic T partitions=N`` is no change kept: partitions are added to the live run's topic now;
        between runs it is a change to the topic's plan, as ``topic T rf=3`` is."""
        if self.session.running and (grow := partitions_line(text)) is not None:
            return self._grow_live(*grow)
        exercise = self._exercise()
        line = exercise.read(text)
        self._refuse_while_grading()
        if self.session.running:
            raise KafkalabError("changes apply from the next run: stop the run first (x), or wait for its end")
        said = exercise.apply(line)
        self.session.lab = exercise.demo_lab()
        return said

    def take_hint(self) -> str:
        return self._exercise().take_hint()

    def answer_incident(self, choice: int) -> bool:
        return self._exercise().answer(choice)

    def check_fix(self) -> CheckStatus:
        """The attendee's changes run graded, once per seed, on the kept cluster where it fits; returns when the
        check ended (call it off the event loop: its status goes to the exercise as it changes)."""
        exercise = self._exercise()
        return self._graded(exercise, exercise.attempt(who_am_i(self.who)))  # a change not allowed: refused now

    def give_up(self) -> str:
        """Recorded; the cause and the solution, in words (a fix lab's solution then runs: :meth:`check_solution`)."""
        exercise = self._exercise()
        self._refuse_while_grading()
        return exercise.give_up()

    def check_solution(self) -> CheckStatus:
        """The reference solution run graded after giving up, for the attendee to see it pass (not scored)."""
        exercise = self._exercise()
        return self._graded(exercise, exercise.reference(who_am_i(self.who)))

    def _graded(self, exercise: Exercise, attempt: FixAttempt) -> CheckStatus:
        """The graded check's loop (:class:`GradedCheck`, as `kafkalab fix` runs it) on this console's session."""
        with self._lock:
            self._refuse_while_grading()
            if self.session.running:
                raise KafkalabError("a run is live: stop it first (x), or wait for its end")
            check = self._check = GradedCheck(attempt, self._graded_run, exercise.set_check,
                                              history=exercise.history, time_on_task=exercise.time_on_task)
        seed = self.session.seed
        try:
            return check.run()
        except Exception as exc:  # a run the session could not start: the check judged nothing, said in words
            why = str(exc) if isinstance(exc, KafkalabError) else f"{type(exc).__name__}: {exc}"
            status = CheckStatus(CheckPhase.NOT_GRADED, why=why)
            exercise.set_check(status)
            return status
        finally:
            self.session.lab, self.session.seed = exercise.demo_lab(), seed
            self._check = None

    def _graded_run(self, lab: Lab, seed: int) -> RunResult:
        self.session.lab, self.session.seed = lab, seed
        self.session.start_run()
        while (result := self.session.wait(0.3)) is None:
            if (check := self._check) is not None and check.stopped:  # a stop that came as this run started
                self.session.stop_run()
        return result

    def close(self) -> None:
        """Stop any run (its teardown ends the cluster and clients), the Spark session and the admin helper."""
        if (check := self._check) is not None:
            check.stop()
        self.admin_helper.close()
        self.session.close()
        with self._lock:
            self._close_server()


def no_cluster_words(cluster: Cluster | None) -> str:
    """Why the table has no snapshot: no cluster yet, one starting, or one with no node running (its start
    failed, or the run ended it): never "starting" when nothing starts."""
    if cluster is None:
        return NO_CLUSTER_YET
    ended = any(n.cause not in (None, EndCause.NOT_STARTED) for n in cluster.nodes)  # not one still to start
    if ended and not any(n.state.alive for n in cluster.nodes):
        return CLUSTER_DOWN
    return CLUSTER_STARTING


def sample_line(sample: Sample) -> str:
    """'test-topic/3 @ offset 1,204  run1:producer:17': where the record is, then its message id; one processed
    out of its key's order then names its key and the newer record processed before it ('key 7, after
    run1:producer:40 at test-topic/5 @ offset 3')."""
    where = f"{sample.topic}/{sample.partition} @ offset {sample.offset:,}"
    line = f"{where}  {sample.msg_id}" if sample.msg_id else where
    if sample.key is not None and sample.after_partition is not None and sample.after_offset is not None:
        line += (f"  key {sample.key}, after {sample.after_msg_id} at {sample.topic}/{sample.after_partition} "
                 f"@ offset {sample.after_offset:,}")
    return line


def markers(events: Iterable[Event], topics: Collection[str] | None = None) -> tuple[Marker, ...]:
    """The chart's marks, in time order, from the run's typed events: what was done to a node (by the lab, by
    hand or by kafkalab) or its crash, network changes, the lab's other faults (on its clients, topics and
    groups), and the run's leader changes (:func:`~kafkalab.labs.failover.leader_changes`: those of other topics
    than ``topics`` as their own kind). A lab's node or network fault is marked once, by the change it made (as a
    console key or `kafkalab broker` / `kafkalab net` makes one), not again by its fault line. What came before
    the run's clock (the cluster's start) is not marked."""
    events = list(events)
    out: list[Marker] = []
    for e in (e for e in events if e.t >= 0):
        if isinstance(e, NodeEvent) and action_of(e):
            out.append(Marker(e.t, node_label(e), MarkerKind.FAULT, e.actor))
        elif isinstance(e, NetEvent):
            out.append(Marker(e.t, net_label(e.detail) + by_whom(e.actor), MarkerKind.NET, e.actor))
        elif isinstance(e, FaultEvent) and e.action not in MARKED_BY_THEIR_CHANGE:
            out.append(Marker(e.t, e.detail + by_whom(e.actor), MarkerKind.FAULT, e.actor))
    changes = leader_changes(events, topics)
    out += [Marker(e.t, e.detail, MarkerKind.LEADER, topic=e.topic) for e in changes.lab if e.t >= 0]
    out += [Marker(e.t, e.detail, MarkerKind.OTHER_LEADER, topic=e.topic) for e in changes.other if e.t >= 0]
    return tuple(sorted(out, key=lambda m: m.at_s))


def run_leadership(run: LabRun | None, lab: Lab, events: Sequence[Event], live: bool) -> Leadership:
    """The run's leadership facts; while it is live, with the elections its cluster's latest snapshot shows."""
    snapshot = run.snapshot() if run is not None and live else None
    return leadership(events, lab_topics(lab), snapshot, run.timeline.now() if run is not None else None)


def net_label(detail: str) -> str:
    """A network change's chart label: 'isolate broker-1', 'heal every link' (its timeline line goes on to list
    every rule, too long for the legend)."""
    return detail.partition(":")[0].removeprefix("network ").strip() or detail


def exercise_actions(lab: Lab) -> frozenset[ConsoleAction]:
    """The keys a lab's exercise adds: hints, the graded check, giving up ([fix]); the question ([incident])."""
    out = set()
    if lab.fix is not None:
        out |= {ConsoleAction.CHECK_FIX, ConsoleAction.GIVE_UP}
        if lab.fix.hints:
            out.add(ConsoleAction.TAKE_HINT)
    if lab.incident is not None:
        out |= {ConsoleAction.ANSWER_INCIDENT, ConsoleAction.GIVE_UP}
    return frozenset(out)


def players_markdown(lab: Lab) -> str:
    """Which roles a foreign command plays, and what kafkalab then cannot judge ("" when its own clients play)."""
    played = [f"- **{role}**: `{command}`" for role, command in lab.commands.items()]
    if not played:
        return ""
    blind = metrics.foreign_blind(lab)
    unseen = f"\n\nNot observed with them (they judge nothing): {', '.join(blind)}." if blind else ""
    return "## Played by your command\n\n" + "\n".join(played) + unseen + "\n\n"


def lab_view(lab: Lab, faults: list[FaultStatus], exercise: ExerciseView | None = None) -> LabView:
    steps = tuple(TimelineStep(f.text, f.state in FAULT_MARK, "" if f.state in (FaultState.PENDING, FaultState.FIRED)
                               else str(f.state) + (f": {f.detail}" if f.detail else "")) for f in faults)
    instructions = players_markdown(lab) + lab.instructions + (
        f"\n\n**Why it works every time:** {lab.why_deterministic}" if lab.why_deterministic else "")
    here = (lab.cluster.mode, lab.cluster.kafka_version)
    platforms = tuple(PlatformRun(platform_name(m, v), lab.run_command(m, v), (m, v) == here)
                      for m, v in lab.cluster.platforms())
    return LabView(lab.id, lab.title, instructions, steps, exercise, platforms)


def report_view(result: RunResult | None) -> ReportView | None:
    if result is None:
        return None
    if result.report is None and not result.verdict:  # ended before its analysis (the verdict is the analysis'):
        why = "; ".join(result.failures[:2]) or str(result.outcome)  # why, and no counts that would read as a report
        return ReportView(why, False, {}, {}, analysed=False)
    verdict = result.verdict or result.error or str(result.outcome)
    failures = result.failures
    if failures and result.outcome != Outcome.PASSED:
        verdict += f" — {'; '.join(failures[:2])}"
    report = result.report
    if report is None:  # a replay of a run dir without report.json: the verdict, no counts
        return ReportView(verdict, result.passed, dict.fromkeys(CLASSES, 0), {}, {})
    spans_topics = len({row.topic for row in report.per_partition}) > 1
    per_partition = {f"{row.topic}/{row.partition}" if spans_topics else str(row.partition):
                     {"leader_changes": row.leader_changes or 0, **{k: v or 0 for k, v in row.counts.items()}}
                     for row in sorted(report.per_partition, key=lambda r: (r.topic, r.partition))}
    totals = {k: report.classes.get(k) or 0 for k in CLASSES}
    samples = {name: tuple(sample_line(s) for s in found) for name, found in report.samples.items()}
    return ReportView(verdict, result.passed, totals, per_partition, samples, loss=loss_split(report.classes),
                      failed=failed_reasons(report.failed_by_reason) if report.failed_by_reason else "")
