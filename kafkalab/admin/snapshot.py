"""What the admin API says about a cluster: partitions, leaders, replicas, ISR, and topic descriptions."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    end_offset: int | None = None
    min_isr: int = 1
    leader_epoch: int | None = None

    @property
    def offline(self) -> bool:
        return self.leader is None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr) < self.min_isr

    @property
    def status(self) -> str:
        if self.offline:
            return "offline"
        if self.under_min_isr:
            return "under min ISR"
        if self.under_replicated:
            return "under-replicated"
        return "ok"

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic, "partition": self.partition, "leader": self.leader,
            "replicas": list(self.replicas), "isr": list(self.isr), "end_offset": self.end_offset,
            "min_isr": self.min_isr, "status": self.status,
        }

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> PartitionState:
        return cls(**{**data, "replicas": tuple(data["replicas"]), "isr": tuple(data["isr"])})


@dataclass(frozen=True)
class MetadataView:
    """Whose metadata a snapshot shows, and the brokers left out of it: they answer, but from a view the live
    brokers no longer share (cut off from ZooKeeper or the controllers, a zombie's), so theirs is not shown."""

    answered_by: int | None  # None: no broker's view (unreachable), or one that could not be told apart
    left_out: tuple[int, ...] = ()

    def said(self) -> str:
        """The words `cluster status` and the console's partition table both print ("" when there is nothing to
        say): ``view of broker 3 · broker 2 left out: still answering, but dropped by the live brokers``."""
        parts = [] if self.answered_by is None else [f"view of broker {self.answered_by}"]
        if self.left_out:
            brokers = "broker" if len(self.left_out) == 1 else "brokers"
            parts.append(f"{brokers} {', '.join(map(str, self.left_out))} left out: still answering, but dropped by "
                         "the live brokers")
        return " · ".join(parts)


@dataclass(frozen=True)
class ClusterSnapshot:
    taken_at: float
    reachable: bool
    controller: int | None = None
    brokers: tuple[int, ...] = ()
    partitions: tuple[PartitionState, ...] = ()
    error: str = ""
    elapsed_s: float = 0.0
    answered_by: int | None = None  # the broker whose metadata this is (brokers' caches can differ briefly)
    # brokers that answer, but from a view the cluster's live brokers no longer share (isolated: a zombie's)
    disowned: tuple[int, ...] = ()
    helper_failed: bool = False  # no broker was asked: the admin helper process died or hung (error says which)

    @property
    def metadata_view(self) -> MetadataView:
        return MetadataView(self.answered_by, self.disowned)

    def topic(self, name: str) -> list[PartitionState]:
        return [p for p in self.partitions if p.topic == name]

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return next((p for p in self.partitions if p.topic == topic and p.partition == partition), None)

    def leader_counts(self) -> dict[int, tuple[int, int]]:
        """Per broker: (partitions it leads, partitions it follows in the ISR)."""
        counts = {b: (0, 0) for b in self.brokers}
        for p in self.partitions:
            for replica in p.isr:
                lead, follow = counts.get(replica, (0, 0))
                counts[replica] = (lead + 1, follow) if replica == p.leader else (lead, follow + 1)
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {
            "taken_at": self.taken_at, "reachable": self.reachable, "controller": self.controller,
            "brokers": list(self.brokers), "error": self.error, "answered_by": self.answered_by,
            "disowned": list(self.disowned), "partitions": [p.as_dict() for p in self.partitions],
        }

    def to_wire(self) -> dict[str, Any]:
        """Every field, JSON-able, for the admin helper's pipe (:meth:`as_dict` is the CLI's view); read back
        whole by :meth:`from_wire`."""
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> ClusterSnapshot:
        return cls(**{**data, "brokers": tuple(data["brokers"]), "disowned": tuple(data["disowned"]),
                      "partitions": tuple(PartitionState.from_wire(p) for p in data["partitions"])})


@dataclass
class TopicDescription:
    name: str
    topic_id: str
    partitions: list[PartitionState]
    configs: dict[str, str | None] = field(default_factory=dict)  # a sensitive config's value is None

    def render(self) -> str:
        """The same facts, in the same layout, as `kafka-topics.sh --describe`."""
        configs = ",".join(f"{k}={v}" for k, v in sorted(self.configs.items()))
        rf = len(self.partitions[0].replicas) if self.partitions else 0
        lines = [
            f"Topic: {self.name}\tTopicId: {self.topic_id}\tPartitionCount: {len(self.partitions)}\t"
            f"ReplicationFactor: {rf}\tConfigs: {configs}"
        ]
        for p in self.partitions:
            leader = "none" if p.leader is None else str(p.leader)
            lines.append(
                f"\tTopic: {self.name}\tPartition: {p.partition}\tLeader: {leader}\t"
                f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
            )
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "topic_id": self.topic_id, "configs": self.configs,
                "partitions": [p.as_dict() for p in self.partitions]}
