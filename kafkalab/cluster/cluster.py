"""A cluster: ZooKeeper (or a KRaft controller quorum) and N brokers, controlled per node, shut down with kafkalab."""

from __future__ import annotations

import atexit
import shlex
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path

from kafkalab.cluster.configs import QUORUM_WATCH_DIR, write_node_configs
from kafkalab.cluster.kraft_storage import LOST_BOOTSTRAP_NOTE, format_storage, lost_bootstrap, pin_recorded_ports
from kafkalab.cluster.netwiring import ClusterNet
from kafkalab.cluster.node import TICK_S, Node, NodeInfo, NodeKind, NodeState, end_and_wait, wait_ready
from kafkalab.cluster.ports import resolve_and_claim_ports
from kafkalab.cluster.process import Backend, LocalBackend, node_marker, supervised_prefix
from kafkalab.cluster.quorum import QuorumState, QuorumWatch, quorum_watch_argv
from kafkalab.cluster.spec import JVM_FLAGS, ClusterSpec
from kafkalab.cluster.supervision import StateDirLock, write_pid_file
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install import BROKER_MAIN, ZOOKEEPER_MAIN, Distribution, java_binary

StateListener = Callable[[Node, NodeState, str], None]


def silence_note(spec: ClusterSpec) -> str:
    """How this cluster notices a silent broker: the mechanism differs by mode, and the lesson shows it."""
    seconds = f"{spec.session_timeout_s:g} s"
    if spec.kraft:
        return f"silent past its {seconds} broker session, the active controller fences it and moves its leaderships"
    return f"silent past its {seconds} ZooKeeper session, the controller moves its leaderships"


class Cluster:
    """Drives one state dir's nodes. Use as a context manager, or call :meth:`shutdown`."""

    def __init__(self, spec: ClusterSpec, dist: Distribution, backend: Backend | None = None) -> None:
        self.spec = spec
        self.dist = dist
        self.backend: Backend = backend or LocalBackend()
        self._lock = StateDirLock(spec.state_dir)
        self._nodes: dict[str, Node] = {}
        self._listeners: list[StateListener] = []
        self._stop_monitor = threading.Event()
        self._monitor: threading.Thread | None = None
        self._started = False
        self.reaped: list[str] = []
        self._quorum: QuorumWatch | None = None
        self.net: ClusterNet | None = None  # the network-fault proxy (spec.net_proxies), from start to shutdown

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self, timeout: float | None = None, progress: Callable[[str], None] = lambda _m: None,
              cancelled: Callable[[], bool] = lambda: False, held_back: Collection[int] = ()) -> None:
        """Lock the state dir, reap a crashed run's leftovers, write configs, start ZooKeeper then brokers.

        ``held_back``: brokers not started (KRaft mode): never registered with the quorum, they are not yet
        part of the cluster, and join it when started.

        Blocks until every node is ready (``timeout``: 120 s, 240 s in KRaft mode, whose twice as many JVMs
        start at once); on failure everything started is ended and KafkalabError raised. ``cancelled()`` turning
        true ends what started and raises :class:`~kafkalab.cluster.node.StartCancelled`.
        """
        timeout = timeout or (240.0 if self.spec.kraft else 120.0)
        check_mode(self.spec, self.dist)
        refused = self.backend.net_proxies_refused() if self.spec.net_proxies else None
        if refused:  # before anything starts
            raise KafkalabError(f"the network-fault proxies cannot tell the {self.backend.name} backend's nodes apart "
                                f"({refused}): add --no-net-proxies, or use --backend local")
        self._lock.acquire()
        try:
            self.reaped = self.backend.reap(self.spec.state_dir)
            if self.reaped:
                progress(f"ended leftovers of a crashed run: {', '.join(self.reaped)}")
            resolve_and_claim_ports(self.spec, pinned_controllers=pin_recorded_ports(self.spec))
            write_node_configs(self.spec)
            fresh = self.spec.kraft and format_storage(self.spec, self.dist, progress)
            self._build_nodes()
            self._started = True
            if self.spec.net_proxies:
                self._start_net(progress)
            atexit.register(self.shutdown)
            self._monitor = threading.Thread(target=self._run_monitor, name="kafkalab-monitor", daemon=True)
            self._monitor.start()
            deadline = time.monotonic() + timeout
            if self.spec.kraft:
                self._start_kraft(deadline, progress, fresh, cancelled, held_back)
                return
            progress(f"starting ZooKeeper on 127.0.0.1:{self.spec.zk_port}")
            self.zookeeper.start()
            wait_ready([self.zookeeper], deadline, cancelled=cancelled)
            progress(f"starting {len(self.brokers)} brokers on ports {', '.join(map(str, self.spec.broker_ports))}")
            for broker in self.brokers:
                broker.start()
            wait_ready(self.brokers, deadline, progress, cancelled)
        except BaseException:  # what did start is ended by kafkalab: grey STOPPED, never a red kill nobody made
            self.shutdown(graceful=False, reason="ended by kafkalab: the cluster's start failed")
            raise

    def _start_kraft(self, deadline: float, progress: Callable[[str], None], fresh: bool,
                     cancelled: Callable[[], bool], held_back: Collection[int]) -> None:
        """Controllers and brokers start together: a broker waits for the quorum by itself, and no node
        has to wait for another's JVM to warm up. The quorum view's helper starts once they are ready, so
        its JVM does not take the nodes' CPU while they start."""
        spec = self.spec
        shape = "combined with the first brokers" if spec.combined else "dedicated"
        progress(f"starting {spec.controllers} KRaft controller(s) ({shape}) on ports "
                 f"{', '.join(map(str, spec.controller_ports))} and {len(self.brokers)} brokers on ports "
                 f"{', '.join(map(str, spec.broker_ports))}")
        voters = spec.controller_ids if spec.combined else []  # a combined voter must start: the quorum needs it
        starting = [n for n in self.nodes if n.broker_id is None or n.broker_id not in held_back
                    or n.broker_id in voters]
        for attempt in (1, 2):
            for node in starting:
                node.start()
            wait_ready(starting, deadline, progress, cancelled)
            if attempt == 2 or not (fresh and lost_bootstrap(starting)):
                break
            progress(f"{LOST_BOOTSTRAP_NOTE}: formatting the storage again and starting over")
            end_and_wait(starting, "formatting the KRaft storage again")
            format_storage(spec, self.dist, progress, wipe=True)
        helper_dir = spec.node_dir(QUORUM_WATCH_DIR)
        jvm_args = [f"-Dlog4j.configuration=file:{helper_dir / 'log4j.properties'}",
                    node_marker(spec.state_dir, QUORUM_WATCH_DIR)]
        self._quorum = QuorumWatch(
            supervised_prefix() + quorum_watch_argv(java_binary(), self.dist, spec.quorum_bootstrap, jvm_args),
            helper_dir / "logs" / "stdout.log")
        self._quorum.start()

    def _start_net(self, progress: Callable[[str], None]) -> None:
        self.net = ClusterNet(self.spec, self._active_controller)
        self.net.start()
        progress(f"network-fault proxy up (pid {self.net.pid}): clients reach the brokers at "
                 f"{self.spec.client_bootstrap}")

    def quorum(self, timeout_s: float = 2.0) -> QuorumState:
        """The KRaft quorum as the active controller describes it (unreachable in ZooKeeper mode)."""
        if self._quorum is None:
            reason = "ZooKeeper mode has no KRaft quorum" if not self.spec.kraft else "the cluster is not started"
            return QuorumState(time.time(), False, error=reason)
        return self._quorum.describe(timeout_s)

    def _active_controller(self) -> int | None:
        """The KRaft active controller's node id now, as the quorum view sees it (never through the proxy)."""
        return self.quorum().leader if self.spec.kraft else None

    @property
    def quorum_helper_pid(self) -> int | None:
        """The quorum view's helper JVM, while it runs (KRaft mode)."""
        return self._quorum.pid if self._quorum is not None else None

    def shutdown(self, graceful: bool = True, bound_s: float = 30.0, reason: str = "") -> None:
        """Stop brokers (SIGTERM, or SIGKILL when not graceful), then ZooKeeper; release the state dir.

        ``reason`` (not graceful only): the nodes show as stopped with it, not as killed.
        """
        if not self._started and not self._nodes:
            self._lock.release()
            return
        self._started = False
        atexit.unregister(self.shutdown)
        if self._quorum is not None:
            self._quorum.close()
            self._quorum = None
        for group in (self.brokers, self.metadata_nodes):
            for node in group:
                if graceful:
                    node.stop(bound_s)
                elif reason:
                    node.end(reason)
                else:
                    node.kill()
            deadline = time.monotonic() + bound_s + 5
            while any(n.pid is not None for n in group) and time.monotonic() < deadline:
                for node in group:
                    if self._monitor is None or not self._monitor.is_alive():
                        node.tick()
                time.sleep(TICK_S)
        self._stop_monitor.set()
        if self._monitor is not None:
            self._monitor.join(timeout=5)
        for node in self._nodes.values():  # belt and braces: nothing survives shutdown
            node.kill()
        if self.net is not None:  # after the nodes: a controlled stop talks to ZooKeeper and the controller
            self.net.stop()
        self.backend.reap(self.spec.state_dir)
        write_pid_file(self.spec.state_dir, {})
        self.backend.close()
        self._lock.release()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.shutdown()

    # ---- nodes -----------------------------------------------------------------------------------
    def _build_nodes(self) -> None:
        spec = self.spec
        java = java_binary() if self.backend.name == "local" else "java"

        def argv(name: str, heap: str, main: str, config: str) -> list[str]:
            return node_argv(spec, self.dist, java, name, heap, main, config)
        self._nodes = {}
        if not spec.kraft:
            self._nodes["zookeeper"] = Node(
                "zookeeper", argv("zookeeper", spec.zookeeper_heap, ZOOKEEPER_MAIN, "zookeeper.properties"),
                spec.node_dir("zookeeper"), spec.zk_port, self.backend,
            )
        for name, cid in spec.dedicated_controllers:
            self._nodes[name] = Node(
                name, argv(name, spec.controller_heap, BROKER_MAIN, "server.properties"), spec.node_dir(name),
                spec.controller_port(cid), self.backend, kind=NodeKind.CONTROLLER, node_id=cid, kraft=True,
            )
        for b in spec.broker_ids:
            name = f"broker-{b}"
            self._nodes[name] = Node(
                name, argv(name, spec.broker_heap, BROKER_MAIN, "server.properties"), spec.node_dir(name),
                spec.broker_port(b), self.backend, broker_id=b, kraft=spec.kraft,
                # KRaft: a restarted broker registers with a new incarnation, no old session to wait out
                session_timeout_s=0.0 if spec.kraft else spec.session_timeout_s, silence_note=silence_note(spec),
            )
        for node in self._nodes.values():
            node.on_change = self._notify
            node.on_launch = self._launched

    def _launched(self, node: Node, pid: int) -> None:
        if self.net is not None:
            self.net.launched(node.name, pid)

    def _notify(self, node: Node, state: NodeState, reason: str) -> None:
        if self.net is not None and not state.alive:  # killed, stopped or crashed: its proxy ports refuse
            self.net.ended(node.name)
        for listener in list(self._listeners):
            listener(node, state, reason)

    def add_listener(self, listener: StateListener) -> None:
        """Called (from the monitor or a control call) on every node state change."""
        self._listeners.append(listener)

    def _run_monitor(self) -> None:
        last_pids: dict[str, int | None] = {}
        while not self._stop_monitor.wait(TICK_S):
            for node in self._nodes.values():
                node.tick()
            if self.net is not None:
                self.net.supervise()
            pids = {name: node.pid for name, node in self._nodes.items()}
            if pids != last_pids:
                write_pid_file(self.spec.state_dir, pids)
                last_pids = pids

    def node(self, ref: int | str) -> Node:
        """A node by broker id (1..N), 'broker-N', 'N', 'zookeeper', 'controller-N' or a controller's node id."""
        try:
            return self._nodes[self.spec.node_name(ref)]
        except KeyError:
            raise self.spec.unknown_node(ref) from None

    @property
    def zookeeper(self) -> Node:
        try:
            return self._nodes["zookeeper"]
        except KeyError:
            raise KafkalabError("a KRaft cluster has no ZooKeeper: its controllers are controller-1..") from None

    @property
    def controllers(self) -> list[Node]:
        """The nodes hosting KRaft voters, in voter order (brokers when combined); empty in ZooKeeper mode."""
        return [self._nodes[self.spec.controller_node(c)] for c in self.spec.controller_ids]

    @property
    def metadata_nodes(self) -> list[Node]:
        """What keeps the metadata apart from the brokers: ZooKeeper, or the dedicated controllers."""
        return [n for n in self._nodes.values() if n.kind in (NodeKind.ZOOKEEPER, NodeKind.CONTROLLER)]

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self._nodes.values() if n.kind == NodeKind.BROKER]

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes.values())

    @property
    def broker_ids(self) -> list[int]:
        return self.spec.broker_ids

    @property
    def bootstrap(self) -> str:
        return self.spec.bootstrap

    @property
    def state_dir(self) -> Path:
        return self.spec.state_dir

    def infos(self) -> list[NodeInfo]:
        return [n.info() for n in self._nodes.values()]

    def wait_state(self, ref: int | str, state: NodeState, timeout: float = 60.0) -> None:
        node = self.node(ref)
        deadline = time.monotonic() + timeout
        while node.state != state:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{node.name} is {node.state} ({node.reason}), not {state}, after {timeout}s")
            time.sleep(TICK_S / 2)


def node_argv(spec: ClusterSpec, dist: Distribution, java: str, name: str, heap: str, main: str,
              config: str) -> list[str]:
    """A node's JVM command line: heap, flags, its log4j and log dir, the state dir marker, main and config."""
    node_dir = spec.node_dir(name)
    return [
        java, *shlex.split(heap), *shlex.split(JVM_FLAGS),
        f"-Dlog4j.configuration=file:{node_dir / 'log4j.properties'}",
        f"-Dkafka.logs.dir={node_dir / 'logs'}",
        node_marker(spec.state_dir, name),
        "-cp", dist.classpath, main, str(node_dir / config),
    ]


def check_mode(spec: ClusterSpec, dist: Distribution) -> None:
    """Refuse what cannot run: ZooKeeper mode on Kafka 4.x+."""
    major = dist.version().split(".")[0]
    if not spec.kraft and major.isdigit() and int(major) >= 4:
        raise KafkalabError(f"Kafka {dist.version()} has no ZooKeeper mode (removed in 4.0): use --mode kraft")
