"""What the partition table says without a snapshot: never "the cluster is starting" when nothing starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkalab.cluster import EndCause, NodeState
from kafkalab.feeds.frames import CLUSTER_DOWN, CLUSTER_STARTING, NO_CLUSTER_YET
from kafkalab.feeds.lab_source import no_cluster_words


@dataclass
class FakeNode:
    state: NodeState
    cause: EndCause | None


@dataclass
class FakeCluster:
    nodes: list[FakeNode]


def words(*nodes: FakeNode) -> str:
    cluster: Any = FakeCluster(list(nodes))
    return no_cluster_words(cluster)


def test_no_cluster_starting_and_down_are_told_apart() -> None:
    assert no_cluster_words(None) == NO_CLUSTER_YET
    assert words(FakeNode(NodeState.STOPPED, EndCause.NOT_STARTED)) == CLUSTER_STARTING  # about to start
    assert words(FakeNode(NodeState.STARTING, None), FakeNode(NodeState.STOPPED, EndCause.NOT_STARTED)) == \
        CLUSTER_STARTING
    # a start that failed: the broker crashed, kafkalab ended ZooKeeper: nothing starts any more
    assert words(FakeNode(NodeState.STOPPED, EndCause.ENDED), FakeNode(NodeState.FAILED, EndCause.CRASHED)) == \
        CLUSTER_DOWN
