"""Cluster snapshots and topic operations over the admin API, with short timeouts everywhere.

"Broker unreachable" is a state: :meth:`Admin.snapshot` never raises for it, it returns what is known.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalab.admin.broker_wire import Unanswered
from kafkalab.admin.metadata_source import MetadataSource, end_offsets
from kafkalab.admin.snapshot import ClusterSnapshot, PartitionState, TopicDescription
from kafkalab.errors import KafkalabError, short_error, unreachable

if TYPE_CHECKING:  # librdkafka is loaded by the first client, never by importing this module (the console)
    from confluent_kafka.admin import AdminClient, ConfigEntry, OffsetSpec

REQUEST_TIMEOUT_S = 1.0
# A topic creation unanswered this long (no controller took it, as in a KRaft quorum without a majority, or
# librdkafka asked a broker that never answers for it), or answered NOT_CONTROLLER (after the controller moved
# librdkafka may keep asking the old one), is asked again through a new client, which learns the controller.
CREATE_ATTEMPT_S = 15.0
TIMED_OUT = -185  # librdkafka's KafkaError._TIMED_OUT, named without loading it


def _admin_client(bootstrap: str) -> AdminClient:
    from confluent_kafka.admin import AdminClient

    return AdminClient({
        "bootstrap.servers": bootstrap,
        "socket.connection.setup.timeout.ms": 1000,
        "reconnect.backoff.max.ms": 1000,
        "log_level": 0,
    }, logger=_SilentLogger())


class Admin:
    """A long-lived admin client for one cluster."""

    def __init__(self, bootstrap: str, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self._client = _admin_client(bootstrap)
        self._metadata = MetadataSource(bootstrap, timeout_s * 0.5)
        self._min_isr: dict[str, tuple[float, int]] = {}
        self._default_min_isr = 1

    # ---- snapshots -------------------------------------------------------------------------------
    def snapshot(self, offsets: bool = True, internal: bool = False, wait_s: float | None = None) -> ClusterSnapshot:
        """Controller, live brokers and every partition's leader/replicas/ISR (and end offsets), as the live brokers
        see them: never a cut-off broker's stale view (:mod:`kafkalab.admin.metadata_source`).

        ``wait_s`` bounds the wait for what is asked after the metadata (end offsets; unanswered ones are
        None): the console's table must not wait on a broker that was just killed to show who leads now.
        """
        started = time.monotonic()
        try:
            meta, went_silent = self._metadata.read()
        except Unanswered as exc:
            return ClusterSnapshot(time.time(), False, error=str(exc), elapsed_s=time.monotonic() - started)
        if went_silent:  # talk on through the brokers that answer: a paused one would hold every request
            self._client = _admin_client(",".join(meta.answering))
        deadline = self._deadline(wait_s)
        topics = meta.topics(internal)
        parts = meta.partitions(topics, self._topic_min_isr(topics))
        if offsets and parts:
            ends = end_offsets(meta, parts, deadline - time.monotonic())
            parts = [_with_end(p, ends.get((p.topic, p.partition))) for p in parts]
        # The controller as the chosen broker's metadata names it. DescribeCluster is not asked: librdkafka 2.16
        # aborts the whole process ("rd_kafka_admin_response_parse: Assertion `rko_result' failed") when a broker
        # answers it with no live brokers, every broker fenced as in the quorum-loss lab.
        view = meta.view
        return ClusterSnapshot(
            taken_at=time.time(), reachable=True, controller=view.controller, brokers=tuple(sorted(view.brokers)),
            partitions=tuple(parts), elapsed_s=time.monotonic() - started, answered_by=meta.answered_by,
            disowned=meta.disowned,
        )

    def _deadline(self, wait_s: float | None) -> float:
        """When to stop waiting for answers: ``wait_s`` from now, by default the request timeout and a margin."""
        return time.monotonic() + (self.timeout_s + 0.5 if wait_s is None else wait_s)

    def renew(self) -> None:
        """Talk through a new librdkafka client from now on. After the controller or a group's coordinator
        moved, the old one may keep asking a broker that no longer answers for it (NOT_CONTROLLER not
        refreshing its metadata; a group describe timing out for a minute on a healthy cluster after a
        broker's ZooKeeper session expired): a new client looks both up afresh."""
        self._client = _admin_client(self.bootstrap)

    @property
    def client(self) -> AdminClient:
        """The librdkafka admin client in use (it changes when a paused broker is routed around)."""
        return self._client

    def end_offsets(self, partitions: list[tuple[str, int]], wait_s: float | None = None) -> dict[tuple[str, int], int]:
        """Log-end offsets of the partitions that answer within ``wait_s`` (default: the request timeout)."""
        from confluent_kafka.admin import OffsetSpec

        return self.list_offsets(partitions, OffsetSpec.latest(), wait_s)

    def list_offsets(self, partitions: list[tuple[str, int]], spec: OffsetSpec,
                     wait_s: float | None = None) -> dict[tuple[str, int], int]:
        """The offsets ``spec`` names (earliest, latest, for a timestamp) of the partitions that answer in time.

        For a timestamp past the last record Kafka answers -1: the caller decides what that means. A partition
        whose offsets are not known yet (just after its leader died) answers OFFSET_INVALID (-1001): that is no
        offset, so it is left out as an unanswered one is, never shown as a number.
        """
        from confluent_kafka import OFFSET_INVALID, TopicPartition

        if not partitions:
            return {}
        answers = self._answers(self._client.list_offsets, {TopicPartition(t, p): spec for t, p in partitions},
                                self._deadline(wait_s))
        return {(tp.topic, tp.partition): info.offset for tp, info in answers.items() if info.offset != OFFSET_INVALID}

    def _topic_min_isr(self, topics: list[str]) -> dict[str, int]:
        """min.insync.replicas per topic, cached for 5 s (it rarely changes and costs a request)."""
        now = time.monotonic()
        stale = [t for t in topics if t not in self._min_isr or now - self._min_isr[t][0] > 5]
        if stale:
            for name, configs in self._configs(stale).items():
                entry = configs.get("min.insync.replicas")
                self._min_isr[name] = (now, int(entry.value) if entry is not None and entry.value else 1)
        return {t: self._min_isr[t][1] for t in topics if t in self._min_isr}

    def _configs(self, topics: list[str]) -> dict[str, dict[str, ConfigEntry]]:
        from confluent_kafka.admin import ConfigResource

        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        return {res.name: configs for res, configs in
                self._answers(self._client.describe_configs, resources, self._deadline(None)).items()}

    def _answers(self, call: Callable[..., dict[Any, Future[Any]]], request: Any, deadline: float) -> dict[Any, Any]:
        """One batch admin request's answers that came by ``deadline``, by their key; failed or late ones are
        left out (the caller shows what it has)."""
        from confluent_kafka import KafkaException

        try:
            futures = call(request, request_timeout=self.timeout_s)
        except KafkaException:
            return {}
        answers = {}
        for key, fut in futures.items():
            try:
                answers[key] = fut.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception:
                continue
        return answers

    # ---- topic operations ------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: dict[str, str] | None = None,
        timeout_s: float = 30.0,
        wait_leaders: bool = True,
        brokers_up: int = 0,
    ) -> None:
        """``brokers_up``: the brokers the caller knows run. Just after a start the controller may refuse a
        replication factor up to that many (not all registered yet): asked again until ``timeout_s``, as are
        no answer and NOT_CONTROLLER (``CREATE_ATTEMPT_S``); any other refusal is raised at once."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewTopic

        topic = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                         config={k: str(v) for k, v in (configs or {}).items()})
        deadline = time.monotonic() + timeout_s
        unanswered = False  # an attempt got no answer: it may have created the topic all the same
        while True:
            attempt_s = max(1.0, min(CREATE_ATTEMPT_S, deadline - time.monotonic()))
            try:
                self._client.create_topics([topic], request_timeout=attempt_s)[name].result(timeout=attempt_s + 1)
                break
            except (TimeoutError, KafkaException) as exc:
                code, why = _error_code(exc), short_error(exc)
            if code == KafkaError.TOPIC_ALREADY_EXISTS and unanswered:
                break
            unanswered |= code == TIMED_OUT
            registering = code == KafkaError.INVALID_REPLICATION_FACTOR and replication_factor <= brokers_up
            if time.monotonic() > deadline or not (registering or code in (KafkaError.NOT_CONTROLLER, TIMED_OUT)):
                raise KafkalabError(f"cannot create topic {name}: " + (
                    f"no answer within {timeout_s:.0f}s" if code == TIMED_OUT else why))
            time.sleep(0.5)
            self.renew()
        if wait_leaders:
            self.wait_for_leaders(name, partitions, timeout_s)

    def wait_for_leaders(self, name: str, partitions: int | None = None, timeout_s: float = 30.0) -> None:
        """Block until the topic has ``partitions`` partitions (all it has, if None), each with a leader."""
        deadline = time.monotonic() + timeout_s
        while True:
            parts = self.snapshot(offsets=False, internal=True).topic(name)
            if parts and all(p.leader is not None for p in parts) and (partitions is None or len(parts) == partitions):
                return
            if time.monotonic() > deadline:
                raise KafkalabError(f"topic {name} has no leader for every partition after {timeout_s:.0f}s")
            time.sleep(0.2)

    def elect_preferred(self, name: str, partitions: int, timeout_s: float = 15.0) -> None:
        """Ask for the preferred (first) replica to lead every partition of the topic."""
        from confluent_kafka import ElectionType, KafkaException, TopicPartition

        tps = [TopicPartition(name, p) for p in range(partitions)]
        try:
            results = self._client.elect_leaders(ElectionType.PREFERRED, tps, request_timeout=timeout_s)
            errors = results.result(timeout_s)
        except KafkaException as exc:
            raise KafkalabError(f"preferred leader election on {name} failed: {short_error(exc)}") from None
        for tp, err in errors.items():
            # ELECTION_NOT_NEEDED: already led by its preferred replica
            if err is not None and err.name() != "ELECTION_NOT_NEEDED":
                raise KafkalabError(f"preferred leader election on {tp.topic}/{tp.partition} failed: {err.name()}")

    def delete_topic(self, name: str, timeout_s: float = 30.0) -> None:
        from confluent_kafka import KafkaException

        fut = self._client.delete_topics([name], request_timeout=timeout_s)[name]
        try:
            fut.result(timeout=timeout_s)
        except KafkaException as exc:
            raise KafkalabError(f"cannot delete topic {name}: {short_error(exc)}") from None

    def delete_groups(self, groups: list[str], timeout_s: float = 10.0) -> None:
        """Delete consumer groups without members; a group that does not exist is no error."""
        from confluent_kafka import KafkaException

        if not groups:
            return
        for group, fut in self._client.delete_consumer_groups(groups, request_timeout=timeout_s).items():
            try:
                fut.result(timeout=timeout_s)
            except TimeoutError:  # no answer at all: no coordinator for the group yet (or a busy cluster)
                raise KafkalabError(f"cannot delete consumer group {group}: Timed out after {timeout_s:.0f}s "
                                    "(no group coordinator answered)") from None
            except KafkaException as exc:
                if "GROUP_ID_NOT_FOUND" not in str(exc) and "does not exist" not in str(exc):
                    raise KafkalabError(f"cannot delete consumer group {group}: {short_error(exc)}") from None

    def describe_topic(self, name: str) -> TopicDescription:
        from confluent_kafka import KafkaException, TopicCollection
        from confluent_kafka.admin import ConfigSource

        try:
            desc = self._client.describe_topics(
                TopicCollection([name]), request_timeout=max(self.timeout_s, 5.0)
            )[name].result(timeout=10)
        except KafkaException as exc:
            raise KafkalabError(f"cannot describe topic {name}: {short_error(exc)}") from None
        configs = self._configs([name]).get(name, {})
        # ConfigSource() as well: the stubs say an entry's source is one, librdkafka gives an int
        dynamic = {k: e.value for k, e in configs.items()
                   if ConfigSource(e.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG}
        min_isr = int(dynamic.get("min.insync.replicas", configs.get("min.insync.replicas", _Entry("1")).value) or 1)
        parts = [
            PartitionState(
                topic=name, partition=p.id, leader=p.leader.id if p.leader is not None else None,
                replicas=tuple(r.id for r in p.replicas), isr=tuple(r.id for r in p.isr), min_isr=min_isr,
            )
            for p in sorted(desc.partitions, key=lambda p: p.id)
        ]
        topic_id = str(desc.topic_id).replace("+", "-").replace("/", "_").rstrip("=")  # Kafka prints URL-safe base64
        return TopicDescription(name, topic_id, parts, dynamic)

    def alter_topic_configs(self, name: str, set_configs: dict[str, str], delete: list[str] | None = None) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

        entries = [ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in set_configs.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in delete or []]
        res = ConfigResource(ConfigResource.Type.TOPIC, name, incremental_configs=entries)
        try:
            self._client.incremental_alter_configs([res], request_timeout=10)[res].result(timeout=15)
        except KafkaException as exc:
            raise KafkalabError(f"cannot change configs of topic {name}: {short_error(exc)}") from None
        self._min_isr.pop(name, None)

    def add_partitions(self, name: str, total: int, timeout_s: float = 30.0) -> str:
        """Grow ``name`` to ``total`` partitions, as ``kafka-topics.sh --alter --partitions`` does, and wait until
        each has a leader; says what changed ("6 -> 8 partitions (keys now hash ...)"). Kafka cannot take
        partitions away: ``total`` not above the count now is refused, in one line naming it, before asking."""
        from confluent_kafka import KafkaException, TopicCollection
        from confluent_kafka.admin import NewPartitions

        why = f"cannot add partitions to topic {name}"
        try:
            described = self._client.describe_topics(
                TopicCollection([name]), request_timeout=max(self.timeout_s, 5.0))[name].result(timeout=10)
            current = len(described.partitions)
            if total <= current:
                raise KafkalabError(f"{why}: it has {current} partitions and Kafka cannot remove partitions: "
                                    f"give more than {current}")
            self._client.create_partitions([NewPartitions(name, total)], request_timeout=timeout_s)[name].result(
                timeout=timeout_s + 1)
        except (KafkaException, TimeoutError) as exc:
            raise KafkalabError(f"{why}: {short_error(exc) if isinstance(exc, KafkaException) else 'no answer'}") \
                from None
        self.wait_for_leaders(name, total, timeout_s)
        return (f"{current} -> {total} partitions (keys now hash to other partitions: a key's new records may go "
                "elsewhere than its old ones)")

    def topics(self) -> list[str]:
        from confluent_kafka import KafkaException

        try:
            return sorted(self._client.list_topics(timeout=max(self.timeout_s, 5.0)).topics)
        except KafkaException as exc:
            raise unreachable(self.bootstrap, exc) from None


@dataclass
class _Entry:
    value: str


def _with_end(p: PartitionState, end: int | None) -> PartitionState:
    return PartitionState(p.topic, p.partition, p.leader, p.replicas, p.isr, end, p.min_isr, p.leader_epoch)


def _error_code(exc: BaseException) -> Any:
    """A Kafka error's code; a future's own timeout counts as librdkafka's _TIMED_OUT."""
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException) and exc.args and hasattr(exc.args[0], "code"):
        return exc.args[0].code()
    return TIMED_OUT


class _SilentLogger:
    """librdkafka logs connection refusals loudly while brokers are down; the snapshot says it instead."""

    def log(self, *_args: object, **_kwargs: object) -> None:
        pass


SilentLogger = _SilentLogger  # for the group module's consumer handles
