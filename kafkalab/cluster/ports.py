"""Port checks: say which port is taken and by which process, or pick free ones."""

from __future__ import annotations

import random
import socket
from pathlib import Path

import psutil

from kafkalab.cluster.spec import ClusterSpec, ControllerNetPorts, NetPorts
from kafkalab.cluster.supervision import claim_ports, port_claims
from kafkalab.errors import KafkalabError


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def port_holder(port: int) -> str:
    """'pid 123 (java)' for the process listening on ``port``, or 'an unknown process'."""
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                try:
                    return f"pid {conn.pid} ({psutil.Process(conn.pid).name()})"
                except psutil.Error:
                    return f"pid {conn.pid}"
    except psutil.AccessDenied:
        pass
    return "an unknown process"


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
FREE_PORT_SPAN = 12000  # how far below the ephemeral range free ports are looked for


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands out to ``bind(0)`` and outgoing connections (Linux: 32768-60999)."""
    try:
        low, high = (int(v) for v in EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        return 32768, 60999
    return low, high


def free_port() -> int:
    """A free port on loopback, below the kernel's ephemeral range.

    A port from ``bind(0)`` is free only until someone else binds ``0``: Spark's driver starting beside the
    cluster took a broker's port that way before the broker bound it (CI: "Socket server failed to bind").
    Nothing that asks the kernel for any port can be given one outside that range.
    """
    low, _ = ephemeral_range()
    if low - 1024 >= 1000:
        start = max(1024, low - FREE_PORT_SPAN)
        for _ in range(500):
            port = random.randrange(start, low)
            if port_is_free(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # no room below: the kernel's pick
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports (:func:`free_port` each, none picked twice)."""
    chosen: list[int] = []
    while len(chosen) < count:
        if (port := free_port()) not in chosen:
            chosen.append(port)
    return chosen


def pick_free_ports(spec: ClusterSpec) -> None:
    """Give every node of ``spec`` its own free port, none of them a default: what `--free-ports` means in every
    command (picked now, so two clusters started at once never both reach for a default; one taken by the
    start is replaced then, as ``spec.free_ports`` allows)."""
    brokers = len(spec.broker_ids)
    controllers = len(spec.controller_ports) if spec.kraft else 0
    ports = free_ports((0 if spec.kraft else 1) + brokers + controllers)
    spec.free_ports = True
    if not spec.kraft:
        spec.zk_port = ports.pop(0)
    spec.broker_ports = ports[:brokers]
    if spec.kraft:  # formatted storage pins them again at start (:func:`pin_recorded_ports`)
        spec.controller_ports = ports[brokers:]
    if spec.net_proxies:
        pick_free_net_ports(spec)


def pick_free_net_ports(spec: ClusterSpec, avoid: set[int] | None = None) -> None:
    """Free ports for the network-fault proxies and the listeners behind them, none in ``avoid``."""
    avoid = set(avoid or ()) | set(spec.broker_ports) | {spec.zk_port} | set(spec.controller_ports)
    per_controller = len(ControllerNetPorts.beside(0).ports())
    controllers = len(spec.controller_ports) if spec.kraft else 0
    wanted = 1 + len(NetPorts.beside(0).ports()) * spec.brokers + per_controller * controllers
    ports = [p for p in free_ports(wanted + len(avoid)) if p not in avoid][:wanted]
    spec.zk_proxy_port = ports.pop()
    behind = [ports.pop() for _ in range(per_controller * controllers)]
    spec.controller_net_ports = [ControllerNetPorts(*behind[i:i + per_controller])
                                 for i in range(0, len(behind), per_controller)]
    spec.net_ports = [NetPorts(*ports[i:i + 4]) for i in range(0, len(ports), 4)]


def net_ports(spec: ClusterSpec) -> list[int]:
    """The proxy's ports and the proxied listeners' own (none without network-fault proxies)."""
    if not spec.net_proxies:
        return []
    behind_controllers = [p for n in spec.controller_net_ports for p in n.ports()] if spec.kraft else []
    return [*([] if spec.kraft else [spec.zk_proxy_port]), *(p for n in spec.net_ports for p in n.ports()),
            *behind_controllers]


def spec_ports(spec: ClusterSpec) -> list[int]:
    """Every port the cluster's nodes (and its network-fault proxy) listen on."""
    return [*spec.broker_ports, *(spec.controller_ports if spec.kraft else [spec.zk_port]), *net_ports(spec)]


def resolve_ports(spec: ClusterSpec, pinned_controllers: bool = False, claimed: dict[int, Path] | None = None) -> None:
    """Check the spec's ports; with ``spec.free_ports`` replace taken ones with free ports.

    ``pinned_controllers``: the controller ports are written in formatted KRaft storage and cannot move.
    ``claimed``: ports another kafkalab cluster is starting on (not bound yet), by its state dir.
    """
    claimed = claimed or {}
    wanted: list[tuple[str, str, int]] = [("broker", f"broker {b}", spec.broker_port(b)) for b in spec.broker_ids]
    if spec.kraft:
        wanted += [("controller", f"controller {i + 1}", port) for i, port in enumerate(spec.controller_ports)]
    else:
        wanted.insert(0, ("zookeeper", "ZooKeeper", spec.zk_port))
    taken = [(kind, who, port) for kind, who, port in wanted if port in claimed or not port_is_free(port)]
    if not taken:
        return
    for kind, who, port in taken:
        if not spec.free_ports or (kind == "controller" and pinned_controllers):
            hint = ("it is recorded in the formatted storage of this state dir: free it, or use another --state-dir"
                    if kind == "controller" and pinned_controllers else "stop it, or use --free-ports")
            holder = (f"the kafkalab cluster in {claimed[port]}" if port in claimed and port_is_free(port)
                      else port_holder(port))
            raise KafkalabError(f"port {port} for {who} is taken by {holder}: {hint}")
    used = {port for _, _, port in wanted} | set(claimed)
    for kind, who, _port in taken:
        new = free_port()
        while new in used:
            new = free_port()
        used.add(new)
        index = int(who.split()[-1]) - 1 if kind != "zookeeper" else 0
        if kind == "zookeeper":
            spec.zk_port = new
        elif kind == "broker":
            spec.broker_ports[index] = new
        else:
            spec.controller_ports[index] = new


def resolve_net_ports(spec: ClusterSpec, claimed: dict[int, Path]) -> None:
    """The network-fault ports: any taken is an error naming it, or (``spec.free_ports``) all picked again."""
    ours = net_ports(spec)
    others = {*spec.broker_ports, *(spec.controller_ports if spec.kraft else [spec.zk_port])}
    taken = [p for p in ours if p in claimed or p in others or ours.count(p) > 1 or not port_is_free(p)]
    if not taken:
        return
    if spec.free_ports:
        pick_free_net_ports(spec, set(claimed))
        return
    holder = (f"the kafkalab cluster in {claimed[taken[0]]}" if taken[0] in claimed
              else "this cluster's own nodes" if taken[0] in others or ours.count(taken[0]) > 1
              else port_holder(taken[0]))
    raise KafkalabError(f"port {taken[0]} for the network-fault proxies is taken by {holder}: stop it, "
                        "or use --free-ports")


def resolve_and_claim_ports(spec: ClusterSpec, pinned_controllers: bool = False) -> None:
    """:func:`resolve_ports` against bound ports and those other kafkalab clusters claimed, then claim ours."""
    with port_claims(spec.state_dir) as claimed:
        resolve_ports(spec, pinned_controllers, claimed)
        resolve_net_ports(spec, claimed)  # after the nodes' ports, which it must not take
        claim_ports(spec.state_dir, spec_ports(spec))
