"""A cluster as a console reads and drives it: one this process owns (:class:`~kafkalab.cluster.Cluster`) or
one another kafkalab process owns (:class:`~kafkalab.cluster.remote.RemoteCluster`). Starting and ending it
are the owner's, so they are not part of the view."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kafkalab.cluster.node import Controls, NodeInfo, NodeState
from kafkalab.cluster.quorum import QuorumState
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.kafka_install import Distribution
from kafkalab.netfaults import ProxyStatus

if TYPE_CHECKING:
    from kafkalab.cluster.netwiring import NetRequest


class NodeView(Controls, Protocol):
    @property
    def name(self) -> str: ...
    @property
    def log_path(self) -> Path: ...
    @property
    def state(self) -> NodeState: ...
    @property
    def port(self) -> int: ...


class NetControls(Protocol):
    """A cluster's network-fault proxy as a console drives it: its own (:class:`~kafkalab.cluster.netwiring.
    ClusterNet`) or, attached, the owner's through the control socket (:class:`~kafkalab.cluster.remote.RemoteNet`)."""

    @property
    def pid(self) -> int | None: ...
    def status(self) -> ProxyStatus: ...
    def handle(self, request: NetRequest) -> dict[str, Any]: ...


class ClusterView(Protocol):
    @property
    def spec(self) -> ClusterSpec: ...
    @property
    def bootstrap(self) -> str: ...
    @property
    def dist(self) -> Distribution: ...
    @property
    def nodes(self) -> Sequence[NodeView]: ...
    @property
    def zookeeper(self) -> NodeView: ...
    def infos(self) -> list[NodeInfo]: ...
    def node(self, ref: int | str) -> NodeView: ...
    def quorum(self, timeout_s: float = ...) -> QuorumState: ...
    @property
    def net(self) -> NetControls | None: ...
