"""The admin layer: cluster snapshots, topic and consumer-group operations over the admin API, with short
timeouts, and replica reassignment (through Kafka's own Admin API, run from the broker jars)."""

from kafkalab.admin.client import REQUEST_TIMEOUT_S, Admin
from kafkalab.admin.groups import GroupDescription, Groups, OffsetMove, ResetTarget
from kafkalab.admin.reassign import plan_replicas, reassign, replication_plan
from kafkalab.admin.snapshot import ClusterSnapshot, MetadataView, PartitionState, TopicDescription

__all__ = [
    "REQUEST_TIMEOUT_S", "Admin", "ClusterSnapshot", "GroupDescription", "Groups", "MetadataView", "OffsetMove",
    "PartitionState", "ResetTarget", "TopicDescription", "plan_replicas", "reassign", "replication_plan",
]
