"""Topic changes a person asks for from the console: create, set min.insync.replicas, reassign replicas."""

from __future__ import annotations

from typing import Any

from kafkalab.admin import Admin, reassign, replication_plan
from kafkalab.cluster.view import ClusterView
from kafkalab.errors import KafkalabError


class NeedsReassignment(KafkalabError):
    """A replication factor change on an existing topic: only a partition reassignment does it."""

    def __init__(self, topic: str, current: int, wanted: int) -> None:
        super().__init__(f"{topic} has RF {current}: changing it to {wanted} needs a partition reassignment")
        self.topic, self.current, self.wanted = topic, current, wanted


def alter_topic(admin: Admin, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
    """Create the topic when missing (6 partitions), else set its min.insync.replicas; says what it did.

    An RF change on an existing topic raises :class:`NeedsReassignment` (after any min ISR change).
    """
    configs: dict[str, Any] = {} if min_isr is None else {"min.insync.replicas": str(min_isr)}
    snapshot = admin.snapshot(offsets=False)
    live = len(snapshot.brokers)
    if topic not in admin.topics():
        rf = replication_factor or min(3, live) or 1
        if snapshot.reachable and rf > live:
            raise KafkalabError(f"rf={rf} is more than the {live} brokers running: give rf={live} or fewer")
        admin.create_topic(topic, 6, rf, configs, timeout_s=30)
        return f"created {topic}: 6 partitions, RF {rf}" + (f", min.insync.replicas {min_isr}" if min_isr else "")
    if configs:
        admin.alter_topic_configs(topic, configs)
    current = max((len(p.replicas) for p in snapshot.topic(topic)), default=0)
    if replication_factor is not None and current and replication_factor != current:
        raise NeedsReassignment(topic, current, replication_factor)
    return f"{topic}: min.insync.replicas {min_isr}" if configs else f"{topic} unchanged"


def reassign_topic(cluster: ClusterView, admin: Admin, topic: str, replication_factor: int) -> str:
    """Move ``topic`` to ``replication_factor`` replicas per partition (Kafka's reassignment, via the jars)."""
    reassign(cluster.dist, cluster.bootstrap, topic, replication_plan(admin, topic, replication_factor))
    return f"{topic}: reassignment to RF {replication_factor} submitted; the ISR column shows it complete"
