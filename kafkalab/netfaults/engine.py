"""The proxy itself: asyncio listeners on loopback, one pair of pipes per connection, the rules applied live.

Runs only inside the proxy's own process (``python -m kafkalab.netfaults``). Each accepted connection is
given a source (the node owning the connecting socket, see :mod:`kafkalab.netfaults.sources`), then two
pipes copy its bytes, requests and replies, each obeying the link's rules at the moment a chunk arrives:
a hold stops reading (the chunk in hand and whatever the kernel buffers wait, in order), a drop discards,
a limit paces, a delay schedules the write (Toxiproxy's latency: measured from the chunk's arrival, so
delays do not add up across chunks, and never reorder).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
from collections import deque
from dataclasses import dataclass, field

from kafkalab.netfaults.config import LISTEN_HOST, PortSpec, ProxyConfig
from kafkalab.netfaults.rules import (
    ANY_SOURCE,
    BLOCKING_KINDS,
    CLIENTS,
    Cut,
    Delay,
    Drop,
    Flow,
    Hold,
    Limit,
    Link,
    NetFaultsError,
    Rule,
    RuleKind,
)
from kafkalab.netfaults.sources import SourceTable

CHUNK = 256 * 1024  # one read; large reads keep a bulk transfer to a few syscalls per MB
DELAY_HIGH_WATER = 8 * 2**20  # bytes scheduled by a delay before the pipe stops reading (the sender then waits)
CONNECT_TIMEOUT_S = 5.0
LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST, as a dead peer's kernel would


@dataclass
class FlowSlots:
    """What one flow of one link is doing now: at most one rule per aspect."""

    blocking: Drop | Hold | None = None
    delay: Delay | None = None
    limit: Limit | None = None

    def rules(self) -> list[Rule]:
        return [r for r in (self.blocking, self.delay, self.limit) if r is not None]


@dataclass(frozen=True)
class Effective:
    """The rules a chunk obeys: the link's own slot, or else the any-source rule's."""

    blocking: Drop | Hold | None
    delay: Delay | None
    limit: Limit | None


PASS = Effective(None, None, None)


class RuleBook:
    """Every rule in force, by link and flow."""

    def __init__(self) -> None:
        self.cuts: set[Link] = set()
        self.slots: dict[tuple[Link, Flow], FlowSlots] = {}

    def apply(self, rule: Rule) -> None:
        if isinstance(rule, Cut):
            self.cuts.add(rule.link)
            return
        for flow in rule.direction.flows():
            slots = self.slots.setdefault((rule.link, flow), FlowSlots())
            if rule.kind in BLOCKING_KINDS:
                assert isinstance(rule, Drop | Hold)
                slots.blocking = rule
            elif isinstance(rule, Delay):
                slots.delay = rule
            elif isinstance(rule, Limit):
                slots.limit = rule

    def heal(self, source: str | None, target: str | None) -> list[Rule]:
        """Remove the rules on links matching ``source`` and ``target`` (None: any); the rules removed."""
        def hit(link: Link) -> bool:
            return source in (None, link.source) and target in (None, link.target)

        healed = [r for r in self.rules() if hit(r.link)]
        self.cuts = {link for link in self.cuts if not hit(link)}
        self.slots = {key: s for key, s in self.slots.items() if not hit(key[0])}
        return healed

    def rules(self) -> list[Rule]:
        """Every rule in force, each once (a both-ways rule fills two slots)."""
        found: list[Rule] = [Cut(link) for link in sorted(self.cuts, key=str)]
        for slots in self.slots.values():
            found += [r for r in slots.rules() if r not in found]
        return found

    def is_cut(self, source: str, target: str) -> bool:
        return Link(source, target) in self.cuts or Link(ANY_SOURCE, target) in self.cuts

    def effective(self, source: str, target: str, flow: Flow) -> Effective:
        if not self.slots:
            return PASS
        own = self.slots.get((Link(source, target), flow)) or FlowSlots()
        anyone = self.slots.get((Link(ANY_SOURCE, target), flow)) or FlowSlots()
        return Effective(own.blocking or anyone.blocking, own.delay or anyone.delay, own.limit or anyone.limit)


@dataclass
class LinkStats:
    """Counters of one (source, target) link since the proxy started."""

    connections_total: int = 0
    connections_open: int = 0
    connections_refused: int = 0  # reset as soon as accepted: the link was cut, or the node was going down
    connections_reset: int = 0  # open ones reset by a cut or the node going down
    upstream_failures: int = 0  # the node did not accept the proxy's connection
    forwarded: dict[Flow, int] = field(default_factory=lambda: dict.fromkeys(Flow, 0))
    dropped: dict[Flow, int] = field(default_factory=lambda: dict.fromkeys(Flow, 0))


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a RST, not a FIN: the peer sees 'connection reset', as when a host vanishes."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
    writer.transport.abort()


class Pipe:
    """One flow of one connection: read from ``src``, obey the rules, write to ``dst``."""

    def __init__(self, proxy: Proxy, conn: Connection, flow: Flow, src: asyncio.StreamReader,
                 dst: asyncio.StreamWriter) -> None:
        self.proxy, self.conn, self.flow, self.src, self.dst = proxy, conn, flow, src, dst
        self.loop = asyncio.get_running_loop()
        self.held = 0  # bytes in hand while a hold stops this pipe
        self.delayed: deque[tuple[float, bytes]] = deque()
        self.delayed_bytes = 0
        self.timer: asyncio.TimerHandle | None = None
        self.drained = asyncio.Event()
        self.next_free = 0.0  # a limit's schedule: when the next byte may go

    async def run(self) -> None:
        stats = self.conn.stats
        book = self.proxy.book
        source, target = self.conn.source, self.conn.port.target
        while True:
            data = await self.src.read(CHUNK)
            if not data:
                break
            arrived = self.loop.time()
            rules = book.effective(source, target, self.flow)
            while isinstance(rules.blocking, Hold):
                self.held = len(data)
                await self.proxy.changed()
                rules = book.effective(source, target, self.flow)
            self.held = 0
            if isinstance(rules.blocking, Drop):
                stats.dropped[self.flow] += len(data)
                continue
            if rules.limit is None and rules.delay is None and not self.delayed:
                self.dst.write(data)  # the common case: no rule on this flow
                stats.forwarded[self.flow] += len(data)
                await self.dst.drain()
                continue
            await self.paced(data, arrived, rules)
        await self.flush_delayed()
        if self.dst.can_write_eof() and not self.dst.is_closing():
            self.dst.write_eof()  # half-close, as the sender did

    async def paced(self, data: bytes, arrived: float, rules: Effective) -> None:
        pieces = [data]
        if rules.limit is not None:
            size = max(1, rules.limit.bytes_per_s // 10)  # 100 ms worth at a time, as Toxiproxy's bandwidth
            pieces = [data[i:i + size] for i in range(0, len(data), size)]
        for piece in pieces:
            if rules.limit is not None:
                now = self.loop.time()
                start = max(now, self.next_free)
                self.next_free = start + len(piece) / rules.limit.bytes_per_s
                if start > now:
                    await asyncio.sleep(start - now)
            if rules.delay is None and not self.delayed:
                self.dst.write(piece)
                self.conn.stats.forwarded[self.flow] += len(piece)
                await self.dst.drain()
                continue
            due = arrived
            if rules.delay is not None:
                jitter = rules.delay.jitter_ms
                due += (rules.delay.ms + (random.randint(-jitter, jitter) if jitter else 0)) / 1000
            # never before the chunk ahead of it: a delay keeps the byte order
            self.schedule(max(due, self.delayed[-1][0]) if self.delayed else due, piece)
            while self.delayed_bytes > DELAY_HIGH_WATER:
                self.drained.clear()
                await self.drained.wait()

    def schedule(self, due: float, data: bytes) -> None:
        self.delayed.append((due, data))
        self.delayed_bytes += len(data)
        if self.timer is None:
            self.timer = self.loop.call_at(due, self.deliver_due)

    def deliver_due(self, everything: bool = False) -> None:
        self.timer = None
        now = self.loop.time()
        while self.delayed and (everything or self.delayed[0][0] <= now):
            _, data = self.delayed.popleft()
            self.delayed_bytes -= len(data)
            if not self.dst.is_closing():
                self.dst.write(data)
                self.conn.stats.forwarded[self.flow] += len(data)
        if self.delayed:
            self.timer = self.loop.call_at(self.delayed[0][0], self.deliver_due)
        if self.delayed_bytes <= DELAY_HIGH_WATER // 2:
            self.drained.set()

    def rules_changed(self) -> None:
        """A delay healed (or no longer the flow's): what it still holds back goes now, as Toxiproxy does."""
        if self.delayed and self.proxy.book.effective(self.conn.source, self.conn.port.target, self.flow).delay is None:
            if self.timer is not None:
                self.timer.cancel()
            self.deliver_due(everything=True)

    async def flush_delayed(self) -> None:
        while self.delayed:
            self.drained.clear()
            await asyncio.sleep(max(0.0, self.delayed[-1][0] - self.loop.time()))
        if not self.dst.is_closing():
            await self.dst.drain()

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class Connection:
    """A source's connection to a node through the proxy: the accepted socket and the proxy's own upstream."""

    def __init__(self, proxy: Proxy, port: PortSpec, source: str, client: tuple[asyncio.StreamReader,
                 asyncio.StreamWriter], upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        self.port, self.source = port, source
        self.stats = proxy.stats(source, port.target)
        self.client_writer, self.upstream_writer = client[1], upstream[1]
        self.pipes = (Pipe(proxy, self, Flow.REQUESTS, client[0], upstream[1]),
                      Pipe(proxy, self, Flow.REPLIES, upstream[0], client[1]))
        self.tasks: list[asyncio.Task[None]] = []
        self.was_reset = False

    async def run(self) -> None:
        self.stats.connections_total += 1
        self.stats.connections_open += 1
        self.tasks = [asyncio.create_task(p.run()) for p in self.pipes]
        try:
            pending: set[asyncio.Task[None]] = set(self.tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if any(t.cancelled() or t.exception() is not None for t in done):
                    # one side reset (or a write failed): the other side learns the same way
                    self.reset()
                    break
        finally:
            self.stats.connections_open -= 1
            for pipe in self.pipes:
                pipe.cancel_timer()
            for writer in (self.client_writer, self.upstream_writer):
                if not writer.is_closing():
                    writer.close()

    def reset(self, counted: bool = False) -> None:
        if counted and not self.was_reset:
            self.stats.connections_reset += 1
        self.was_reset = True
        for task in self.tasks:
            task.cancel()
        reset(self.client_writer)
        reset(self.upstream_writer)

    def rules_changed(self) -> None:
        for pipe in self.pipes:
            pipe.rules_changed()


class Proxy:
    """Every listener, connection and rule of one proxy process. Not thread-safe: the event loop owns it."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.book = RuleBook()
        self.sources = SourceTable(config.nodes)
        self.servers: dict[int, asyncio.Server] = {}
        self.down: set[str] = set()
        self.connections: set[Connection] = set()
        self.link_stats: dict[Link, LinkStats] = {}
        self._changed = asyncio.Event()

    # ---- the rules' wake-up call ----------------------------------------------------------------
    async def changed(self) -> None:
        """Returns at the next change of the rules."""
        await self._changed.wait()

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
        for conn in list(self.connections):
            conn.rules_changed()

    def stats(self, source: str, target: str) -> LinkStats:
        return self.link_stats.setdefault(Link(source, target), LinkStats())

    # ---- listeners ------------------------------------------------------------------------------
    async def listen(self, port: PortSpec) -> None:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self.accepted(port, reader, writer)

        try:
            self.servers[port.listen] = await asyncio.start_server(accepted, LISTEN_HOST, port.listen,
                                                                   reuse_address=True, backlog=128)
        except OSError as exc:
            raise NetFaultsError(f"cannot listen on {LISTEN_HOST}:{port.listen} for {port.target}: "
                                 f"{exc.strerror or exc}: free the port or give another") from None

    async def start(self) -> None:
        for port in self.config.ports:
            await self.listen(port)

    async def accepted(self, port: PortSpec, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        local = writer.get_extra_info("sockname")
        source = CLIENTS
        if self.sources.snapshot():
            # psutil reads /proc (or asks the kernel): off the loop, so other links keep flowing meanwhile
            source = await asyncio.to_thread(self.sources.identify, (peer[0], peer[1]), (local[0], local[1]))
        stats = self.stats(source, port.target)
        if port.target in self.down or self.book.is_cut(source, port.target):
            stats.connections_refused += 1
            reset(writer)
            return
        try:
            upstream = await asyncio.wait_for(asyncio.open_connection(port.upstream_host, port.upstream_port),
                                              CONNECT_TIMEOUT_S)
        except (TimeoutError, OSError):
            stats.upstream_failures += 1
            reset(writer)  # the node is not there: the source sees what it would see without the proxy
            return
        if port.target in self.down or self.book.is_cut(source, port.target):  # changed while connecting
            stats.connections_refused += 1
            reset(upstream[1])
            reset(writer)
            return
        conn = Connection(self, port, source, (reader, writer), upstream)
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)

    # ---- controls -------------------------------------------------------------------------------
    def known_sources(self) -> set[str]:
        return {*self.config.targets, *self.sources.snapshot(), CLIENTS, ANY_SOURCE}

    def check_link(self, link: Link) -> None:
        if link.target not in self.config.targets:
            raise NetFaultsError(f"no node {link.target!r} behind this proxy: its targets are "
                                 f"{', '.join(self.config.targets)}")
        if link.source not in self.known_sources():
            raise NetFaultsError(f"no source {link.source!r}: name a target, a registered node "
                                 f"({', '.join(sorted(self.sources.snapshot())) or 'none yet'}), {CLIENTS} or *")

    def apply(self, rule: Rule) -> None:
        self.check_link(rule.link)
        self.book.apply(rule)
        if rule.kind is RuleKind.CUT:
            for conn in list(self.connections):
                if self.book.is_cut(conn.source, conn.port.target):
                    conn.reset(counted=True)
        self.notify()

    def heal(self, source: str | None, target: str | None) -> list[Rule]:
        healed = self.book.heal(source, target)
        self.notify()
        return healed

    async def set_down(self, target: str, down: bool) -> None:
        if target not in self.config.targets:
            raise NetFaultsError(f"no node {target!r} behind this proxy: its targets are "
                                 f"{', '.join(self.config.targets)}")
        ports = [p for p in self.config.ports if p.target == target]
        if down:
            self.down.add(target)
            for port in ports:
                server = self.servers.pop(port.listen, None)
                if server is not None:
                    server.close()  # the port stops listening: new connections are refused by the kernel
            for conn in list(self.connections):
                if conn.port.target == target:
                    conn.reset(counted=True)
        else:
            self.down.discard(target)
            for port in ports:
                if port.listen not in self.servers:
                    await self.listen(port)

    async def close(self) -> None:
        for server in self.servers.values():
            server.close()
        self.servers.clear()
        for conn in list(self.connections):
            conn.reset()
        await asyncio.sleep(0)  # let the cancelled pipes unwind before the loop ends
