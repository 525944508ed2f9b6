"""The cluster spec: how many brokers, which ports, which settings, where the state lives."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.errors import KafkalabError

MAX_BROKERS = 9
DEFAULT_ZK_PORT = 2181
DEFAULT_BROKER_PORTS = tuple(9092 + 100 * i for i in range(MAX_BROKERS))  # 9092, 9192, 9292, ...

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
BROKER_HEAP = "-Xms64m -Xmx384m"
ZOOKEEPER_HEAP = "-Xms32m -Xmx128m"
JVM_FLAGS = (
    "-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 "
    "-XX:+ExplicitGCInvokesConcurrent -XX:TieredStopAtLevel=1 -XX:CICompilerCount=2 "
    "-XX:ReservedCodeCacheSize=64m -Xss512k -Djava.awt.headless=true"
)


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

    def __post_init__(self) -> None:
        self.state_dir = Path(self.state_dir).expanduser().resolve()
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise KafkalabError(f"--brokers {self.brokers} is out of range: give 1..{MAX_BROKERS}")
        if not self.broker_ports:
            self.broker_ports = list(DEFAULT_BROKER_PORTS[: self.brokers])
        if len(self.broker_ports) != self.brokers:
            raise KafkalabError(f"{len(self.broker_ports)} broker ports given for {self.brokers} brokers")
        for broker_id in self.broker_overrides:
            if broker_id not in self.broker_ids:
                raise KafkalabError(f"override for broker {broker_id}, which is not in 1..{self.brokers}")
        self.overrides = {str(k): str(v) for k, v in self.overrides.items()}

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    def broker_port(self, broker_id: int) -> int:
        return self.broker_ports[broker_id - 1]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.broker_ports)

    def broker_settings(self, broker_id: int) -> dict[str, str]:
        """Every broker property, lowest precedence first: Kafka-required, demo, cluster, per broker."""
        replicas = str(min(3, self.brokers))
        settings = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.broker_port(broker_id)}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_port(broker_id)}",
            "log.dirs": str(self.node_dir(f"broker-{broker_id}") / "data"),
            "zookeeper.connect": f"127.0.0.1:{self.zk_port}",
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": str(min(2, self.brokers)),
            **DEMO_BROKER_SETTINGS,
            **self.overrides,
            **{k: str(v) for k, v in self.broker_overrides.get(broker_id, {}).items()},
        }
        return settings

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

    @property
    def session_timeout_s(self) -> float:
        return int(self.broker_settings(1)["zookeeper.session.timeout.ms"]) / 1000
