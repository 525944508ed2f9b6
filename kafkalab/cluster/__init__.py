"""The cluster engine: ZooKeeper and N Kafka brokers as JVM processes under kafkalab's control."""

from kafkalab.cluster.cluster import Cluster
from kafkalab.cluster.node import EndCause, Node, NodeAction, NodeInfo, NodeKind, NodeState
from kafkalab.cluster.spec import ClusterSpec

__all__ = ["Cluster", "ClusterSpec", "EndCause", "Node", "NodeAction", "NodeInfo", "NodeKind", "NodeState"]
