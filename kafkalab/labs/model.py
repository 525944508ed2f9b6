"""What a lab file says, once validated: cluster, topics, clients, a fault timeline and expectations."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafkalab import KAFKA_VERSION
from kafkalab.clients.foreign_command import check_template
from kafkalab.clients.options import ConsumerConfig, ProcessorConfig, ProducerConfig, canonical_settings
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.distribution import has_kraft_only
from kafkalab.labs.expectations import Expectation
from kafkalab.labs.faults import Fault
from kafkalab.labs.fix import FixExercise, Incident

MODE_NAMES = {"zookeeper": "ZooKeeper", "kraft": "KRaft"}  # a metadata mode as the course says it
MODE_SHORT = {"zookeeper": "ZK", "kraft": "KRaft"}  # the same where a table has little room


def platform_name(mode: str, version: str) -> str:
    """A platform in words: "KRaft mode on Kafka 4.4.0"."""
    return f"{MODE_NAMES[mode]} mode on Kafka {version}"


def platform_short(mode: str, version: str) -> str:
    """The same where a line has little room: "KRaft · Kafka 4.4.0"."""
    return f"{MODE_NAMES[mode]} · Kafka {version}"


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
    kafka_version: str = KAFKA_VERSION  # the distribution this run uses (`kafkalab fetch --kafka-version V`)
    kafka_versions: tuple[str, ...] = (KAFKA_VERSION,)  # every release the lab runs on; the first is its own
    net_proxies: bool | None = None  # every link through the network-fault proxy; None: the default (on)

    def platforms(self) -> tuple[tuple[str, str], ...]:
        """Every (mode, Kafka version) the lab runs on: each of its modes on each of its versions that has it."""
        return tuple((m, v) for v in self.kafka_versions for m in self.modes
                     if not (m == "zookeeper" and has_kraft_only(v)))

    def modes_by_version(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """:meth:`platforms` grouped by Kafka release: (version, the lab's modes on it), in the lab's order."""
        return tuple((v, tuple(m for m, on in self.platforms() if on == v)) for v in self.kafka_versions)


@dataclass(frozen=True)
class TopicPlan:
    name: str
    partitions: int = 6
    replication_factor: int = 3
    configs: dict[str, str] = field(default_factory=dict)
    create: bool = True  # False: a `create-topic` fault creates it during the run


@dataclass(frozen=True)
class ConsumerPlan:
    """One consumer instance; ``local_id`` names it (``consumer N`` in faults and expectations).

    ``settings`` by the course's option names (one given by Kafka's name is kept under its option's),
    ``config`` the same validated: build it with :meth:`of`.
    """

    local_id: int
    settings: Mapping[str, str]
    config: ConsumerConfig
    start: bool = True  # False: a `start` fault starts it
    wait_assigned: bool = True  # the producer starts only once this consumer has partitions
    command: str | None = None  # a foreign command plays it (clients/foreign.py); None: kafkalab's own consumer

    @classmethod
    def of(cls, local_id: int, settings: Mapping[str, str], start: bool = True,
           wait_assigned: bool = True, command: str | None = None) -> ConsumerPlan:
        """KafkalabError when a setting is not valid."""
        return cls(local_id, canonical_settings(settings, "consumer"), ConsumerConfig.from_settings(settings), start,
                   wait_assigned, command)

    def with_settings(self, changes: Mapping[str, str]) -> ConsumerPlan:
        return ConsumerPlan.of(self.local_id, {**self.settings, **changes}, self.start, self.wait_assigned,
                               self.command)

    @property
    def name(self) -> str:
        return f"consumer-{self.local_id}"

    @property
    def group(self) -> str:
        return self.config.group_id


@dataclass(frozen=True)
class ProducerPlan:
    """``settings`` by the course's option names (one given by Kafka's name is kept under its option's),
    ``config`` the same validated: build it with :meth:`of`."""

    settings: Mapping[str, str]
    config: ProducerConfig
    start: bool = True
    command: str | None = None  # a foreign command plays it (clients/foreign.py); None: kafkalab's own producer

    @classmethod
    def of(cls, settings: Mapping[str, str], start: bool = True, command: str | None = None) -> ProducerPlan:
        """KafkalabError when a setting is not valid."""
        return cls(canonical_settings(settings, "producer"), ProducerConfig.from_settings(settings), start, command)

    def with_settings(self, changes: Mapping[str, str]) -> ProducerPlan:
        return ProducerPlan.of({**self.settings, **changes}, self.start, self.command)


@dataclass(frozen=True)
class ProcessorPlan:
    """The lab's consume-transform-produce client (``[processor]``): ``settings`` by the course's option names,
    ``config`` the same validated: build it with :meth:`of`."""

    settings: Mapping[str, str]
    config: ProcessorConfig
    start: bool = True  # False: a `start` fault starts it

    @classmethod
    def of(cls, settings: Mapping[str, str], start: bool = True) -> ProcessorPlan:
        """KafkalabError when a setting is not valid."""
        return cls(canonical_settings(settings, "processor"), ProcessorConfig.from_settings(settings), start)

    def with_settings(self, changes: Mapping[str, str]) -> ProcessorPlan:
        return ProcessorPlan.of({**self.settings, **changes}, self.start)


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
    heal_before_audit: bool = True  # bring back for the audit the down nodes a partition needs (labs/audit_heal.py)
    source: Path | None = None
    fix: FixExercise | None = None  # the lab as an exercise: what may change, what must then hold
    incident: Incident | None = None  # the lab told as a ticket: symptoms, then the root cause to name
    actions: tuple[Fault, ...] = ()  # a fix attempt's live actions: fired beside the timeline, in their order
    changes: tuple[str, ...] = ()  # the attendee's changes this lab was made with (as the prompt writes them)
    processor: ProcessorPlan | None = None  # reads the producer's topic, writes another that consumers may read

    @property
    def topic(self) -> str:
        """The producer's topic: the one audited and analysed."""
        return self.producer.config.topic

    def file_sha256(self) -> str:
        """The lab file's fingerprint ("" for a lab built in code): a run and its grade name the same."""
        if self.source is None:
            return ""
        try:
            return hashlib.sha256(self.source.read_bytes()).hexdigest()
        except OSError:
            return ""

    def on(self, mode: str | None = None, version: str | None = None) -> Lab:
        """The same lab on another metadata mode and/or Kafka release (None: the lab's own, or what the other
        implies: 4.x means KRaft, ZooKeeper means a 3.x). KafkalabError for one the lab is not written for."""
        c = self.cluster
        if version is not None and version not in c.kafka_versions:
            raise KafkalabError(f"lab {self.id} runs on Kafka {' and '.join(c.kafka_versions)}, not {version}: "
                                f"give --kafka-version {' or '.join(c.kafka_versions)}")
        if mode is not None and mode not in c.modes:
            raise KafkalabError(f"lab {self.id} is written for {' and '.join(c.modes)} mode, not {mode}: "
                                f"run it without --mode, or pick a lab whose [cluster] modes include {mode}")
        if version is None:
            wanted = mode or c.mode
            version = next((v for m, v in c.platforms() if m == wanted and v == c.kafka_version), None) or next(
                v for m, v in c.platforms() if m == wanted)
        if mode is None:
            mode = c.mode if (c.mode, version) in c.platforms() else "kraft"
        if (mode, version) not in c.platforms():
            raise KafkalabError(f"Kafka {version} has no ZooKeeper mode (removed in 4.0): run lab {self.id} with "
                                f"--mode kraft, or on --kafka-version {KAFKA_VERSION}")
        return replace(self, cluster=replace(c, mode=mode, kafka_version=version))

    @property
    def platform_words(self) -> str:
        """Where the lab runs, for a listing: a line per Kafka release (major.minor) with its modes there,
        "3.9 ZK · KRaft" then "4.4 KRaft" (Kafka 4 has no ZooKeeper)."""
        return "\n".join(f"{'.'.join(v.split('.')[:2])} {' · '.join(MODE_SHORT[m] for m in modes)}"
                         for v, modes in self.cluster.modes_by_version())

    def run_flags(self, mode: str, version: str) -> tuple[str, ...]:
        """The `kafkalab run` options that put the lab on (mode, version), whichever platform it is on now:
        --mode unless the lab has one mode or the version implies KRaft (4.x), --kafka-version unless it is
        the lab's own (the first of its kafka_versions)."""
        own_version = version == self.cluster.kafka_versions[0]
        implied = len(self.cluster.modes) == 1 or (not own_version and has_kraft_only(version))
        return (() if implied else ("--mode", mode)) + (() if own_version else ("--kafka-version", version))

    def run_command(self, mode: str, version: str) -> str:
        """`kafkalab run ID` with the :meth:`run_flags` for (mode, version)."""
        return " ".join(("kafkalab run", self.id, *self.run_flags(mode, version)))

    @property
    def judged_metrics(self) -> set[str]:
        """Every metric the lab's expectations name, its own and its fix's."""
        expectations = (*self.expectations, *(self.fix.expectations if self.fix else ()))
        return {name for e in expectations for name in (e.metric, e.other) if name}

    @property
    def groups(self) -> set[str]:
        """The consumer groups the lab's clients are in (its processor's too)."""
        return {c.group for c in self.consumers} | ({self.processor.config.group_id} if self.processor else set())

    def consumer(self, local_id: int) -> ConsumerPlan:
        for c in self.consumers:
            if c.local_id == local_id:
                return c
        raise KeyError(local_id)

    def with_setting(self, name: str, value: str) -> Lab:
        """This lab with a ``producer.*`` option (or a ``consumer.*`` one, for every consumer) changed;
        KafkalabError when the result is not valid, as on the command line."""
        if name.startswith("producer."):
            return replace(self, producer=self.producer.with_settings({name: value}))
        if name.startswith("consumer."):
            return replace(self, consumers=tuple(c.with_settings({name: value}) for c in self.consumers))
        if name.startswith("processor.") and self.processor is not None:
            return replace(self, processor=self.processor.with_settings({name: value}))
        roles = "producer.*, consumer.* or processor.*" if self.processor is not None else "producer.* or consumer.*"
        raise KafkalabError(f"{name!r} is not a {roles} option: e.g. producer.acks=all")

    def with_commands(self, producer: str | None = None, consumer: str | None = None) -> Lab:
        """This lab with its producer and/or every consumer played by a foreign command (checked: see
        :func:`~kafkalab.clients.foreign_command.check_template`)."""
        lab = self
        if producer is not None:
            lab = replace(lab, producer=replace(lab.producer, command=check_template(producer, "--producer-cmd")))
        if consumer is not None:
            command = check_template(consumer, "--consumer-cmd")
            lab = replace(lab, consumers=tuple(replace(c, command=command) for c in lab.consumers))
        return lab

    @property
    def commands(self) -> dict[str, str]:
        """Role (``producer``, ``consumer-1``...) -> the foreign command that plays it."""
        plans = [("producer", self.producer.command), *((c.name, c.command) for c in self.consumers)]
        return {role: command for role, command in plans if command}

    @property
    def command_texts(self) -> tuple[str, ...]:
        """The commands as a graded run's changes name them: a code fix is part of what was graded."""
        return tuple(f"{role} played by: {command}" for role, command in self.commands.items())

    @property
    def foreign_roles(self) -> tuple[str, ...]:
        """The roles a foreign command plays in this lab."""
        return tuple(self.commands)

    def with_topic(self, topic: str, replication_factor: int | None = None, min_isr: int | None = None) -> Lab:
        """This lab with ``topic``'s replication factor and/or ``min.insync.replicas`` changed for the next run;
        a topic the lab does not have is added (6 partitions, replication factor 1 unless given)."""
        if replication_factor is not None and not 1 <= replication_factor <= self.cluster.brokers:
            raise KafkalabError(f"rf={replication_factor} does not fit the lab's {self.cluster.brokers} brokers: "
                                f"give 1..{self.cluster.brokers}")
        configs = {} if min_isr is None else {"min.insync.replicas": str(min_isr)}
        plans = list(self.topics)
        for i, plan in enumerate(plans):
            if plan.name == topic:
                plans[i] = replace(plan, replication_factor=replication_factor or plan.replication_factor,
                                   configs={**plan.configs, **configs})
                break
        else:
            plans.append(TopicPlan(topic, replication_factor=replication_factor or 1, configs=configs))
        return replace(self, topics=tuple(plans))
