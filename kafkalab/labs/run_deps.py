"""What a run builds and calls outside itself: the cluster, the admin client, the cluster watch's snapshots
(in a helper process), the producer and consumers, the audit and the analysis.

:class:`~kafkalab.labs.run.LabRun` takes them as factories, so a run's logic (fault order, triggers, drain,
judging) can be tested with fakes in milliseconds; :func:`real_deps` builds the real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kafkalab import KAFKA_VERSION
from kafkalab import kafka_install as kdist
from kafkalab.admin import Admin, ClusterSnapshot
from kafkalab.admin.snapshot_helper import SnapshotHelper
from kafkalab.analysis.report import Report
from kafkalab.clients import Consumer, Producer
from kafkalab.clients.stats import EventCallback
from kafkalab.cluster import Cluster, ClusterSpec
from kafkalab.errors import KafkalabError
from kafkalab.labs.model import ConsumerPlan, ProducerPlan

ClusterFactory = Callable[[ClusterSpec], Cluster]
AdminFactory = Callable[[str], Admin]  # bootstrap -> admin client
ADMIN_TIMEOUT_S = 1.5  # the run's admin requests (the watch's too): a killed broker must not hold a poll long


class WatchSnapshots(Protocol):
    """What the run's cluster watch polls (internal topics too, no end offsets); the run closes it."""

    def snapshot(self) -> ClusterSnapshot: ...

    def close(self) -> None: ...


WatchSnapshotsFactory = Callable[[str, Path], WatchSnapshots]  # (bootstrap, run dir) -> the watch's snapshots
# (plan, log dir, bootstrap, on_event, seed) -> producer; the log dir's name is the run id
ProducerFactory = Callable[[ProducerPlan, Path, str, EventCallback, int], Producer]
ConsumerFactory = Callable[[ConsumerPlan, Path, str, EventCallback], Consumer]
Auditor = Callable[[str, str, Path], Path]  # (bootstrap, topic, run dir) -> audit log
# (run dir, audit logs, leader changes per partition) -> the report
Analyzer = Callable[[Path, list[Path], Mapping[tuple[str, int], int]], Report]
ControlSender = Callable[[str, str, str], int]  # (bootstrap, topic, word) -> partitions sent to
Reassigner = Callable[[str, str, dict[int, list[int]]], str]  # (bootstrap, topic, plan) -> the tool's line


@dataclass(frozen=True)
class RunTiming:
    tick_s: float = 0.1  # how often waits look again
    assign_timeout_s: float = 60.0  # a consumer's first partitions
    drain_poll_s: float = 0.25
    drain_quiet_s: float = 1.0  # caught up and nothing new processed for this long: drained
    node_timeout_s: float = 90.0  # a node reaching the state asked of it
    cluster_timeout_s: float = 180.0
    kraft_cluster_timeout_s: float = 240.0  # a KRaft cluster formats storage and elects its quorum first
    active_controller_wait_s: float = 20.0  # KRaft: a busy quorum helper may name the active controller late


@dataclass(frozen=True)
class RunDeps:
    cluster: ClusterFactory
    admin: AdminFactory
    producer: ProducerFactory
    consumer: ConsumerFactory
    audit: Auditor
    analyze: Analyzer
    send_control: ControlSender
    reassign: Reassigner
    watch_snapshots: WatchSnapshotsFactory
    timing: RunTiming = field(default_factory=RunTiming)


class HelperWatchSnapshots:
    """The watch's snapshots asked in a helper process (:mod:`kafkalab.admin.snapshot_helper`, started on the
    first poll): a librdkafka crash while a lab kills brokers costs the watch one poll, seen as an unreachable
    cluster, not the console the run lives in. Its log: ``snapshot-helper.log`` in the run dir."""

    def __init__(self, bootstrap: str, run_dir: Path) -> None:
        self.bootstrap = bootstrap
        self.helper = SnapshotHelper(run_dir / "snapshot-helper.log")

    def snapshot(self) -> ClusterSnapshot:
        return self.helper.snapshot(self.bootstrap, self, ADMIN_TIMEOUT_S + 0.5, ADMIN_TIMEOUT_S,
                                    offsets=False, internal=True)

    def close(self) -> None:
        self.helper.close()


def lab_distribution(version: str = KAFKA_VERSION) -> kdist.Distribution:
    """The Kafka a lab runs on (its ``[cluster] kafka_version``); one line naming the fetch command when absent."""
    found = kdist.locate(version=version)
    if found.version() != version:
        raise KafkalabError(f"the lab runs on Kafka {version} but KAFKA_HOME holds {found.version()}: unset "
                            f"KAFKA_HOME and run `kafkalab fetch --kafka-version {version}`")
    return found


def real_deps(distribution: kdist.Distribution | None = None, spark: Any = None,
              version: str = KAFKA_VERSION) -> RunDeps:
    """The real cluster (JVMs), admin API, clients, audit and Spark analysis (``spark``: a warm session) on
    Kafka ``version`` unless ``distribution`` is given."""
    dist_cache: list[kdist.Distribution] = [distribution] if distribution is not None else []

    def dist() -> kdist.Distribution:
        if not dist_cache:
            dist_cache.append(lab_distribution(version))
        return dist_cache[0]

    def producer(plan: ProducerPlan, log_dir: Path, bootstrap: str, on_event: EventCallback, seed: int) -> Producer:
        return Producer(plan.config, log_dir, log_dir.name, bootstrap=bootstrap, on_event=on_event, seed=seed)

    def consumer(plan: ConsumerPlan, log_dir: Path, bootstrap: str, on_event: EventCallback) -> Consumer:
        return Consumer(plan.config, log_dir, bootstrap=bootstrap, on_event=on_event)

    def audit(bootstrap: str, topic: str, run_dir: Path) -> Path:
        from kafkalab.clients.audit import audit_topic

        return audit_topic(bootstrap, topic, run_dir)[0]

    def analyze(run_dir: Path, audits: list[Path], leader_changes: Mapping[tuple[str, int], int]) -> Report:
        from kafkalab.analysis import analyze as spark_analyze
        from kafkalab.analysis.run_logs import run_logs

        logs = run_logs(run_dir)  # kafkalab's own and foreign clients' (course-format) logs
        report = spark_analyze(logs.producer, logs.consumer, audits, session=spark, leader_changes=leader_changes)
        report.write_json(run_dir / "report.json")
        return report

    def send_control(bootstrap: str, topic: str, word: str) -> int:
        from kafkalab.clients.control_words import send_control as send

        return send(bootstrap, topic, word, all_partitions=True)

    def reassign(bootstrap: str, topic: str, plan: dict[int, list[int]]) -> str:
        from kafkalab.admin import reassign as run_reassignment

        return run_reassignment(dist(), bootstrap, topic, plan)

    return RunDeps(
        cluster=lambda spec: Cluster(spec, dist()),
        admin=lambda bootstrap: Admin(bootstrap, timeout_s=ADMIN_TIMEOUT_S),
        producer=producer, consumer=consumer, audit=audit, analyze=analyze, send_control=send_control,
        reassign=reassign, watch_snapshots=HelperWatchSnapshots,
    )
