"""The cluster's network-fault proxy (``--net-proxies``): started before the nodes, ended after them, told each
node's pid at every launch and each node's death; and the fault vocabulary ``kafkalab net`` sends through the
cluster's control socket (isolate, cut, drop-replies, hold, delay, limit, heal, status).

Links through the proxy: clients -> each broker's CLIENT listener, broker -> broker (the BROKER listener:
replication; in ZooKeeper mode the controller's requests), broker -> ZooKeeper; in KRaft mode brokers ->
voters and voter <-> voter (every voter's CONTROLLER listener is advertised, and recorded as its voter
endpoint, at its proxy port). The proxy tells sources apart by the process that owns the connecting socket:
a node's, a client's the run named (``producer``, ``consumer-1``: :meth:`ClusterNet.client_started`), or any
other process's (``clients``; a ``clients`` rule acts on the named clients too).
kafkalab's own admin view uses the brokers' PLAINTEXT listeners, ZooKeeper's own port and (KRaft) each
voter's CONTROLLER_DIRECT listener, never proxied, so it keeps seeing the truth.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import psutil

from kafkalab.cluster.spec import ClusterSpec
from kafkalab.errors import KafkalabError
from kafkalab.netfaults import (
    CLIENTS,
    Cut,
    Delay,
    Direction,
    Drop,
    Hold,
    Limit,
    Link,
    NetFaultsClient,
    NetFaultsError,
    NetFaultsProcess,
    PortSpec,
    ProxyConfig,
    ProxyStatus,
    Rule,
    describe,
)
from kafkalab.netfaults.config import MAX_SOCKET_PATH, SOCKET_NAME
from kafkalab.netfaults.sources import SourceKind, sockets_visible

NETFAULTS_DIR = "netfaults"
ZOOKEEPER = "zookeeper"
PRODUCER = "producer"
CONSUMER_PREFIX = "consumer-"
_CLIENT_NAME = re.compile(r"^(producer|consumer-[1-9]\d*)$")


def is_named_client(name: str) -> bool:
    """``producer`` or ``consumer-K``: a run's client process, told apart by name (a source, never a target)."""
    return bool(_CLIENT_NAME.match(name))


def is_client_source(name: str) -> bool:
    """A source that is a client: ``clients`` (every client process) or one named client."""
    return name == CLIENTS or is_named_client(name)


class NetAction(StrEnum):
    """What `kafkalab net ACTION` does."""

    ISOLATE = "isolate"  # cut a node both ways from every other node; clients kept
    CUT = "cut"  # the connections SOURCE opens to TARGET reset (--both-ways: TARGET's to SOURCE too)
    DROP_REPLIES = "drop-replies"  # SOURCE's requests reach TARGET, the replies never come back
    HOLD = "hold"  # the bytes one way (or both) kept by the proxy, delivered in order on heal
    DELAY = "delay"
    LIMIT = "limit"
    HEAL = "heal"
    STATUS = "status"


NET_ACTIONS = tuple(a.value for a in NetAction)
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s)?$")
_RATE = re.compile(r"^(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib)?(?:/s)?$")
_RATE_UNITS = {None: 1, "b": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2}


def parse_ms(text: str, what: str = "a delay") -> int:
    """``200ms``, ``200`` (ms), ``1.5s`` -> whole milliseconds; a KafkalabError naming the form otherwise."""
    match = _DURATION.match(text.strip().lower())
    value = float(match.group(1)) * (1000 if match.group(2) == "s" else 1) if match else 0.0
    if not match or value < 1 or value != int(value):
        raise KafkalabError(f"{what} {text!r} does not parse: give whole milliseconds, e.g. 200ms or 1.5s")
    return int(value)


def parse_rate(text: str) -> int:
    """``500KB/s``, ``1MiB/s``, ``20000`` (bytes/s) -> bytes per second."""
    match = _RATE.match(text.strip().lower())
    value = float(match.group(1)) * _RATE_UNITS[match.group(2)] if match else 0.0
    if not match or value < 1:
        raise KafkalabError(f"a bandwidth {text!r} does not parse: give bytes per second, e.g. 500KB/s or 1MiB/s")
    return int(value)


def control_dir(spec: ClusterSpec) -> Path:
    """Where the proxy's socket and log live: the state dir, unless too deep for a unix socket (then a temp dir)."""
    own = spec.state_dir / NETFAULTS_DIR
    if len(str(own / SOCKET_NAME)) <= MAX_SOCKET_PATH:
        return own
    return Path(tempfile.mkdtemp(prefix="kafkalab-nf-"))


def proxy_ports(spec: ClusterSpec) -> tuple[PortSpec, ...]:
    """Each broker's client and inter-broker proxy ports, and ZooKeeper's or each voter's, each forwarding to the
    listener behind."""
    if spec.kraft:
        ports = [PortSpec(spec.controller_port(c), spec.controller_node(c), spec.controller_net(c).real)
                 for c in spec.controller_ids]
    else:
        ports = [PortSpec(spec.zk_proxy_port, ZOOKEEPER, spec.zk_port)]
    for broker_id, net in zip(spec.broker_ids, spec.net_ports, strict=True):
        ports += [PortSpec(net.client, f"broker-{broker_id}", net.client_real),
                  PortSpec(net.inter, f"broker-{broker_id}", net.inter_real)]
    return tuple(ports)


@dataclass(frozen=True)
class NetRequest:
    """One `kafkalab net` request as the control socket carries it: the node words are resolved by the owner,
    which knows the cluster; amounts are parsed by the command line, so a typo never reaches the owner."""

    action: NetAction
    words: tuple[str, ...] = ()
    ms: int = 0
    jitter_ms: int = 0
    bytes_per_s: int = 0
    direction: Direction = Direction.BOTH
    both_ways: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action.value, "words": list(self.words), "ms": self.ms, "jitter_ms": self.jitter_ms,
                "bytes_per_s": self.bytes_per_s, "direction": self.direction.value, "both_ways": self.both_ways}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NetRequest:
        try:
            return cls(NetAction(str(data.get("action"))), tuple(str(w) for w in data.get("words", ())),
                       int(data.get("ms", 0)), int(data.get("jitter_ms", 0)), int(data.get("bytes_per_s", 0)),
                       Direction(data.get("direction", "both")), bool(data.get("both_ways", False)))
        except ValueError as exc:
            raise KafkalabError(f"a net request that does not parse ({exc}): actions are {', '.join(NET_ACTIONS)}") \
                from None


@dataclass(frozen=True)
class NetChange:
    """What one applied request changed, told to every listener (the run's timeline, the console): the action,
    the nodes it named and each rule applied or healed, described for people."""

    action: NetAction
    nodes: tuple[str, ...]
    rules: tuple[str, ...]

    def line(self) -> str:
        """One line for a timeline: ``network: isolate broker-1 (cut broker-1 -> broker-2, ...)``."""
        named = " ".join(self.nodes) if self.nodes else "every link"
        what = "; ".join(self.rules) if self.rules else "nothing was in force"
        return f"network {self.action.value} {named}: {what}"


NetListener = Callable[[NetChange], None]
ActiveController = Callable[[], int | None]
"""The KRaft active controller's node id at this moment (None: no leader known), for the word `controller`."""


def cluster_nodes(spec: ClusterSpec) -> list[str]:
    """The nodes whose links the proxy carries: ZooKeeper or the dedicated controllers, then the brokers."""
    metadata = [name for name, _cid in spec.dedicated_controllers] if spec.kraft else [ZOOKEEPER]
    return [*metadata, *(f"broker-{b}" for b in spec.broker_ids)]


class ClusterNet:
    """The proxy process of one cluster and the node facts it needs; safe to call from any thread."""

    def __init__(self, spec: ClusterSpec, active_controller: ActiveController | None = None) -> None:
        self.spec = spec
        self.nodes = cluster_nodes(spec)
        self._active_controller = active_controller
        self._lock = threading.RLock()
        self._proc: NetFaultsProcess | None = None
        self._pids: dict[str, int] = {}
        self._down: set[str] = set(self.nodes)  # nothing runs yet: the ports refuse, as the nodes' own would
        self._clients: dict[str, int] = {}  # the run's client processes known by name (producer, consumer-K) -> pid
        self.problems: list[str] = []  # requests the proxy failed, and its restarts: shown by `net status`
        self._listeners: list[NetListener] = []

    def add_listener(self, listener: NetListener) -> None:
        """``listener`` is told every change a request made (from a lab fault, a console key or `kafkalab net`)."""
        self._listeners.append(listener)

    def _tell(self, change: NetChange) -> None:
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception as exc:  # a listener's failure must not undo or hide an applied fault
                self.problems.append(f"a network-change listener failed: {exc}")

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            config = ProxyConfig(control_dir(self.spec), proxy_ports(self.spec), nodes=dict(self._pids))
            self._proc = NetFaultsProcess.start(config)
            for node in sorted(self._down):
                self._proc.client.down(node)
            for name, pid in self._clients.items():  # a restarted proxy knows the run's clients again
                self._proc.client.register(name, pid, SourceKind.CLIENT)

    def stop(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
            if proc is None:
                return
            proc.stop()
            if proc.config.control_dir != self.spec.state_dir / NETFAULTS_DIR:
                shutil.rmtree(proc.config.control_dir, ignore_errors=True)

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.alive() else None

    def supervise(self) -> None:
        """Called by the cluster's monitor: a proxy that died is started again (its rules are lost, said so)."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.alive():
                return
            self.problems.append(f"the network-fault proxy exited ({proc.last_words() or proc.popen.returncode}): "
                                 "started again, every rule healed")
            self._proc = None
            try:
                self.start()
            except NetFaultsError as exc:
                self.problems.append(f"the network-fault proxy could not start again: {exc}")

    # ---- node events (the cluster calls these) -----------------------------------------------------
    def launched(self, node: str, pid: int) -> None:
        """A node's process started: connections it opens are its own, and its ports accept again."""
        with self._lock:
            self._pids[node] = pid
            self._down.discard(node)
            self._quietly(lambda c: registered_and_up(c, node, pid))
            if not sockets_visible(pid):  # a container's JVM this user cannot read: its links look like a client's
                self.problems.append(f"{node}'s sockets (pid {pid}) are not visible to the proxy: rules naming it "
                                     "as a source do not reach its connections")

    def client_started(self, name: str, pid: int) -> None:
        """A run's client process started (again): its connections are ``name``'s (``producer``, ``consumer-K``),
        and still every client's, so a ``clients`` rule acts on them too."""
        if not is_named_client(name):
            raise KafkalabError(f"a client is named producer or consumer-K, not {name!r}")
        with self._lock:
            self._clients[name] = pid
            self._quietly(lambda c: c.register(name, pid, SourceKind.CLIENT))

    @property
    def named_clients(self) -> dict[str, int]:
        """The client processes known by name, and their (latest) pids."""
        with self._lock:
            return dict(self._clients)

    def ended(self, node: str) -> None:
        """A node's process is gone (killed, stopped, crashed): its ports refuse, its connections are reset."""
        with self._lock:
            self._down.add(node)
            self._quietly(lambda c: c.down(node))

    def _quietly(self, call: Callable[[NetFaultsClient], object]) -> None:
        """A node event the proxy could not take is kept as a problem: it must not stop the monitor."""
        proc = self._proc
        if proc is None or not proc.alive():
            return
        try:
            call(proc.client)
        except NetFaultsError as exc:
            self.problems.append(str(exc))

    # ---- faults ------------------------------------------------------------------------------------
    def client(self) -> NetFaultsClient:
        proc = self._proc
        if proc is None or not proc.alive():
            raise KafkalabError("the cluster's network-fault proxy is not running: start the cluster with "
                                "--net-proxies")
        return proc.client

    def status(self) -> ProxyStatus:
        return self.client().status()

    def handle(self, request: NetRequest) -> dict[str, Any]:
        """Apply one `kafkalab net` request; every rule is checked before the first is applied."""
        client = self.client()
        if request.action is NetAction.STATUS:
            return {"status": status_lines(client.status(), self.problems)}
        nodes = self.resolve(request.words)
        if request.action is NetAction.HEAL:
            healed = [describe(r) for r in self.heal(client, nodes)]
            self._tell(NetChange(request.action, tuple(nodes), tuple(healed)))
            return {"healed": healed}
        rules = self.rules(request, nodes)
        for rule in rules:
            client.apply(rule)
        applied = [describe(r) for r in rules]
        self._tell(NetChange(request.action, tuple(nodes), tuple(applied)))
        return {"applied": applied}

    def heal(self, client: NetFaultsClient, nodes: list[str]) -> list[Rule]:
        if len(nodes) > 2:
            raise KafkalabError(f"heal takes no node, one (every link to or from it) or two (the link from the first "
                                f"to the second), not {len(nodes)}")
        if not nodes:
            return client.heal()
        if len(nodes) == 1:
            return [*client.heal(source=nodes[0]), *client.heal(target=nodes[0])]
        return client.heal(source=nodes[0], target=nodes[1])

    def rules(self, request: NetRequest, nodes: list[str]) -> list[Rule]:
        action = request.action
        if action is NetAction.ISOLATE:
            if len(nodes) != 1 or is_client_source(nodes[0]):
                raise KafkalabError("isolate takes one node, e.g. `kafkalab net isolate broker 1` (clients are kept; "
                                    "cut a client's link instead: `kafkalab net cut producer broker 1`)")
            return isolation(nodes[0], self.nodes, self.spec)
        if len(nodes) != 2:
            raise KafkalabError(f"{action.value} takes a link: SOURCE TARGET, e.g. `kafkalab net {action.value} "
                                f"broker 2 broker 1{' 200ms' if action is NetAction.DELAY else ''}"
                                f"{' 100KB/s' if action is NetAction.LIMIT else ''}`")
        source, target = nodes
        if is_client_source(target):
            raise KafkalabError(f"{target} {'are' if target == CLIENTS else 'is'} only a source: no connection goes "
                                "to a client through the proxy")
        if source == target:
            raise KafkalabError(f"{source} -> {target} is no link: a node's connections to itself are not proxied")
        if source == ZOOKEEPER:
            raise KafkalabError("ZooKeeper opens no connection to the brokers: cut the link from the broker "
                                "(`kafkalab net cut broker N zookeeper`)")
        if target == ZOOKEEPER and is_client_source(source):
            raise KafkalabError(f"{source} {'do' if source == CLIENTS else 'does'} not reach ZooKeeper through the "
                                "proxy: name a broker as the source")
        if not is_client_source(source) and not opens_connections(source, target, self.spec):
            raise KafkalabError(f"{source} opens no connection to {target}: a KRaft controller only reaches the other "
                                f"voters (cut the link from the broker: `kafkalab net cut {target} {source}`)")
        link = Link(source, target)
        if action is NetAction.CUT:
            return [Cut(link), *([Cut(Link(target, source))] if request.both_ways and target != ZOOKEEPER else [])]
        if action is NetAction.DROP_REPLIES:
            return [Drop(link, Direction.REPLIES)]
        if action is NetAction.HOLD:
            return [Hold(link, request.direction)]
        if action is NetAction.DELAY:
            return [Delay(link, request.direction, request.ms, request.jitter_ms)]
        return [Limit(link, request.direction, request.bytes_per_s)]

    def resolve(self, words: tuple[str, ...]) -> list[str]:
        """``broker 1 zookeeper`` -> [broker-1, zookeeper]: `broker N`, `broker-N`, `N`, `zookeeper`, `clients`,
        `producer`, `consumer K` or `consumer-K` (a client the run named); in KRaft mode `controller N` or
        `controller-N` (the Nth voter) and `controller` (the active one, now)."""
        names: list[str] = []
        queue = [w.strip().lower() for w in words if w.strip()]
        while queue:
            word = queue.pop(0)
            if word in ("broker", "brokers"):
                if not queue:
                    raise KafkalabError("`broker` needs its id: e.g. broker 1")
                word = queue.pop(0)
            elif word == "controller":
                if queue and queue[0].isdigit():
                    word = f"controller-{queue.pop(0)}"
                else:
                    names.append(self.active_controller())
                    continue
            elif word in ("consumer", "consumers"):
                if not queue or not queue[0].isdigit():
                    raise KafkalabError("`consumer` needs its number: e.g. consumer 1 (a lab's consumer local_id)")
                word = f"{CONSUMER_PREFIX}{queue.pop(0)}"
            if word == PRODUCER or word.startswith(CONSUMER_PREFIX):
                names.append(self.named_client(word))
                continue
            name = CLIENTS if word in (CLIENTS, "client") else self.spec.node_name(word)
            if name != CLIENTS and name not in self.nodes:
                raise self.spec.unknown_node(word)
            names.append(name)
        return names


    def named_client(self, name: str) -> str:
        """``name`` if the run has told the proxy of that client; a one-line refusal otherwise."""
        known = self.named_clients
        if name not in known:
            have = ", ".join(sorted(known)) or "none: a lab run names its producer and consumers as they start"
            raise KafkalabError(f"no client {name!r} in this run (clients known by name: {have})")
        return name

    def active_controller(self) -> str:
        """The node hosting the KRaft active controller at this moment: `controller` in a request."""
        if not self.spec.kraft:
            raise KafkalabError("`controller` names a KRaft voter: in ZooKeeper mode name the broker, e.g. broker 1")
        leader = self._active_controller() if self._active_controller is not None else None
        if leader is None or leader not in self.spec.controller_ids:
            raise KafkalabError("no active controller is known right now (no quorum leader): name one, "
                                "e.g. controller 1, or try again in a moment")
        return self.spec.controller_node(leader)


def registered_and_up(client: NetFaultsClient, node: str, pid: int) -> None:
    client.register(node, pid)
    client.up(node)


def opens_connections(source: str, target: str, spec: ClusterSpec) -> bool:
    """Whether ``source`` ever connects to ``target``: ZooKeeper never does, a dedicated KRaft controller only to
    the other voters (brokers fetch the metadata from it, it never calls them); brokers reach everyone."""
    if source == ZOOKEEPER:
        return False
    dedicated = {name for name, _cid in spec.dedicated_controllers}
    return source not in dedicated or target in dedicated


def isolation(node: str, nodes: list[str], spec: ClusterSpec) -> list[Rule]:
    """``node`` cut both ways from every other node, on the links that exist: in ZooKeeper mode from ZooKeeper
    and the other brokers; in KRaft mode a broker from the voters and the other brokers, a controller from the
    other voters and the brokers."""
    rules: list[Rule] = []
    for other in nodes:
        if other == node:
            continue
        if opens_connections(other, node, spec):
            rules.append(Cut(Link(other, node)))
        if opens_connections(node, other, spec):
            rules.append(Cut(Link(node, other)))
    return rules


def status_lines(status: ProxyStatus, problems: list[str]) -> list[str]:
    """What `kafkalab net status` prints: every rule in force, the nodes whose ports are down, the clients known
    by name, any problem."""
    lines = [f"proxy pid {status.pid}"]
    down = [t.name for t in status.targets if t.down]
    lines.append(f"down (refusing connections): {', '.join(down)}" if down else "every node's ports accept")
    if status.clients:
        lines.append("clients known by name: " + ", ".join(
            f"{name} (pid {pid}{'' if psutil.pid_exists(pid) else ', ended'})"
            for name, pid in sorted(status.clients.items())))
    rules = status.rules()
    lines += [f"  {describe(r)}" for r in rules] if rules else ["no network fault in force"]
    return lines + [f"problem: {p}" for p in problems[-5:]]
