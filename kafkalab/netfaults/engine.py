"""The proxy itself: asyncio listeners on loopback, one pair of pipes per connection, the rules applied live.

Runs only inside the proxy's own process (``python -m kafkalab.netfaults``). Each accepted connection is
given a source (the node owning the connecting socket, see :mod:`kafkalab.netfaults.sources`), then two
pipes copy its bytes, requests and replies, each obeying the link's rules at the moment a chunk arrives:
a hold stops reading (the chunk in hand and whatever the kernel buffers wait, in order), a drop discards,
a limit paces, a delay schedules the write (Toxiproxy's latency: measured from the chunk's arrival, so
delays do not add up across chunks, and never reorder).

A connection obeys the rules of its *lineage*, slot by slot, the first that has one: its own source's, then
(a named client: ``producer``, ``consumer-1``) every client's (``clients``), then every source's (``*``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

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
from kafkalab.netfaults.sources import SourceKind, SourceTable

QUEUE_HIGH_WATER = 1 * 2**20  # bytes waiting for a rule's task before the source stops being read
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
    """The rules a chunk obeys: per slot, the first rule along the connection's lineage."""

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

    def is_cut(self, lineage: tuple[str, ...], target: str) -> bool:
        return any(Link(source, target) in self.cuts for source in lineage)

    def effective(self, lineage: tuple[str, ...], target: str, flow: Flow) -> Effective:
        if not self.slots:
            return PASS
        found = [s for s in (self.slots.get((Link(source, target), flow)) for source in lineage) if s is not None]
        if not found:
            return PASS
        return Effective(next((s.blocking for s in found if s.blocking), None),
                         next((s.delay for s in found if s.delay), None),
                         next((s.limit for s in found if s.limit), None))


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


def reset(transport: asyncio.BaseTransport) -> None:
    """Close with a RST, not a FIN: the peer sees 'connection reset', as when a host vanishes."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
    assert isinstance(transport, asyncio.Transport)
    transport.abort()


class Side(asyncio.Protocol):
    """One socket of a connection (the accepted one, or the proxy's own upstream one).

    A protocol, not a stream: a chunk that no rule concerns is written to the other socket from
    ``data_received`` itself, with no task switch and no copy into a reader's buffer (the streams' way cost
    two event-loop turns per chunk: a fifth of direct loopback's round trips). Until the side is paired with
    a pipe, what arrives is kept in order.
    """

    def __init__(self, on_accept: Callable[[Side], None] | None = None) -> None:
        self.transport: asyncio.Transport | None = None
        self.on_accept = on_accept
        self.pipe: Pipe | None = None  # the pipe that reads what this socket receives
        self.writer_of: Pipe | None = None  # the pipe that writes to this socket: paused while its buffer is full
        self.early: list[bytes] = []
        self.early_eof = False
        self.lost = False
        self.write_paused = False
        self.drain_waiters: list[asyncio.Future[None]] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.on_accept is not None:
            transport.pause_reading()  # nothing read before the source is known and the upstream is open
            self.on_accept(self)

    def data_received(self, data: bytes) -> None:
        if self.pipe is not None:
            self.pipe.feed(data)
        else:
            self.early.append(data)

    def eof_received(self) -> bool:
        if self.pipe is not None:
            self.pipe.feed_eof()
        else:
            self.early_eof = True
        return True  # keep the socket open for writing: a half-close is forwarded as a half-close

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.wake_drainers(exc or ConnectionResetError("connection lost"))
        conn = self.pipe.conn if self.pipe is not None else None
        if conn is not None:
            conn.side_lost(exc)

    def pause_writing(self) -> None:
        self.write_paused = True
        if self.writer_of is not None:
            self.writer_of.pause(Pause.DESTINATION_FULL)

    def resume_writing(self) -> None:
        self.write_paused = False
        if self.writer_of is not None:
            self.writer_of.resume(Pause.DESTINATION_FULL)
        self.wake_drainers(None)

    def wake_drainers(self, exc: Exception | None) -> None:
        waiters, self.drain_waiters = self.drain_waiters, []
        for fut in waiters:
            if not fut.done():
                if exc is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(exc)

    async def drain(self) -> None:
        """Returns once the socket's write buffer is under its high-water mark (raises once it is gone)."""
        if self.lost:
            raise ConnectionResetError("connection lost")
        if self.write_paused:
            fut = asyncio.get_running_loop().create_future()
            self.drain_waiters.append(fut)
            await fut

    def write(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def is_closing(self) -> bool:
        return self.transport is None or self.transport.is_closing()


class Pause(Enum):
    """Why a pipe stopped reading its source (reading resumes once no reason is left)."""

    DESTINATION_FULL = "the destination's write buffer is over its high-water mark"
    QUEUE_FULL = "the chunks waiting for a rule are over QUEUE_HIGH_WATER"
    HOLD = "a hold rule keeps the bytes where they are"


class Pipe:
    """One flow of one connection: what ``src`` receives, obeying the rules, written to ``dst``.

    The fast path (no rule on the flow, nothing waiting): each chunk is written as it arrives. Otherwise
    the chunks queue, in order, for a task that applies the rules; once it has emptied the queue and no rule
    applies any more, the fast path takes over again.
    """

    def __init__(self, proxy: Proxy, conn: Connection, flow: Flow, src: Side, dst: Side) -> None:
        self.proxy, self.conn, self.flow, self.src, self.dst = proxy, conn, flow, src, dst
        self.loop = asyncio.get_running_loop()
        self.forwarded = conn.stats.forwarded
        self.queue: deque[tuple[float, bytes]] = deque()  # (arrival, chunk) waiting for the rules' task
        self.queued = 0
        self.eof = False  # the source half-closed: forwarded once everything before it is
        self.done = False
        self.worker: asyncio.Task[None] | None = None
        self.pauses: set[Pause] = set()
        self.held = 0  # bytes in hand while a hold stops this pipe
        self.delayed: deque[tuple[float, bytes]] = deque()
        self.delayed_bytes = 0
        self.timer: asyncio.TimerHandle | None = None
        self.drained = asyncio.Event()
        self.next_free = 0.0  # a limit's schedule: when the next byte may go

    def start(self) -> None:
        """Paired: what arrived before is handled first, then the source is read."""
        early, self.src.early = self.src.early, []
        for data in early:
            self.feed(data)
        if self.src.early_eof:
            self.feed_eof()
        if self.src.transport is not None and not self.pauses:
            self.src.transport.resume_reading()

    def rules(self) -> Effective:
        return self.proxy.book.effective(self.conn.lineage, self.conn.port.target, self.flow)

    def feed(self, data: bytes) -> None:
        if self.worker is None and not self.delayed:
            rules = self.rules()
            if rules is PASS or rules == PASS:
                self.dst.write(data)  # the common case: no rule on this flow
                self.forwarded[self.flow] += len(data)
                return
        self.queue.append((self.loop.time(), data))
        self.queued += len(data)
        if self.queued > QUEUE_HIGH_WATER:
            self.pause(Pause.QUEUE_FULL)
        self.wake_worker()

    def feed_eof(self) -> None:
        self.eof = True
        if self.worker is None and not self.delayed:
            self.forward_eof()
        else:
            self.wake_worker()

    def wake_worker(self) -> None:
        if self.worker is None:
            self.worker = asyncio.create_task(self.work())

    def pause(self, why: Pause) -> None:
        if not self.pauses and self.src.transport is not None:
            self.src.transport.pause_reading()
        self.pauses.add(why)

    def resume(self, why: Pause) -> None:
        if why not in self.pauses:
            return
        self.pauses.discard(why)
        if not self.pauses and self.src.transport is not None and self.conn.started:
            self.src.transport.resume_reading()

    async def work(self) -> None:
        """Apply the rules to the queued chunks, in order; ends when the queue is empty."""
        try:
            while self.queue:
                arrived, data = self.queue.popleft()
                self.queued -= len(data)
                if self.queued <= QUEUE_HIGH_WATER // 2:
                    self.resume(Pause.QUEUE_FULL)
                await self.obey(data, arrived)
            if self.eof:
                await self.flush_delayed()
                self.forward_eof()
        except asyncio.CancelledError:
            raise
        except Exception:  # a write failed: both sides learn it as a reset, as before
            self.conn.reset()
        finally:
            self.worker = None

    async def obey(self, data: bytes, arrived: float) -> None:
        rules = self.rules()
        if isinstance(rules.blocking, Hold):
            self.pause(Pause.HOLD)
            while isinstance(rules.blocking, Hold):
                self.held = len(data) + self.queued
                await self.proxy.changed()
                rules = self.rules()
            self.held = 0
            self.resume(Pause.HOLD)
        if isinstance(rules.blocking, Drop):
            self.conn.stats.dropped[self.flow] += len(data)
            return
        if rules.limit is None and rules.delay is None and not self.delayed:
            self.dst.write(data)
            self.forwarded[self.flow] += len(data)
            await self.dst.drain()
            return
        await self.paced(data, arrived, rules)

    def forward_eof(self) -> None:
        if self.done:
            return
        self.done = True
        transport = self.dst.transport
        if transport is not None and transport.can_write_eof() and not transport.is_closing():
            transport.write_eof()  # half-close, as the sender did
        self.conn.pipe_done()

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
                self.forwarded[self.flow] += len(piece)
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
                self.forwarded[self.flow] += len(data)
        if self.delayed:
            self.timer = self.loop.call_at(self.delayed[0][0], self.deliver_due)
        if self.delayed_bytes <= DELAY_HIGH_WATER // 2:
            self.drained.set()

    def rules_changed(self) -> None:
        """A delay healed (or no longer the flow's): what it still holds back goes now, as Toxiproxy does."""
        if self.delayed and self.rules().delay is None:
            if self.timer is not None:
                self.timer.cancel()
            self.deliver_due(everything=True)

    async def flush_delayed(self) -> None:
        while self.delayed:
            self.drained.clear()
            await asyncio.sleep(max(0.0, self.delayed[-1][0] - self.loop.time()))
        if not self.dst.is_closing():
            await self.dst.drain()

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.worker is not None:
            self.worker.cancel()


class Connection:
    """A source's connection to a node through the proxy: the accepted socket and the proxy's own upstream."""

    def __init__(self, proxy: Proxy, port: PortSpec, source: str, client: Side, upstream: Side) -> None:
        self.port, self.source = port, source
        self.lineage = proxy.lineage(source)
        self.stats = proxy.stats(source, port.target)
        self.client, self.upstream = client, upstream
        self.started = False
        self.pipes = (Pipe(proxy, self, Flow.REQUESTS, client, upstream),
                      Pipe(proxy, self, Flow.REPLIES, upstream, client))
        client.pipe, upstream.writer_of = self.pipes[0], self.pipes[0]
        upstream.pipe, client.writer_of = self.pipes[1], self.pipes[1]
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.was_reset = False

    async def run(self) -> None:
        self.stats.connections_total += 1
        self.stats.connections_open += 1
        try:
            self.started = True
            for pipe in self.pipes:
                pipe.start()
            for side in (self.client, self.upstream):
                if side.lost:  # gone while the proxy was connecting: the other side learns at once
                    self.side_lost(None)
            await self.finished
        finally:
            self.stats.connections_open -= 1
            for pipe in self.pipes:
                pipe.stop()
            for side in (self.client, self.upstream):
                if side.transport is not None and not side.transport.is_closing():
                    side.transport.close()

    def pipe_done(self) -> None:
        if all(p.done for p in self.pipes):
            self.finish()

    def side_lost(self, exc: Exception | None) -> None:
        """One socket is gone: reset (or failed) -> the other side is reset too; closed by us -> done."""
        if exc is not None or not all(p.done for p in self.pipes):
            self.reset()
        self.finish()

    def finish(self) -> None:
        if not self.finished.done():
            self.finished.set_result(None)

    def reset(self, counted: bool = False) -> None:
        if counted and not self.was_reset:
            self.stats.connections_reset += 1
        self.was_reset = True
        for pipe in self.pipes:
            pipe.stop()
        for side in (self.client, self.upstream):
            if side.transport is not None:
                reset(side.transport)
        self.finish()

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
        self.accepting: set[asyncio.Task[None]] = set()  # kept referenced until each has paired its connection
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
        def accepted(side: Side) -> None:
            task = asyncio.create_task(self.accepted(port, side))
            self.accepting.add(task)
            task.add_done_callback(self.accepting.discard)

        loop = asyncio.get_running_loop()
        try:
            self.servers[port.listen] = await loop.create_server(lambda: Side(on_accept=accepted), LISTEN_HOST,
                                                                 port.listen, reuse_address=True, backlog=128)
        except OSError as exc:
            raise NetFaultsError(f"cannot listen on {LISTEN_HOST}:{port.listen} for {port.target}: "
                                 f"{exc.strerror or exc}: free the port or give another") from None

    async def start(self) -> None:
        for port in self.config.ports:
            await self.listen(port)

    async def accepted(self, port: PortSpec, side: Side) -> None:
        assert side.transport is not None
        peer = side.transport.get_extra_info("peername")
        local = side.transport.get_extra_info("sockname")
        source = CLIENTS
        if self.sources.snapshot():
            # psutil reads /proc (or asks the kernel): off the loop, so other links keep flowing meanwhile
            source = await asyncio.to_thread(self.sources.identify, (peer[0], peer[1]), (local[0], local[1]))
        stats = self.stats(source, port.target)
        lineage = self.lineage(source)
        if port.target in self.down or self.book.is_cut(lineage, port.target):
            stats.connections_refused += 1
            reset(side.transport)
            return
        loop = asyncio.get_running_loop()
        try:
            _, upstream = await asyncio.wait_for(
                loop.create_connection(Side, port.upstream_host, port.upstream_port), CONNECT_TIMEOUT_S)
        except (TimeoutError, OSError):
            stats.upstream_failures += 1
            reset(side.transport)  # the node is not there: the source sees what it would see without the proxy
            return
        assert upstream.transport is not None
        if port.target in self.down or self.book.is_cut(lineage, port.target):  # changed while connecting
            stats.connections_refused += 1
            reset(upstream.transport)
            reset(side.transport)
            return
        conn = Connection(self, port, source, side, upstream)
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)

    # ---- controls -------------------------------------------------------------------------------
    def lineage(self, source: str) -> tuple[str, ...]:
        """Whose rules a connection from ``source`` obeys, first to last (see the module's doc)."""
        if self.sources.is_client(source):
            return (source, CLIENTS, ANY_SOURCE)
        return (source, ANY_SOURCE)

    def register(self, name: str, pid: int, kind: SourceKind) -> None:
        """Connections from ``pid`` are ``name``'s from now on; a client may not take a node's or a word's name."""
        if kind is SourceKind.CLIENT and name in (*self.config.targets, CLIENTS, ANY_SOURCE):
            raise NetFaultsError(f"a client cannot be registered as {name!r}: that names a node or every source; "
                                 "give it a name of its own, e.g. producer or consumer-1")
        self.sources.register(name, pid, kind)

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
                if self.book.is_cut(conn.lineage, conn.port.target):
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
