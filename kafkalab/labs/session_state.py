"""A session's state as :meth:`~kafkalab.labs.session.LabSession.state` copies it: read by the console's feeds
and by the run's recorder (:mod:`kafkalab.labs.recording`), which the session module imports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafkalab.admin import ClusterSnapshot
from kafkalab.clients import ConsumerStats, ProducerStats
from kafkalab.clients.processor import ProcessorStats
from kafkalab.cluster import NodeInfo
from kafkalab.labs.results import ExpectationResult, FaultStatus, Phase, RunResult


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
    throughput: tuple[tuple[float, float], ...] = ()  # the run's chart: (seconds into the run, acknowledged/s)
    processor: tuple[ProcessorStats, ...] = ()  # the lab's processor's instances, the live one last
