"""A cluster another kafkalab process owns (`kafkalab cluster up`, another console), seen and driven through
its control socket: the same reads and node actions as a :class:`~kafkalab.cluster.Cluster`, so a console can
attach to it. Nothing here starts or ends the cluster; its owner does.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kafkalab import kafka_install as kdist
from kafkalab.cluster.control_socket import NET_STATUS_OP, read_cluster_file, request
from kafkalab.cluster.netwiring import NetRequest
from kafkalab.cluster.node import ActionNode, EndCause, NodeAction, NodeInfo, NodeKind, NodeState
from kafkalab.cluster.quorum import QuorumReplica, QuorumState
from kafkalab.cluster.spec import ClusterSpec, ControllerNetPorts, NetPorts
from kafkalab.cluster.supervision import running_state_dirs
from kafkalab.errors import KafkalabError
from kafkalab.netfaults import ProxyStatus

STATUS_TIMEOUT_S = 2.0
ACTION_TIMEOUT_S = 40.0  # a controlled stop is bounded at 30 s by the owner
NET_TIMEOUT_S = 15.0  # a network fault's rules are applied one by one by the owner, each a proxy request


class RemoteNode(ActionNode):
    """One node of the remote cluster: its last known state, its log file, its actions sent to the owner."""

    def __init__(self, cluster: RemoteCluster, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.log_path = cluster.state_dir / name / "logs" / "server.log"

    @property
    def state(self) -> NodeState:
        info = self.cluster.known.get(self.name)
        return info.state if info is not None else NodeState.STOPPED

    @property
    def port(self) -> int:
        info = self.cluster.known.get(self.name)
        return info.port if info is not None else 0

    def act(self, action: NodeAction) -> None:
        request(self.cluster.state_dir, str(action), timeout=ACTION_TIMEOUT_S, node=self.name)


class RemoteCluster:
    """Raises KafkalabError at once when no live kafkalab process owns a cluster in ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        facts = read_cluster_file(state_dir)
        self.owner_pid = int(facts.get("owner_pid", 0))
        self.spec = ClusterSpec(
            state_dir=state_dir, brokers=int(facts["brokers"]), zk_port=int(facts.get("zk_port") or 0),
            broker_ports=list(facts["broker_ports"]), mode=str(facts.get("mode", "zookeeper")),
            controllers=int(facts.get("controllers", 1)), combined=bool(facts.get("combined", False)),
            controller_ports=list(facts.get("controller_ports") or []),
            net_proxies=bool(facts.get("net_proxies", False)),  # a cluster file written before the key: none
            net_ports=[NetPorts(*p) for p in facts.get("net_ports") or []],
            zk_proxy_port=int(facts.get("zk_proxy_port") or 0),
            controller_net_ports=[ControllerNetPorts(*p) for p in facts.get("controller_net_ports") or []],
        )
        self.bootstrap = str(facts["bootstrap"])
        # the owner's proxy, driven through its control socket (None: the owner runs without one)
        self.net: RemoteNet | None = RemoteNet(state_dir) if self.spec.net_proxies else None
        self.known: dict[str, NodeInfo] = {}
        self.nodes = [RemoteNode(self, info.name) for info in self.infos()]
        self._dist: kdist.Distribution | None = None

    @property
    def state_dir(self) -> Path:
        return self.spec.state_dir

    @property
    def dist(self) -> kdist.Distribution:
        """The local Kafka jars, for the tools a console runs itself (a reassignment)."""
        if self._dist is None:
            self._dist = kdist.locate()
        return self._dist

    def infos(self) -> list[NodeInfo]:
        infos = [node_info_of(d) for d in request(self.state_dir, "status", timeout=STATUS_TIMEOUT_S)["nodes"]]
        self.known = {i.name: i for i in infos}
        return infos

    def node(self, ref: int | str) -> RemoteNode:
        name = f"broker-{ref}" if str(ref).isdigit() else str(ref)
        for node in self.nodes:
            if node.name == name:
                return node
        raise KafkalabError(f"unknown node {ref!r}: the attached cluster has {', '.join(n.name for n in self.nodes)}")

    @property
    def zookeeper(self) -> RemoteNode:
        return self.node("zookeeper")

    def quorum(self, timeout_s: float = 2.0) -> QuorumState:
        found = request(self.state_dir, "quorum", timeout=timeout_s + 1, timeout_s=timeout_s)["quorum"]
        return quorum_of(found)


class RemoteNet:
    """The owner's network-fault proxy through its control socket: the same ``handle`` and ``status`` as a
    :class:`~kafkalab.cluster.netwiring.ClusterNet`, so an attached console's isolate and heal keys and its link
    marks work as on a cluster of its own. The owner resolves the node words and applies the rules."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._pid: int | None = 0  # 0: not asked yet; None: the owner's proxy is not running

    @property
    def pid(self) -> int | None:
        """The proxy's pid as last seen (asked once, then from each status)."""
        if self._pid == 0:
            try:
                self.status()
            except KafkalabError:
                self._pid = None
        return self._pid

    def status(self) -> ProxyStatus:
        reply = request(self.state_dir, NET_STATUS_OP, timeout=STATUS_TIMEOUT_S)
        self._pid = reply.get("pid")
        return ProxyStatus.from_json(reply["status"])

    def handle(self, net: NetRequest) -> dict[str, Any]:
        reply = request(self.state_dir, "net", timeout=NET_TIMEOUT_S, **net.to_json())
        reply.pop("ok", None)
        return reply


def node_info_of(data: dict[str, Any]) -> NodeInfo:
    """A node's info from the owner's `status` answer (``NodeInfo.as_dict``)."""
    return NodeInfo(
        name=str(data["name"]), kind=NodeKind(data["kind"]), broker_id=data.get("broker_id"), port=int(data["port"]),
        state=NodeState(data["state"]), reason=str(data.get("reason", "")), pid=data.get("pid"),
        uptime_s=float(data.get("uptime_s", 0.0)), cpu_percent=float(data.get("cpu_percent", 0.0)),
        rss_bytes=int(data.get("rss_bytes", 0)), restarts=int(data.get("restarts", 0)), node_id=data.get("node_id"),
        cause=EndCause(data["cause"]) if data.get("cause") else None,
    )


def quorum_of(data: dict[str, Any]) -> QuorumState:
    """A quorum from the owner's `quorum` answer (``QuorumState.as_dict``)."""
    replicas = tuple(QuorumReplica(**r) for r in [*data.get("voters", []), *data.get("observers", [])])
    return QuorumState(time.time(), bool(data.get("reachable")), data.get("leader"), data.get("epoch"),
                       data.get("high_watermark"), replicas, str(data.get("error", "")))


def cluster_ports(facts: dict[str, Any]) -> set[int]:
    """Every port a cluster's ``cluster.json`` says it listens on (ZooKeeper's only in ZooKeeper mode)."""
    metadata = facts.get("controller_ports") or [] if facts.get("mode") == "kraft" else [facts.get("zk_port")]
    return {int(p) for p in [*metadata, *facts.get("broker_ports", [])] if p}


def owner_of_ports(ports: list[int]) -> Path | None:
    """The state dir of the running kafkalab cluster that holds any of ``ports`` (None: not kafkalab's)."""
    for state_dir in running_state_dirs():
        try:
            facts = read_cluster_file(state_dir)
        except KafkalabError:
            continue
        if cluster_ports(facts) & set(ports):
            return state_dir
    return None
