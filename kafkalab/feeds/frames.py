"""The frames a source hands the console's panes: frozen, built in thread workers, rendered on the loop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kafkalab.admin import ClusterSnapshot
from kafkalab.clients.processor import ProcessorStats
from kafkalab.clients.stats import ConsumerStats, ProducerStats
from kafkalab.cluster import NodeInfo
from kafkalab.cluster.quorum import QuorumState
from kafkalab.cluster.truncations import Truncation
from kafkalab.feeds.net_view import NetView
from kafkalab.labs.events import Actor
from kafkalab.labs.failover import Leadership
from kafkalab.labs.graded_check import CheckStatus
from kafkalab.labs.results import Phase

# snapshot errors that are states, not failures: the table says them plainly, not as UNREACHABLE. Each also
# says the source has no cluster that answered yet (none, a fresh one starting, or the question unanswered):
# nothing the console built from an earlier cluster (its rows, waits, leader counts, groups) holds any more.
NO_CLUSTER_YET = "no cluster yet: g starts the lab's run and its cluster"
CLUSTER_STARTING = "the cluster is starting"
CLUSTER_DOWN = "no node of the cluster runs: g starts the next run and a cluster"  # a failed start, the run's end
PORTS_TAKEN = "another kafkalab cluster: choose free ports, attach or quit"
NO_CLUSTER_STATES = (NO_CLUSTER_YET, CLUSTER_STARTING, CLUSTER_DOWN, PORTS_TAKEN)


def no_cluster_yet(snapshot: ClusterSnapshot) -> bool:
    """The snapshot says the source has no answering cluster yet (see :data:`NO_CLUSTER_STATES`): a fresh one
    starts, so every view built from the last one is cleared, not kept greyed as for one that stopped answering."""
    return not snapshot.reachable and snapshot.error in NO_CLUSTER_STATES


@dataclass(frozen=True)
class NodesFrame:
    """Every node's info, the log lines each wrote since the previous frame and the truncations they told,
    ZooKeeper's client count."""

    infos: tuple[NodeInfo, ...]
    new_log_lines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    zk_connections: int | None = None
    down_requested: bool = False  # `kafkalab cluster down` asked the console's cluster to stop
    quorum: QuorumState | None = None  # KRaft mode: the controllers' quorum (None in ZooKeeper mode)
    net: NetView | None = None  # the network faults in force (None: the cluster has no network-fault proxies)
    truncations: tuple[Truncation, ...] = ()  # what the brokers' new lines say they cut off, read by the source


class MarkerKind(StrEnum):
    FAULT = "fault"  # something done to a node (or to the run's clients and topics), or a node's crash
    NET = "net"  # a network fault applied or healed
    LEADER = "leader"  # a leader change of the lab's topics
    OTHER_LEADER = "other-leader"  # of another topic (``__consumer_offsets``): counted apart, labelled as its own


@dataclass(frozen=True)
class Marker:
    """A point on the run's time axis worth marking on the chart: a fault (with who did it), a leader change (with
    its topic)."""

    at_s: float
    label: str
    kind: MarkerKind = MarkerKind.FAULT
    actor: Actor | None = None
    topic: str = ""


@dataclass(frozen=True)
class TimelineStep:
    label: str
    done: bool
    detail: str = ""


@dataclass(frozen=True)
class HintOffer:
    """The next hint: its number (1-based), its cost in points, and how long until it is offered (0: now)."""

    number: int
    cost: int
    ready_in_s: float

    @property
    def ready(self) -> bool:
        return self.ready_in_s <= 0


@dataclass(frozen=True)
class IncidentView:
    """A lab told as a ticket: the cause (``explanation``) is "" until diagnosed or given up; the cure longer."""

    ticket: str  # markdown
    question: str
    choices: tuple[str, ...]
    revealed: bool
    explanation: str = ""
    wrong_answers: int = 0
    cure: str = ""  # how it is fixed: "" until fixed or given up (naming the cause is not fixing it)


@dataclass(frozen=True)
class ExerciseView:
    """A lab's break-fix exercise as the Lab tab shows it: the task, what may change, the attendee's changes,
    hints, the best score; an incident's ticket. ``fixable``: the lab has a [fix] (a graded check to run)."""

    fixable: bool
    task: str = ""  # markdown
    allow: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    hints_taken: tuple[str, ...] = ()
    hints_total: int = 0
    next_hint: HintOffer | None = None
    best_score: int = 0
    fixed: bool = False
    given_up: bool = False
    runs: int = 0  # graded runs per check
    check: CheckStatus = field(default_factory=CheckStatus)  # the graded check's: running, graded, not graded...
    solution: tuple[str, ...] = ()  # the reference solution's changes, once given up or fixed
    incident: IncidentView | None = None
    solved: bool = False  # fixed or given up (an incident without a fix: diagnosed): the walkthrough may show


@dataclass(frozen=True)
class PlatformRun:
    """A metadata mode and Kafka version a lab runs on, in words, with the command that runs it there."""

    name: str  # "KRaft mode on Kafka 4.4.0"
    command: str  # "kafkalab run leader-failover --kafka-version 4.4.0"
    current: bool = False  # the one this console runs on


@dataclass(frozen=True)
class LabView:
    lab_id: str
    title: str
    instructions: str  # markdown
    steps: tuple[TimelineStep, ...] = ()
    exercise: ExerciseView | None = None  # a lab with a [fix] or an [incident]
    platforms: tuple[PlatformRun, ...] = ()  # every platform the lab runs on, this run's marked

    @property
    def platform(self) -> PlatformRun | None:
        """The platform this console runs the lab on."""
        return next((p for p in self.platforms if p.current), None)


@dataclass(frozen=True)
class ReportView:
    """The analysis report as the results pane shows it."""

    verdict: str
    ok: bool
    totals: Mapping[str, int]
    # each row's counts by its label: the partition ("0"), or "topic/0" where the report spans topics (a pipeline's
    # input and output), in the report's order
    per_partition: Mapping[str, Mapping[str, int]]
    samples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    analysed: bool = True  # False: the run ended (failed, stopped) before its analysis; the verdict says why
    loss: str = ""  # lost split into lost by the brokers and missed by the consumers, where an audit ran
    failed: str = ""  # the failed sends by the producer's error ("412 delivery timeout (_MSG_TIMED_OUT)"), if any


@dataclass(frozen=True)
class RunFrame:
    live: bool = False
    phase: Phase = Phase.IDLE
    producer: ProducerStats | None = None
    consumers: tuple[ConsumerStats, ...] = ()
    throughput: tuple[tuple[float, float], ...] = ()  # (seconds into the run, acknowledged/s)
    markers: tuple[Marker, ...] = ()
    lab: LabView | None = None
    report: ReportView | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    message: str = ""  # what the run does now ("creating topic test-topic ...", "reusing the running cluster")
    leadership: Leadership = field(default_factory=Leadership)  # leader changes, failovers, elections: the core's
    processor: tuple[ProcessorStats, ...] = ()  # the lab's processor's instances, the live one last

    @property
    def exercise(self) -> ExerciseView | None:
        return self.lab.exercise if self.lab is not None else None

    @property
    def check(self) -> CheckStatus:
        """The graded check's status (idle for a lab without an exercise): the exercise's, not a copy."""
        return self.exercise.check if self.exercise is not None else CheckStatus()

    @property
    def electing(self) -> str:
        """The elections under way, in words ('electing a leader for test-topic/0 (broker 2 killed 1.2 s ago)')."""
        return "; ".join(e.line for e in self.leadership.elections) if self.live else ""
