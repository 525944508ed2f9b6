"""Consumer groups over the admin API, as Kafka's kafka-consumer-groups.sh sees them.

List, describe (state, coordinator, assignor, members and their partitions, committed offset, log-end
offset and lag per partition), reset offsets and delete. They work on any group of the cluster, not only
the ones kafkalab's clients joined. Describing an unreachable cluster gives a description that says so;
commands the user asked for (reset, delete, describe of one group) raise :class:`KafkalabError`.
"""

from __future__ import annotations

import builtins
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kafkalab.admin.client import Admin
from kafkalab.admin.committed import committed_offsets
from kafkalab.admin.offsets_log import OffsetsFate, OffsetsGone, OffsetsLog, offsets_log
from kafkalab.errors import KafkalabError, short_error, unreachable

if TYPE_CHECKING:  # librdkafka is loaded by the first request, never by importing this module (the console)
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import OffsetSpec

# States in which Kafka lets a group's offsets be reset: no member holds a partition.
INACTIVE_STATES = ("Empty", "Dead")
RESET_MODES = ("to-earliest", "to-latest", "to-offset", "shift-by", "to-datetime")

TopicPartitionKey = tuple[str, int]


class GroupActive(KafkalabError):
    """The group has active members: Kafka resets offsets only of a group without any."""


class GroupUnreachable(KafkalabError):
    """The group's coordinator did not answer in time (a broker down, or a loaded machine)."""


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str
    simple: bool
    offsets_gone: OffsetsGone | None = None  # it had committed offsets and has none now

    def state_label(self, now: float) -> str:
        return state_label(self.state, self.offsets_gone, now)


def state_label(state: str, gone: OffsetsGone | None, now: float) -> str:
    """A group's state as every view shows it: Kafka's, then what became of offsets it no longer has
    (``Dead, offsets expired at 14:20:05 (35 s ago)``)."""
    return state if gone is None else f"{state}, {gone.describe(now)}"


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    partitions: tuple[TopicPartitionKey, ...]
    instance_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"consumer_id": self.member_id, "client_id": self.client_id, "host": self.host,
                "instance_id": self.instance_id, "partitions": [list(p) for p in self.partitions]}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Member:
        return cls(**{**data, "partitions": tuple((t, p) for t, p in data["partitions"])})


@dataclass(frozen=True)
class PartitionLag:
    """One partition of a group: its committed offset, the log-end offset and who holds it."""

    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    member: Member | None = None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)

    def as_dict(self) -> dict[str, Any]:
        m = self.member
        return {"topic": self.topic, "partition": self.partition, "current_offset": self.committed,
                "log_end_offset": self.log_end, "lag": self.lag, "consumer_id": m.member_id if m else None,
                "host": m.host if m else None, "client_id": m.client_id if m else None}

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> PartitionLag:
        member = data["member"]
        return cls(**{**data, "member": None if member is None else Member.from_wire(member)})


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    coordinator: str = ""  # "host:port (id)"
    assignor: str = ""
    members: tuple[Member, ...] = ()
    partitions: tuple[PartitionLag, ...] = ()
    reachable: bool = True
    error: str = ""
    taken_at: float = field(default_factory=time.time)
    offsets_gone: OffsetsGone | None = None  # it had committed offsets and has none now

    @property
    def exists(self) -> bool:
        """Kafka calls a group it knows nothing about Dead: no members and no committed offsets. One whose offsets
        expired is forgotten so, but it was there: it is described, saying what became of them."""
        return self.state != "Dead" or bool(self.partitions) or self.offsets_gone is not None

    def state_label(self, now: float) -> str:
        return state_label(self.state, self.offsets_gone, now)

    @property
    def total_lag(self) -> int | None:
        lags = [p.lag for p in self.partitions if p.lag is not None]
        return sum(lags) if lags else None

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group_id, "state": self.state, "coordinator": self.coordinator,
                "assignor": self.assignor, "reachable": self.reachable, "error": self.error,
                "members": [m.as_dict() for m in self.members],
                "partitions": [p.as_dict() for p in self.partitions], "total_lag": self.total_lag,
                "offsets_gone": asdict(self.offsets_gone) if self.offsets_gone is not None else None}

    def to_wire(self) -> dict[str, Any]:
        """Every field, JSON-able, for the group helper's pipe (:meth:`as_dict` is the CLI's view); read back
        whole by :meth:`from_wire`."""
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> GroupDescription:
        gone = data["offsets_gone"]
        return cls(**{**data, "members": tuple(Member.from_wire(m) for m in data["members"]),
                      "partitions": tuple(PartitionLag.from_wire(p) for p in data["partitions"]),
                      "offsets_gone": None if gone is None else OffsetsGone.from_wire(gone)})


@dataclass(frozen=True)
class ResetTarget:
    """Where to move a group's offsets: one of :data:`RESET_MODES`, with its number or ISO time."""

    mode: str
    value: str = ""

    def __post_init__(self) -> None:
        if self.mode not in RESET_MODES:
            raise KafkalabError(f"unknown reset mode {self.mode!r}: use one of {', '.join(RESET_MODES)}")
        if self.mode in ("to-offset", "shift-by"):
            try:
                int(self.value)
            except ValueError:
                raise KafkalabError(f"--{self.mode} {self.value!r} is not a whole number") from None
            if self.mode == "to-offset" and int(self.value) < 0:
                raise KafkalabError(f"--to-offset {self.value} is negative: give an offset >= 0")
        if self.mode == "to-datetime":
            self.timestamp_ms()

    def timestamp_ms(self) -> int:
        """--to-datetime as epoch milliseconds; a time without a zone is local time, as in Kafka's tool."""
        text = self.value.strip()
        try:
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
        except ValueError:
            raise KafkalabError(
                f"--to-datetime {self.value!r} is not an ISO date-time: write e.g. 2024-05-01T12:30:00 "
                "or 2024-05-01T12:30:00+02:00") from None
        return int(moment.timestamp() * 1000)

    def describe(self) -> str:
        return f"--{self.mode}" + (f" {self.value}" if self.value else "")


@dataclass(frozen=True)
class OffsetMove:
    """One row of a reset plan: TOPIC PARTITION NEW-OFFSET (and where it was)."""

    topic: str
    partition: int
    current: int | None
    new: int

    def as_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "current_offset": self.current,
                "new_offset": self.new}


def parse_topic_partitions(spec: str) -> tuple[str, tuple[int, ...]]:
    """``T`` (every partition) or ``T:0,2`` (those) -> (topic, partitions); () means every partition."""
    topic, sep, rest = spec.partition(":")
    if not topic:
        raise KafkalabError(f"--topic {spec!r} names no topic: write --topic NAME or --topic NAME:0,1")
    if not sep:
        return topic, ()
    try:
        parts = tuple(sorted({int(p) for p in rest.split(",") if p.strip()}))
    except ValueError:
        raise KafkalabError(f"--topic {spec!r}: partitions must be numbers, as in {topic}:0,1") from None
    if not parts:
        raise KafkalabError(f"--topic {spec!r} lists no partition: write {topic}:0,1 or just {topic}")
    return topic, parts


class Groups:
    """Consumer-group operations on one cluster, through an :class:`Admin`'s client and timeouts."""

    def __init__(self, admin: Admin, log: OffsetsLog | None = None) -> None:
        """``log``: the cluster's ``__consumer_offsets`` as read so far (by default the one ``admin``'s reads keep)."""
        self.admin = admin
        self._log = log

    @property
    def log(self) -> OffsetsLog:
        """Made on first use: a reset or a delete never reads ``__consumer_offsets``."""
        if self._log is None:
            self._log = offsets_log(self.admin)
        return self._log

    @property
    def _wait_s(self) -> float:
        return self.admin.timeout_s + 0.5

    def list(self) -> list[GroupListing]:
        try:
            result = self.admin.client.list_consumer_groups(request_timeout=self.admin.timeout_s).result(
                timeout=self._wait_s)
        except Exception as exc:
            raise KafkalabError(f"cannot list consumer groups at {self.admin.bootstrap}: {_text(exc)}") from None
        if result.errors and not result.valid:  # no broker answered: not "no groups"
            err = result.errors[0]
            why = f"{err.name()}: {err.str()}" if hasattr(err, "str") else _text(err)
            raise KafkalabError(f"cannot list consumer groups at {self.admin.bootstrap}: {why}: is the cluster up "
                                "(`kafkalab cluster status`)?")
        return sorted((GroupListing(g.group_id, _state(g.state), bool(g.is_simple_consumer_group))
                       for g in result.valid), key=lambda g: g.group_id)

    def listed_with_gone(self, wait_s: float | None = None) -> builtins.list[GroupListing]:
        """:meth:`list`, each group with what became of offsets it no longer has, and the groups Kafka forgot
        once their offsets expired (Dead: no member, no offset), read from ``__consumer_offsets``. A group
        someone deleted stays out: it is gone as asked (a kept cluster's next run deletes the last run's)."""
        listed = self.list()
        gone = self.log.gone(self.admin, None, self._wait_s if wait_s is None else wait_s)
        known = {g.group_id for g in listed}
        forgotten = [GroupListing(g, "Dead", False) for g, why in gone.items()
                     if g not in known and why.fate is not OffsetsFate.DELETED]
        return sorted((replace(g, offsets_gone=gone.get(g.group_id)) for g in [*listed, *forgotten]),
                      key=lambda g: g.group_id)

    def describe(self, group: str, wait_s: float | None = None) -> GroupDescription:
        """The group as it is now; an unreachable cluster or coordinator is a description saying so.

        Its committed offsets come from :mod:`kafkalab.admin.committed`, not the admin API (which can take
        the whole process down while the group's coordinator moves)."""
        deadline = time.monotonic() + (self._wait_s if wait_s is None else wait_s)
        try:
            desc_future = self.admin.client.describe_consumer_groups(
                [group], request_timeout=self.admin.timeout_s)[group]
            topics = self.admin.client.list_topics(timeout=max(0.2, _left(deadline))).topics
            desc = desc_future.result(timeout=_left(deadline))
            members = tuple(sorted(
                (Member(m.member_id, m.client_id, m.host,
                        tuple(sorted((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions or []))),
                        m.group_instance_id)
                 for m in desc.members), key=lambda m: (m.partitions[:1], m.member_id)))
            holder = {tp: m for m in members for tp in m.partitions}
            asked = sorted({(name, p) for name, t in topics.items() if not name.startswith("__")
                            for p in t.partitions} | set(holder))
            committed = committed_offsets(self.admin).read(group, asked, _left(deadline))
        except Exception as exc:
            return GroupDescription(group, "Unknown", reachable=False, error=_text(exc))
        keys = sorted(set(committed) | set(holder))
        ends = self.admin.end_offsets(keys, _left(deadline))
        # only a group with no committed offset can have lost them: the log is not read for the others
        gone = None if committed else self.log.gone(self.admin, group, _left(deadline)).get(group)
        node = desc.coordinator
        return GroupDescription(
            group_id=group, state=_state(desc.state),
            coordinator=f"{node.host}:{node.port} ({node.id})" if node is not None else "",
            assignor=desc.partition_assignor or "", members=members,
            partitions=tuple(PartitionLag(t, p, committed.get((t, p)), ends.get((t, p)), holder.get((t, p)))
                             for t, p in keys),
            offsets_gone=gone,
        )

    def _answered(self, group: str) -> GroupDescription:
        """The group described, else GroupUnreachable: no coordinator answered, none named (a group whose
        ``__consumer_offsets`` partition has no leader, or cannot be created) or the named one down or slow."""
        desc = self.describe(group, wait_s=max(self._wait_s, 5.0))
        if not desc.reachable:
            raise GroupUnreachable(f"cannot describe group {group} at {self.admin.bootstrap}: its coordinator did "
                                   f"not answer ({desc.error})")
        return desc

    def require(self, group: str) -> GroupDescription:
        """The description of a group that exists, else one error line."""
        desc = self._answered(group)
        if not desc.exists:
            raise KafkalabError(f"consumer group {group!r} does not exist: `kafkalab group list` shows the groups")
        return desc

    # ---- reset -----------------------------------------------------------------------------------
    # (builtins.list below: in this class body ``list`` is the method above)
    def plan_reset(self, group: str, topic_specs: builtins.list[str], target: ResetTarget) -> builtins.list[OffsetMove]:
        """The new offset of every partition asked for; refuses while the group has active members."""
        from confluent_kafka.admin import OffsetSpec

        desc = self._answered(group)
        if desc.state not in INACTIVE_STATES:
            raise GroupActive(
                f"offsets of group {group} can only be reset while it is inactive, but its state is "
                f"{desc.state} with {len(desc.members)} member(s): stop its consumers first")
        current = {(p.topic, p.partition): p.committed for p in desc.partitions}
        keys = self._partitions(topic_specs)
        earliest = self._offsets(keys, OffsetSpec.earliest(), "earliest")
        latest = self._offsets(keys, OffsetSpec.latest(), "log-end")
        if target.mode == "to-earliest":
            wanted = earliest
        elif target.mode == "to-latest":
            wanted = latest
        elif target.mode == "to-offset":
            wanted = dict.fromkeys(keys, int(target.value))
        elif target.mode == "shift-by":
            missing = [f"{t}:{p}" for t, p in keys if current.get((t, p)) is None]
            if missing:
                raise KafkalabError(f"cannot shift offsets of group {group}: no committed offset for "
                                    f"{', '.join(missing)} (use --to-earliest, --to-latest or --to-offset)")
            wanted = {k: int(current[k] or 0) + int(target.value) for k in keys}
        else:
            at = self._offsets(keys, OffsetSpec.for_timestamp(target.timestamp_ms()), "timestamp", allow_missing=True)
            wanted = {k: at[k] if at.get(k, -1) >= 0 else latest[k] for k in keys}
        # Like Kafka's tool: an offset out of the log's range moves to its nearest end.
        return [OffsetMove(t, p, current.get((t, p)), min(max(wanted[(t, p)], earliest[(t, p)]), latest[(t, p)]))
                for t, p in keys]

    def apply_reset(self, group: str, moves: builtins.list[OffsetMove]) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        request = ConsumerGroupTopicPartitions(group, [TopicPartition(m.topic, m.partition, m.new) for m in moves])
        try:
            result = self.admin.client.alter_consumer_group_offsets(
                [request], request_timeout=max(self.admin.timeout_s, 5.0))[group].result(timeout=10)
        except Exception as exc:
            raise KafkalabError(f"cannot reset offsets of group {group}: {_text(exc)}") from None
        failed = [f"{tp.topic}:{tp.partition} ({tp.error.str()})" for tp in result.topic_partitions or [] if tp.error]
        if failed:
            raise KafkalabError(f"cannot reset offsets of group {group} for {', '.join(failed)}")

    def reset(self, group: str, topic_specs: builtins.list[str], target: ResetTarget,
              execute: bool) -> builtins.list[OffsetMove]:
        """Plan, and with ``execute`` commit, the new offsets; the plan is returned either way."""
        moves = self.plan_reset(group, topic_specs, target)
        if execute:
            self.apply_reset(group, moves)
        return moves

    def reset_when_inactive(self, group: str, topic_specs: builtins.list[str], target: ResetTarget,
                            timeout_s: float) -> builtins.list[OffsetMove]:
        """Execute a reset as soon as the group has no active member (its consumers may still be leaving)
        and its coordinator answers (on a loaded machine a describe can time out)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self.reset(group, topic_specs, target, execute=True)
            except (GroupActive, GroupUnreachable) as exc:
                if time.monotonic() > deadline:
                    raise
                if isinstance(exc, GroupUnreachable):
                    self.admin.renew()
                time.sleep(0.5)

    def _partitions(self, topic_specs: builtins.list[str]) -> builtins.list[TopicPartitionKey]:
        if not topic_specs:
            raise KafkalabError("name the partitions to reset: --topic T (every partition) or --topic T:0,1")
        keys: set[TopicPartitionKey] = set()
        for spec in topic_specs:
            topic, wanted = parse_topic_partitions(spec)
            existing = self.partition_ids(topic)
            unknown = [p for p in wanted if p not in existing]
            if unknown:
                raise KafkalabError(f"topic {topic} has no partition {', '.join(map(str, unknown))}: "
                                    f"its partitions are 0..{len(existing) - 1}")
            keys |= {(topic, p) for p in wanted or existing}
        return sorted(keys)

    def partition_ids(self, topic: str) -> builtins.list[int]:
        """The partitions of a topic that exists, else one error line."""
        from confluent_kafka import KafkaException

        try:
            # All topics, not list_topics(topic=...): asking for one by name may auto-create it.
            md = self.admin.client.list_topics(timeout=max(self.admin.timeout_s, 5.0))
        except KafkaException as exc:
            raise unreachable(self.admin.bootstrap, exc) from None
        meta = md.topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise KafkalabError(f"topic {topic} does not exist: `kafkalab topic describe` lists the topics")
        return sorted(meta.partitions)

    def _offsets(self, keys: builtins.list[TopicPartitionKey], spec: OffsetSpec, what: str,
                 allow_missing: bool = False) -> dict[TopicPartitionKey, int]:
        found = self.admin.list_offsets(keys, spec, wait_s=max(self._wait_s, 5.0))
        missing = [f"{t}:{p}" for t, p in keys if (t, p) not in found]
        if missing and not allow_missing:
            raise KafkalabError(f"no {what} offset for {', '.join(missing)}: is its leader down?")
        return found

    # ---- delete ----------------------------------------------------------------------------------
    def delete(self, group: str) -> None:
        try:
            self.admin.client.delete_consumer_groups(
                [group], request_timeout=max(self.admin.timeout_s, 5.0))[group].result(timeout=10)
        except Exception as exc:
            text = _text(exc)
            if "GROUP_ID_NOT_FOUND" in text or "does not exist" in text:
                raise KafkalabError(f"consumer group {group!r} does not exist: `kafkalab group list` shows "
                                    "the groups") from None
            if "NON_EMPTY_GROUP" in text or "not empty" in text:
                raise KafkalabError(f"group {group} is not empty: stop its consumers first, then delete it") from None
            raise KafkalabError(f"cannot delete group {group}: {text}") from None


def _state(state: ConsumerGroupState | str | int | None) -> str:
    """Kafka's spelling of a group state: Stable, Empty, PreparingRebalance, ..."""
    from confluent_kafka import ConsumerGroupState

    names = {ConsumerGroupState.STABLE: "Stable", ConsumerGroupState.EMPTY: "Empty",
             ConsumerGroupState.DEAD: "Dead", ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
             ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance"}
    return names.get(state, "Unknown") if isinstance(state, ConsumerGroupState) else "Unknown"


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _text(exc: BaseException) -> str:
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException):
        err = exc.args[0] if exc.args else None
        if err is not None and hasattr(err, "name"):
            return f"{err.name()}: {short_error(exc)}"
        return short_error(exc)
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
