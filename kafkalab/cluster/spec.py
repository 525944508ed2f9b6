"""The cluster spec: how many brokers, which ports, which settings, where the state lives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.errors import KafkalabError

MAX_BROKERS = 9
MODES = ("zookeeper", "kraft")
CONTROLLER_COUNTS = (1, 3)
CONTROLLER_ID_BASE = 100
"""Dedicated controllers are nodes 101, 102, 103: distinct from the brokers' 1..9 in every log line."""
DEFAULT_ZK_PORT = 2181
DEFAULT_BROKER_PORTS = tuple(9092 + 100 * i for i in range(MAX_BROKERS))  # 9092, 9192, 9292, ...
DEFAULT_CONTROLLER_PORTS = tuple(9093 + 100 * i for i in range(max(CONTROLLER_COUNTS)))  # 9093, 9193, 9293

# Demo settings that make failover visible in seconds on a small laptop (see DESIGN.md).
ZOOKEEPER_TICK_MS = 1000
DEMO_BROKER_SETTINGS: dict[str, str] = {
    # ZooKeeper clamps session timeouts to 2x..20x tickTime: 3 s is inside, and a SIGKILLed
    # broker's leaderships move after about 3-4 s instead of Kafka's 18 s.
    "zookeeper.session.timeout.ms": "3000",
    "zookeeper.connection.timeout.ms": "10000",
    "replica.lag.time.max.ms": "10000",
    "controlled.shutdown.retry.backoff.ms": "1000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "leader.imbalance.check.interval.seconds": "20",
    "num.network.threads": "2",
    "num.io.threads": "4",
    "num.recovery.threads.per.data.dir": "1",
    "log.cleaner.dedupe.buffer.size": "4194304",
    "log.cleaner.threads": "1",
    "background.threads": "4",
    "socket.request.max.bytes": "104857600",
    "group.min.session.timeout.ms": "1000",
}
# KRaft's own liveness and election settings (see DESIGN.md); each line lands commented in the config.
KRAFT_DEMO_SETTINGS: dict[str, tuple[str, str]] = {
    "broker.session.timeout.ms": (
        "2000", "default 9000: a SIGKILLed broker is fenced, and its leaderships move, after 2 s"),
    "broker.heartbeat.interval.ms": (
        "400", "default 2000: five heartbeats per session, so one late heartbeat under load fences nobody"),
    # The quorum's own timeouts stay at Kafka's defaults, which already elect a new active controller in
    # 2-4 s. Lower values (fetch 1500, election backoff 500) made a loaded 2-core laptop (load average
    # 30+) re-run elections for a minute at startup: a slow follower's missed fetch looked like a dead
    # leader. Written out so the lab shows what decides the controller's failover.
    "controller.quorum.fetch.timeout.ms": (
        "2000", "Kafka's default: followers stand for election 2 s after the active controller went silent"),
    "controller.quorum.election.timeout.ms": (
        "1000", "Kafka's default: a candidate waits 1-2 s (randomised) before it stands again"),
    "controller.quorum.election.backoff.max.ms": (
        "1000", "Kafka's default: the longest wait after a split vote before the next one"),
    "initial.broker.registration.timeout.ms": (
        "240000", "default 60000: on a loaded laptop the quorum can take over a minute to form at startup; "
                  "a broker waits for it instead of exiting"),
    "controller.socket.timeout.ms": (
        "5000", "default 30000: brokers drop a dead controller's connection sooner"),
}
KRAFT_FROM_ZOOKEEPER_MODE = ("zookeeper.session.timeout.ms", "zookeeper.connection.timeout.ms",
                             "controlled.shutdown.retry.backoff.ms")
# A ZooKeeper-mode setting a lab writes, as KRaft says it: the broker's session with the active controller
# plays its ZooKeeper session's part (how long a silent broker keeps its leaderships). Other ZooKeeper-only
# settings (KRAFT_FROM_ZOOKEEPER_MODE) have no KRaft counterpart and are left out.
KRAFT_EQUIVALENTS = {"zookeeper.session.timeout.ms": "broker.session.timeout.ms"}


def overrides_for_mode(overrides: Mapping[str, str], mode: str) -> dict[str, str]:
    """``overrides`` as ``mode`` names them: in KRaft a ZooKeeper setting becomes its KRaft equivalent."""
    if mode != "kraft":
        return dict(overrides)
    return {KRAFT_EQUIVALENTS.get(k, k): v for k, v in overrides.items()
            if k in KRAFT_EQUIVALENTS or k not in KRAFT_FROM_ZOOKEEPER_MODE}


BROKER_HEAP = "-Xms64m -Xmx384m"
CONTROLLER_HEAP = "-Xms32m -Xmx160m"
ZOOKEEPER_HEAP = "-Xms32m -Xmx128m"
JVM_FLAGS = (
    "-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 "
    "-XX:+ExplicitGCInvokesConcurrent -XX:TieredStopAtLevel=1 -XX:CICompilerCount=2 "
    "-XX:ReservedCodeCacheSize=64m -Xss512k -Djava.awt.headless=true"
)
# Every cluster (local or docker) puts the network-fault proxies in its links unless told not to (`--no-net-proxies`,
# `[cluster] net_proxies = false`): an instructor can cut a link live in any lab. The one place this default lives.
NET_PROXIES_DEFAULT = True
NET_PORT_OFFSETS = (10, 11, 12, 13)  # a broker's proxy ports beside its own, unless --free-ports picks them
CONTROLLER_NET_OFFSETS = (20, 21)  # a controller's listeners behind its proxy port (9093 -> 9113, 9114)
ZK_PROXY_OFFSET = 10
CONTROLLER_LISTENER = "CONTROLLER"
CONTROLLER_DIRECT_LISTENER = "CONTROLLER_DIRECT"
PROXIED_PROTOCOLS = ",".join(f"{name}:PLAINTEXT" for name in ("PLAINTEXT", "CLIENT", "BROKER", CONTROLLER_LISTENER,
                                                              CONTROLLER_DIRECT_LISTENER))


@dataclass(frozen=True)
class NetPorts:
    """One broker's ports behind the network-fault proxies: each proxied listener binds a port of its own and
    is advertised at the proxy's port that forwards to it (see :mod:`kafkalab.cluster.netwiring`)."""

    client: int  # the proxy's port clients reach: the CLIENT listener as advertised
    client_real: int  # where the CLIENT listener binds
    inter: int  # the proxy's port the other brokers reach: the BROKER (inter-broker) listener as advertised
    inter_real: int  # where the BROKER listener binds

    def ports(self) -> tuple[int, int, int, int]:
        return self.client, self.client_real, self.inter, self.inter_real

    @classmethod
    def beside(cls, broker_port: int) -> NetPorts:
        return cls(*(broker_port + offset for offset in NET_PORT_OFFSETS))


@dataclass(frozen=True)
class ControllerNetPorts:
    """One KRaft voter's listeners behind the network-fault proxy. Its voter endpoint (``controller_ports``,
    recorded in the formatted storage) is the proxy's port; the CONTROLLER listener binds ``real`` and is
    advertised at that proxy port, so brokers and the other voters are routed through the proxy; the
    CONTROLLER_DIRECT listener binds and advertises ``direct``, for kafkalab's quorum view only."""

    real: int
    direct: int

    def ports(self) -> tuple[int, int]:
        return self.real, self.direct

    @classmethod
    def beside(cls, controller_port: int) -> ControllerNetPorts:
        return cls(*(controller_port + offset for offset in CONTROLLER_NET_OFFSETS))


def net_proxies_or_default(chosen: bool | None) -> bool:
    """Whether a cluster has the network-fault proxies: as chosen, else :data:`NET_PROXIES_DEFAULT`."""
    return NET_PROXIES_DEFAULT if chosen is None else chosen


@dataclass
class ClusterSpec:
    """What to run. Ports are resolved by :func:`kafkalab.cluster.ports.resolve_ports` before start."""

    state_dir: Path
    brokers: int = 3
    zk_port: int = DEFAULT_ZK_PORT
    broker_ports: list[int] = field(default_factory=list)
    free_ports: bool = False
    overrides: dict[str, str] = field(default_factory=dict)
    broker_overrides: dict[int, dict[str, str]] = field(default_factory=dict)
    broker_heap: str = BROKER_HEAP
    zookeeper_heap: str = ZOOKEEPER_HEAP
    mode: str = "zookeeper"
    controllers: int = 1
    combined: bool = False
    controller_ports: list[int] = field(default_factory=list)
    controller_heap: str = CONTROLLER_HEAP
    # network-fault proxies in every link: the PLAINTEXT listener at broker_ports stays direct, for kafkalab's
    # own admin view; clients, the other brokers and (KRaft) every node reaching a voter go through the proxy.
    # None: NET_PROXIES_DEFAULT (a lab or a command line that does not say); a bool once the spec is built
    net_proxies: bool | None = None
    net_ports: list[NetPorts] = field(default_factory=list)
    zk_proxy_port: int = 0
    controller_net_ports: list[ControllerNetPorts] = field(default_factory=list)  # KRaft, with net_proxies

    def __post_init__(self) -> None:
        self.state_dir = Path(self.state_dir).expanduser().resolve()
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise KafkalabError(f"--brokers {self.brokers} is out of range: give 1..{MAX_BROKERS}")
        if self.mode not in MODES:
            raise KafkalabError(f"mode {self.mode!r} is unknown: give {' or '.join(MODES)}")
        if self.controllers not in CONTROLLER_COUNTS:
            raise KafkalabError(f"--controllers {self.controllers}: a quorum of 1 or 3 controllers, give 1 or 3")
        if self.combined and self.controllers > self.brokers:
            raise KafkalabError(f"--combined with {self.controllers} controllers needs at least "
                                f"{self.controllers} brokers, not {self.brokers}")
        if not self.broker_ports:
            self.broker_ports = list(DEFAULT_BROKER_PORTS[: self.brokers])
        if len(self.broker_ports) != self.brokers:
            raise KafkalabError(f"{len(self.broker_ports)} broker ports given for {self.brokers} brokers")
        if not self.controller_ports:
            self.controller_ports = list(DEFAULT_CONTROLLER_PORTS[: self.controllers])
        if len(self.controller_ports) != self.controllers:
            raise KafkalabError(f"{len(self.controller_ports)} controller ports given for {self.controllers}")
        for broker_id in self.broker_overrides:
            if broker_id not in self.broker_ids:
                raise KafkalabError(f"override for broker {broker_id}, which is not in 1..{self.brokers}")
        self.overrides = {str(k): str(v) for k, v in self.overrides.items()}
        self.net_proxies = net_proxies_or_default(self.net_proxies)
        if self.net_proxies:
            self.net_ports = self.net_ports or [NetPorts.beside(p) for p in self.broker_ports]
            self.zk_proxy_port = self.zk_proxy_port or self.zk_port + ZK_PROXY_OFFSET
            if len(self.net_ports) != self.brokers:
                raise KafkalabError(f"{len(self.net_ports)} sets of proxy ports given for {self.brokers} brokers")
            if self.kraft:
                self.controller_net_ports = (self.controller_net_ports
                                             or [ControllerNetPorts.beside(p) for p in self.controller_ports])
                if len(self.controller_net_ports) != self.controllers:
                    raise KafkalabError(f"{len(self.controller_net_ports)} sets of proxy ports given for "
                                        f"{self.controllers} controllers")

    @property
    def kraft(self) -> bool:
        return self.mode == "kraft"

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def controller_ids(self) -> list[int]:
        """KRaft voters' node ids: the first brokers' ids when combined, else 101.. (empty in ZooKeeper mode)."""
        if not self.kraft:
            return []
        base = 0 if self.combined else CONTROLLER_ID_BASE
        return [base + i for i in range(1, self.controllers + 1)]

    def controller_port(self, controller_id: int) -> int:
        return self.controller_ports[self.controller_ids.index(controller_id)]

    def controller_node(self, controller_id: int) -> str:
        """The node (process) that hosts a voter: broker-N when combined, else controller-N."""
        index = self.controller_ids.index(controller_id) + 1
        return f"broker-{controller_id}" if self.combined else f"controller-{index}"

    @property
    def dedicated_controllers(self) -> list[tuple[str, int]]:
        """(node name, node id) of the controller-only processes."""
        return [] if self.combined else [(self.controller_node(c), c) for c in self.controller_ids]

    @property
    def bootstrap_controllers(self) -> str:
        """The voters' endpoints (``controller.quorum.bootstrap.servers``): the proxy's ports with network-fault
        proxies, where the CONTROLLER listeners are advertised."""
        return ",".join(f"127.0.0.1:{p}" for p in self.controller_ports)

    @property
    def quorum_bootstrap(self) -> str:
        """Where kafkalab's quorum view reaches the controllers: never through the network-fault proxy."""
        if not (self.net_proxies and self.kraft):
            return self.bootstrap_controllers
        return ",".join(f"127.0.0.1:{n.direct}" for n in self.controller_net_ports)

    def controller_net(self, controller_id: int) -> ControllerNetPorts:
        return self.controller_net_ports[self.controller_ids.index(controller_id)]

    def broker_port(self, broker_id: int) -> int:
        return self.broker_ports[broker_id - 1]

    @property
    def bootstrap(self) -> str:
        """The brokers' direct listeners: kafkalab's own admin view, never cut by a network fault."""
        return ",".join(f"127.0.0.1:{p}" for p in self.broker_ports)

    @property
    def client_bootstrap(self) -> str:
        """What clients (producer, consumers, a person's tools) bootstrap from: the proxy's ports with
        network-fault proxies, else the brokers' own."""
        if not self.net_proxies:
            return self.bootstrap
        return ",".join(f"127.0.0.1:{p.client}" for p in self.net_ports)

    def broker_settings(self, broker_id: int) -> dict[str, str]:
        """Every broker property, lowest precedence first: Kafka-required, demo, cluster, per broker."""
        replicas = str(min(3, self.brokers))
        listener = f"PLAINTEXT://127.0.0.1:{self.broker_port(broker_id)}"
        if not self.kraft:
            required = {
                "broker.id": str(broker_id),
                "listeners": listener,
                "advertised.listeners": listener,
                "log.dirs": str(self.node_dir(f"broker-{broker_id}") / "data"),
                "zookeeper.connect": f"127.0.0.1:{self.zk_port}",
                **(self.proxied_listeners(broker_id) if self.net_proxies else {}),
            }
            demo = DEMO_BROKER_SETTINGS
        else:
            voter = broker_id in self.controller_ids  # combined: this process is a controller too
            required = {
                "process.roles": "broker,controller" if voter else "broker",
                "listeners": listener + (f",CONTROLLER://127.0.0.1:{self.controller_port(broker_id)}"
                                         if voter else ""),
                "advertised.listeners": listener,
                # a ZooKeeper-mode cluster may have run in this state dir: KRaft's data lives apart
                "log.dirs": str(self.node_dir(f"broker-{broker_id}") / "kraft-data"),
                **self._kraft_common(broker_id),
                **(self.kraft_proxied_listeners(broker_id) if self.net_proxies else {}),
            }
            demo = self.kraft_demo_settings()
        return {
            **required,
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": str(min(2, self.brokers)),
            **demo,
            **overrides_for_mode(self.overrides, self.mode),
            **overrides_for_mode({k: str(v) for k, v in self.broker_overrides.get(broker_id, {}).items()}, self.mode),
        }

    def proxied_listeners(self, broker_id: int) -> dict[str, str]:
        """ZooKeeper mode behind the proxies: PLAINTEXT (direct, kafkalab's), CLIENT and BROKER (each advertised
        at its proxy port, so a client or a broker that asks for metadata is routed through the proxy)."""
        direct, net = self.broker_port(broker_id), self.net_ports[broker_id - 1]
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{direct},CLIENT://127.0.0.1:{net.client_real},"
                         f"BROKER://127.0.0.1:{net.inter_real}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{direct},CLIENT://127.0.0.1:{net.client},"
                                    f"BROKER://127.0.0.1:{net.inter}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT,BROKER:PLAINTEXT",
            "inter.broker.listener.name": "BROKER",  # replication and the controller's requests
            "zookeeper.connect": f"127.0.0.1:{self.zk_proxy_port}",
        }

    def kraft_proxied_listeners(self, broker_id: int) -> dict[str, str]:
        """A KRaft broker behind the proxies: PLAINTEXT direct (kafkalab's admin view), CLIENT and BROKER at
        their proxy ports as in ZooKeeper mode; a combined voter's controller listeners as a controller's."""
        direct, net = self.broker_port(broker_id), self.net_ports[broker_id - 1]
        listeners = [f"PLAINTEXT://127.0.0.1:{direct}", f"CLIENT://127.0.0.1:{net.client_real}",
                     f"BROKER://127.0.0.1:{net.inter_real}"]
        advertised = [f"PLAINTEXT://127.0.0.1:{direct}", f"CLIENT://127.0.0.1:{net.client}",
                      f"BROKER://127.0.0.1:{net.inter}"]
        if broker_id in self.controller_ids:
            own, behind = self._controller_listeners(broker_id)
            listeners += own
            advertised += behind
        return {"listeners": ",".join(listeners), "advertised.listeners": ",".join(advertised),
                "listener.security.protocol.map": PROXIED_PROTOCOLS, "inter.broker.listener.name": "BROKER"}

    def _controller_listeners(self, controller_id: int) -> tuple[list[str], list[str]]:
        """(listeners, advertised listeners) of a voter behind the proxy: the CONTROLLER listener advertised at
        the proxy's port (the voter endpoint every other node dials), CONTROLLER_DIRECT at its own port, which
        only the quorum view dials (a DescribeCluster answers with the endpoints of the listener asked)."""
        net, voter = self.controller_net(controller_id), self.controller_port(controller_id)
        return ([f"{CONTROLLER_LISTENER}://127.0.0.1:{net.real}",
                 f"{CONTROLLER_DIRECT_LISTENER}://127.0.0.1:{net.direct}"],
                [f"{CONTROLLER_LISTENER}://127.0.0.1:{voter}",
                 f"{CONTROLLER_DIRECT_LISTENER}://127.0.0.1:{net.direct}"])

    def controller_settings(self, controller_id: int) -> dict[str, str]:
        """A dedicated controller's properties (KRaft mode, not combined).

        It gets the demo and cluster-wide settings too: in KRaft the active controller applies
        broker.session.timeout.ms, leader.imbalance.*, unclean.leader.election.enable and the topic defaults.
        """
        name = self.controller_node(controller_id)
        proxied: dict[str, str] = {}
        if self.net_proxies:
            own, behind = self._controller_listeners(controller_id)
            proxied = {"listeners": ",".join(own), "advertised.listeners": ",".join(behind)}
        return {
            "process.roles": "controller",
            "listeners": f"CONTROLLER://127.0.0.1:{self.controller_port(controller_id)}",
            "log.dirs": str(self.node_dir(name) / "data"),
            **self._kraft_common(controller_id),
            **proxied,
            **self.kraft_demo_settings(),
            **overrides_for_mode(self.overrides, self.mode),
        }

    def _kraft_common(self, node_id: int) -> dict[str, str]:
        return {
            "node.id": str(node_id),
            # the first name is the voters' own listener (the raft client's, and the storage's voter endpoint)
            "controller.listener.names": (f"{CONTROLLER_LISTENER},{CONTROLLER_DIRECT_LISTENER}" if self.net_proxies
                                          else CONTROLLER_LISTENER),
            "listener.security.protocol.map": (PROXIED_PROTOCOLS if self.net_proxies
                                               else "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
            "inter.broker.listener.name": "PLAINTEXT",
            # KIP-853's dynamic quorum (3.9+): the voters are written into the metadata log when kafkalab
            # formats the storage (--initial-controllers), and every node finds the quorum through these
            # endpoints instead of a static controller.quorum.voters list. Kafka 4.x's tools and
            # `kafka-metadata-quorum add-controller` expect this form.
            "controller.quorum.bootstrap.servers": self.bootstrap_controllers,
        }

    def kraft_demo_settings(self) -> dict[str, str]:
        shared = {k: v for k, v in DEMO_BROKER_SETTINGS.items() if k not in KRAFT_FROM_ZOOKEEPER_MODE}
        return {**shared, **{k: v for k, (v, _why) in KRAFT_DEMO_SETTINGS.items()}}

    def zookeeper_settings(self) -> dict[str, str]:
        return {
            "dataDir": str(self.node_dir("zookeeper") / "data"),
            "clientPort": str(self.zk_port),
            "clientPortAddress": "127.0.0.1",
            "tickTime": str(ZOOKEEPER_TICK_MS),
            "maxClientCnxns": "0",
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "srvr,ruok,cons,mntr,stat",
        }

    def node_dir(self, name: str) -> Path:
        return self.state_dir / name

    def node_name(self, ref: int | str) -> str:
        """The node a user means: a broker id (1..N), 'broker-N', 'zookeeper' (or 0, as in the console),
        'controller-N' (in combined mode the Nth voter's broker) or a controller's node id."""
        key = str(ref).strip().lower()
        if key == "0" and not self.kraft:
            return "zookeeper"
        if key.isdigit():
            return self.controller_node(int(key)) if int(key) in self.controller_ids else f"broker-{key}"
        if key in ("zk", "zoo"):
            return "zookeeper"
        if self.combined and key.startswith("controller-") and key[11:].isdigit():
            index = int(key[11:])
            return self.controller_node(self.controller_ids[index - 1]) if 0 < index <= self.controllers else key
        return key

    def unknown_node(self, ref: int | str) -> KafkalabError:
        """The error for a reference that names no node, saying which ones exist."""
        others = f", or controller-1..controller-{self.controllers}" if self.kraft else ", or 0 (ZooKeeper)"
        return KafkalabError(f"unknown node {ref!r}: brokers are {', '.join(map(str, self.broker_ids))}{others}")

    @property
    def session_timeout_s(self) -> float:
        """How long until a SIGKILLed broker's leaderships move: its ZooKeeper session, or its KRaft session."""
        key = "broker.session.timeout.ms" if self.kraft else "zookeeper.session.timeout.ms"
        return int(self.broker_settings(1)[key]) / 1000
