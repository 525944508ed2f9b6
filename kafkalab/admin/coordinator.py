"""Which broker coordinates a consumer group, read from the cluster's metadata alone.

Kafka's rule (``GroupMetadataManager.partitionFor`` in 3.x, ``GroupCoordinatorService.partitionFor`` in 4.x,
the classic and the consumer protocol alike): a group lives in partition ``abs(groupId.hashCode()) % N`` of
``__consumer_offsets`` (N = its partition count, ``offsets.topic.num.partitions``), and the leader of that
partition is the group's coordinator, the broker FindCoordinator and DescribeConsumerGroups name. Reading it
from the metadata asks no group API: librdkafka's admin group requests can take the whole process down while a
coordinator moves (see :mod:`kafkalab.admin.group_helper`), and a lab fault must not.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalab.admin.snapshot import ClusterSnapshot
from kafkalab.errors import KafkalabError

OFFSETS_TOPIC = "__consumer_offsets"
_INT_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: s[0]*31^(n-1) + ... over the UTF-16 code units, as a signed 32-bit int."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def offsets_partition(group: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition that holds ``group``: Kafka's ``Utils.abs(hash) % partitions``
    (``Utils.abs`` maps Integer.MIN_VALUE to 0, not to itself)."""
    if partitions < 1:
        raise ValueError(f"{OFFSETS_TOPIC} has {partitions} partitions")
    h = java_string_hash(group)
    return (0 if h == _INT_MIN else abs(h)) % partitions


@dataclass(frozen=True)
class GroupCoordinator:
    """The coordinator of ``group``: the leader of ``__consumer_offsets``/``partition`` (None: no leader now)."""

    group: str
    partition: int
    broker: int | None

    def describe(self) -> str:
        where = f"{OFFSETS_TOPIC}/{self.partition}"
        if self.broker is None:
            return f"none ({where} has no leader)"
        return f"broker {self.broker} (leader of {where})"


def group_coordinator(snap: ClusterSnapshot, group: str) -> GroupCoordinator:
    """The coordinator of ``group`` in ``snap`` (taken with internal topics); KafkalabError when the cluster did
    not answer or has no ``__consumer_offsets`` yet (no group has ever asked for a coordinator)."""
    if not snap.reachable:
        raise KafkalabError(f"no coordinator of group {group} known: the cluster did not answer ({snap.error})")
    parts = snap.topic(OFFSETS_TOPIC)
    if not parts:
        raise KafkalabError(f"group {group} has no coordinator yet: {OFFSETS_TOPIC} does not exist (it is made "
                            "when a consumer first looks for its group's coordinator)")
    partition = offsets_partition(group, len(parts))
    state = snap.partition(OFFSETS_TOPIC, partition)
    return GroupCoordinator(group, partition, state.leader if state is not None else None)
