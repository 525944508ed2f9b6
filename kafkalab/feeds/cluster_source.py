"""The bare cluster's source: a cluster the console owns (or is attached to) and the default workload."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kafkalab.admin import Admin, ClusterSnapshot
from kafkalab.admin.snapshot_helper import SnapshotHelper
from kafkalab.cluster import Cluster, NodeAction
from kafkalab.cluster.control_socket import ControlServer, write_cluster_file
from kafkalab.cluster.netwiring import NetRequest
from kafkalab.cluster.view import ClusterView
from kafkalab.errors import KafkalabError
from kafkalab.feeds.frames import CLUSTER_STARTING, NodesFrame, RunFrame
from kafkalab.feeds.metadata_facts import MetadataFacts
from kafkalab.feeds.node_logs import NodeLogs, nodes_frame
from kafkalab.feeds.source import CLOSING, SNAPSHOT_WAIT_S, ConsoleAction, Source, apply_net
from kafkalab.feeds.topic_ops import alter_topic, reassign_topic
from kafkalab.feeds.workload import DEMO_TOPIC, Workload, ensure_demo_topic


class ClusterSource(Source):
    """A bare cluster with the console as its owner: nodes, logs, admin snapshots, node controls, and the
    default workload (the demo topic, a producer and a consumer) on `g` / `x`."""

    offers = frozenset({ConsoleAction.NODE, ConsoleAction.START_RUN, ConsoleAction.STOP_RUN,
                        ConsoleAction.EDIT_TOPIC, ConsoleAction.RESET_GROUP, ConsoleAction.ISOLATE_NODE,
                        ConsoleAction.HEAL_LINKS})
    reports = False  # the default workload is not analysed: no report in Results
    why_not = "no lab loaded: open the console on a lab (`kafkalab console LAB`) for runs, settings and resets"

    def __init__(self, cluster: ClusterView, title: str = "kafkalab", owned: bool = True,
                 note: str = "", label: str = "no lab", platform: str = "") -> None:
        """``owned=False`` attaches to a cluster someone else started and will shut down; ``note`` is said
        first when the console boots (e.g. why the cluster took free ports); ``label`` names it in the top
        bar where a lab's id would be, ``platform`` its mode and Kafka ("KRaft · Kafka 4.4.0", '' unknown)."""
        self.note = note
        self.label = label
        self.cluster = cluster
        self.platform = platform
        if not owned:  # another process owns the cluster (and its proxy): it was started without one
            self.net_why_not = (f"the cluster in {cluster.spec.state_dir} runs without network-fault proxies "
                                "(its owner was started with --no-net-proxies, or on a Docker engine the proxy "
                                "cannot see into)")
        self.workload = Workload(cluster.spec.state_dir / "workload")
        self.title = title
        self.owned = owned
        self.admin_helper = SnapshotHelper()  # the table's polls run in a helper process
        self._booted = False
        self._server: ControlServer | None = None
        self._down = threading.Event()
        self._logs = NodeLogs()
        self._facts = MetadataFacts()
        self._closed = False

    def boot(self, progress: Callable[[str], None]) -> None:
        if self.note:
            progress(self.note)
        if (own := self._own()) is not None:
            own.start(progress=progress)
            write_cluster_file(own)
            self._server = ControlServer(own, self._down)
        admin = Admin(self.cluster.bootstrap, timeout_s=5.0)
        progress(ensure_demo_topic(admin, len(self.cluster.spec.broker_ids)))
        progress(f"{DEMO_TOPIC} ready: g runs a producer and a consumer")
        self._booted = True

    def nodes(self) -> NodesFrame:
        return nodes_frame(self.cluster, self._logs, self._facts, self._down.is_set())

    def snapshot(self) -> ClusterSnapshot:
        if not self._booted:
            return ClusterSnapshot(time.time(), False, error=CLUSTER_STARTING)
        return self.admin_helper.snapshot(self.cluster.bootstrap, self.cluster, SNAPSHOT_WAIT_S)

    def run(self) -> RunFrame:
        return self.workload.frame()

    def node_action(self, node: str, action: NodeAction) -> None:
        action.apply(self.cluster.node(node))

    def net_request(self, request: NetRequest) -> str:
        # the cluster's proxy: its own, or (attached) the owner's through its control socket; None without
        return apply_net(self.cluster.net, request, self.net_why_not)

    def start_run(self) -> None:
        self.workload.start(self.cluster.spec.client_bootstrap)  # through the network-fault proxy, if any

    def stop_run(self) -> None:
        self.workload.stop()

    def _topic_admin(self) -> Admin:
        """An admin client for one topic change, asked for now and then (the table's polls use the helper)."""
        if not self._booted:
            raise KafkalabError("the cluster is still starting: try again in a moment")
        return Admin(self.cluster.bootstrap)

    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
        return alter_topic(self._topic_admin(), topic, replication_factor, min_isr)

    def reassign_topic(self, topic: str, replication_factor: int) -> str:
        return reassign_topic(self.cluster, self._topic_admin(), topic, replication_factor)

    def cluster_now(self) -> ClusterView:
        return self.cluster

    @property
    def closing(self) -> str:
        if self.owned:
            return CLOSING
        return "closing the console (its workload only): the attached cluster keeps running ..."

    @property
    def after_quit(self) -> str:
        if self.owned:
            return ""
        state_dir = self.cluster.spec.state_dir
        return (f"the cluster in {state_dir} keeps running: `kafkalab cluster down --state-dir {state_dir}` "
                f"stops it, `kafkalab console --attach {state_dir}` shows it again")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.admin_helper.close()
        self.workload.stop()
        if self._server is not None:
            self._server.close()
        if (own := self._own()) is not None:
            own.shutdown()

    def _own(self) -> Cluster | None:
        """The cluster this console started and ends; None when attached to one."""
        if not self.owned:
            return None
        assert isinstance(self.cluster, Cluster)  # one another process owns (a RemoteCluster) is never owned
        return self.cluster
