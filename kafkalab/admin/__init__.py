"""The admin layer: cluster snapshots and topic operations over the admin API, with short timeouts."""

from kafkalab.admin.client import REQUEST_TIMEOUT_S, Admin
from kafkalab.admin.snapshot import ClusterSnapshot, PartitionState, TopicDescription

__all__ = ["REQUEST_TIMEOUT_S", "Admin", "ClusterSnapshot", "PartitionState", "TopicDescription"]
