"""A cluster: ZooKeeper and N brokers, started in order, controlled per node, shut down with kafkalab."""

from __future__ import annotations

import atexit
import shlex
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kafkalab.cluster.configs import write_node_configs
from kafkalab.cluster.node import Node, NodeInfo, NodeState
from kafkalab.cluster.ports import resolve_ports
from kafkalab.cluster.process import Backend, LocalBackend, node_marker
from kafkalab.cluster.spec import JVM_FLAGS, ClusterSpec
from kafkalab.cluster.supervision import StateDirLock, write_pid_file
from kafkalab.dist import BROKER_MAIN, ZOOKEEPER_MAIN, Distribution, java_binary
from kafkalab.errors import KafkalabError

TICK_S = 0.1
StateListener = Callable[[Node, NodeState, str], None]


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

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0, progress: Callable[[str], None] = lambda _m: None) -> None:
        """Lock the state dir, reap a crashed run's leftovers, write configs, start ZooKeeper then brokers.

        Blocks until every node is ready; on failure everything started is ended and KafkalabError raised.
        """
        self._lock.acquire()
        try:
            self.reaped = self.backend.reap(self.spec.state_dir)
            if self.reaped:
                progress(f"ended leftovers of a crashed run: {', '.join(self.reaped)}")
            resolve_ports(self.spec)
            write_node_configs(self.spec)
            self._build_nodes()
            self._started = True
            atexit.register(self.shutdown)
            self._monitor = threading.Thread(target=self._run_monitor, name="kafkalab-monitor", daemon=True)
            self._monitor.start()
            deadline = time.monotonic() + timeout
            progress(f"starting ZooKeeper on 127.0.0.1:{self.spec.zk_port}")
            self.zookeeper.start()
            self._wait_ready([self.zookeeper], deadline)
            progress(f"starting {len(self.brokers)} brokers on ports {', '.join(map(str, self.spec.broker_ports))}")
            for broker in self.brokers:
                broker.start()
            self._wait_ready(self.brokers, deadline, progress)
        except BaseException:
            self.shutdown(graceful=False)
            raise

    def _wait_ready(self, nodes: list[Node], deadline: float, progress: Callable[[str], None] | None = None) -> None:
        ready: set[str] = set()
        while True:
            for node in nodes:
                if node.state == NodeState.FAILED:
                    raise KafkalabError(f"{node.name} failed to start: {node.reason} (log: {node.log_path})")
                if node.state == NodeState.RUNNING and node.name not in ready:
                    ready.add(node.name)
                    if progress:
                        progress(f"{node.name} ready ({len(ready)}/{len(nodes)})")
            if len(ready) == len(nodes):
                return
            if time.monotonic() > deadline:
                late = [n.name for n in nodes if n.state != NodeState.RUNNING]
                raise KafkalabError(f"{', '.join(late)} not ready in time: see {late and self.node(late[0]).log_path}")
            time.sleep(TICK_S)

    def shutdown(self, graceful: bool = True, bound_s: float = 30.0, reason: str = "") -> None:
        """Stop brokers (SIGTERM, or SIGKILL when not graceful), then ZooKeeper; release the state dir.

        ``reason`` (not graceful only): the nodes show as stopped with it, not as killed.
        """
        if not self._started and not self._nodes:
            self._lock.release()
            return
        self._started = False
        atexit.unregister(self.shutdown)
        for group in (self.brokers, [self.zookeeper]):
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
            node_dir = spec.node_dir(name)
            return [
                java, *shlex.split(heap), *shlex.split(JVM_FLAGS),
                f"-Dlog4j.configuration=file:{node_dir / 'log4j.properties'}",
                f"-Dkafka.logs.dir={node_dir / 'logs'}",
                node_marker(spec.state_dir, name),
                "-cp", self.dist.classpath, main, str(node_dir / config),
            ]
        self._nodes = {
            "zookeeper": Node(
                "zookeeper", argv("zookeeper", spec.zookeeper_heap, ZOOKEEPER_MAIN, "zookeeper.properties"),
                spec.node_dir("zookeeper"), spec.zk_port, self.backend,
            )
        }
        for b in spec.broker_ids:
            name = f"broker-{b}"
            self._nodes[name] = Node(
                name, argv(name, spec.broker_heap, BROKER_MAIN, "server.properties"), spec.node_dir(name),
                spec.broker_port(b), self.backend, broker_id=b, session_timeout_s=spec.session_timeout_s,
            )
        for node in self._nodes.values():
            node.on_change = self._notify

    def _notify(self, node: Node, state: NodeState, reason: str) -> None:
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
            pids = {name: node.pid for name, node in self._nodes.items()}
            if pids != last_pids:
                write_pid_file(self.spec.state_dir, pids)
                last_pids = pids

    def node(self, ref: int | str) -> Node:
        """A node by broker id (1..N), 'broker-N', 'N' or 'zookeeper'."""
        key = str(ref).strip().lower()
        if key == "0":  # as in the console: 0 is ZooKeeper
            key = "zookeeper"
        elif key.isdigit():
            key = f"broker-{key}"
        if key in ("zk", "zoo"):
            key = "zookeeper"
        try:
            return self._nodes[key]
        except KeyError:
            ids = ", ".join(map(str, self.spec.broker_ids))
            raise KafkalabError(f"unknown node {ref!r}: brokers are {ids}, or 0 (ZooKeeper)") from None

    @property
    def zookeeper(self) -> Node:
        return self._nodes["zookeeper"]

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self._nodes.values() if n.kind == "broker"]

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
