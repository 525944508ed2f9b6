"""The frames a source hands the console's panes: frozen, built in thread workers, rendered on the loop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from kafkalab.clients.stats import ConsumerStats, ProducerStats
from kafkalab.cluster import NodeInfo
from kafkalab.cluster.quorum import QuorumState
from kafkalab.labs.results import Phase

# snapshot errors that are states, not failures: the table says them plainly, not as UNREACHABLE
NO_CLUSTER_YET = "no cluster yet: g starts the lab's run and its cluster"
CLUSTER_STARTING = "the cluster is starting"
PORTS_TAKEN = "ports taken: choose free ports, attach or quit"


@dataclass(frozen=True)
class NodesFrame:
    """Every node's info, the log lines each wrote since the previous frame, ZooKeeper's client count."""

    infos: tuple[NodeInfo, ...]
    new_log_lines: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    zk_connections: int | None = None
    down_requested: bool = False  # `kafkalab cluster down` asked the console's cluster to stop
    quorum: QuorumState | None = None  # KRaft mode: the controllers' quorum (None in ZooKeeper mode)


class MarkerKind(StrEnum):
    FAULT = "fault"
    LEADER = "leader"


@dataclass(frozen=True)
class Marker:
    """A point on the run's time axis worth marking on the chart: a fault, a leader change."""

    at_s: float
    label: str
    kind: MarkerKind = MarkerKind.FAULT


@dataclass(frozen=True)
class TimelineStep:
    label: str
    done: bool
    detail: str = ""


@dataclass(frozen=True)
class LabView:
    lab_id: str
    title: str
    instructions: str  # markdown
    steps: tuple[TimelineStep, ...] = ()


@dataclass(frozen=True)
class ReportView:
    """The analysis report as the results pane shows it."""

    verdict: str
    ok: bool
    totals: Mapping[str, int]
    per_partition: Mapping[int, Mapping[str, int]]
    samples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    analysed: bool = True  # False: the run ended (failed, stopped) before its analysis; the verdict says why


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
