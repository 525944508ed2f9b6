"""What a lab file says, once validated: cluster, topics, clients, a fault timeline and expectations."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from kafkalab.labs.expectations import Expectation
from kafkalab.labs.faults import Fault


@dataclass(frozen=True)
class ClusterPlan:
    brokers: int = 3
    overrides: dict[str, str] = field(default_factory=dict)
    broker_overrides: dict[int, dict[str, str]] = field(default_factory=dict)
    # brokers stopped (controlled) before the topics are created: "the cluster before it grew"
    stopped: tuple[int, ...] = ()
    mode: str = "zookeeper"  # the mode a plain `kafkalab run` uses: the first of ``modes``
    modes: tuple[str, ...] = ("zookeeper",)  # every mode the lab's lesson shows in
    controllers: int = 1  # KRaft controllers (KRaft mode only)
    combined: bool = False


@dataclass(frozen=True)
class TopicPlan:
    name: str
    partitions: int = 6
    replication_factor: int = 3
    configs: dict[str, str] = field(default_factory=dict)
    create: bool = True  # False: a `create-topic` fault creates it during the run


@dataclass(frozen=True)
class ConsumerPlan:
    """One consumer instance; ``local_id`` names it (``consumer N`` in faults and expectations)."""

    local_id: int
    settings: dict[str, str]
    start: bool = True  # False: a `start` fault starts it
    wait_assigned: bool = True  # the producer starts only once this consumer has partitions

    @property
    def name(self) -> str:
        return f"consumer-{self.local_id}"

    @property
    def group(self) -> str:
        return self.settings.get("consumer.group-id", "test-app")


@dataclass(frozen=True)
class ProducerPlan:
    settings: dict[str, str]
    start: bool = True


@dataclass(frozen=True)
class Lab:
    id: str
    title: str
    teaches: str
    instructions: str
    why_deterministic: str
    cluster: ClusterPlan
    topics: tuple[TopicPlan, ...]
    producer: ProducerPlan
    consumers: tuple[ConsumerPlan, ...]
    faults: tuple[Fault, ...]
    expectations: tuple[Expectation, ...]
    short: bool = False  # quick enough for the end-to-end tests
    max_duration_s: float = 150.0  # the run is ended (and fails) past this
    drain_s: float = 20.0  # at most this long for consumers to catch up after the producer
    audit: bool = True
    heal_before_audit: bool = True  # start stopped brokers before the audit reads every partition
    source: Path | None = None

    @property
    def topic(self) -> str:
        """The producer's topic: the one audited and analysed."""
        return self.producer.settings.get("producer.topic", "test-topic")

    def with_mode(self, mode: str) -> Lab:
        """The same lab on another metadata mode; refused (ValueError) for a mode the lab is not written for."""
        if mode not in self.cluster.modes:
            raise ValueError(f"lab {self.id} is written for {' and '.join(self.cluster.modes)} mode, not {mode}: "
                             f"run it without --mode, or pick a lab whose [cluster] modes include {mode}")
        return replace(self, cluster=replace(self.cluster, mode=mode))

    def consumer(self, local_id: int) -> ConsumerPlan:
        for c in self.consumers:
            if c.local_id == local_id:
                return c
        raise KeyError(local_id)
