"""Live statistics snapshots and timeline events of the clients (read by the console and the runner)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class ClientState(StrEnum):
    """Where a producer or consumer is in its life."""

    STARTING = "starting"
    RUNNING = "running"
    BLOCKED = "blocked"  # producer: send buffer full, waiting for the brokers
    FLUSHING = "flushing"  # producer: waiting for the last deliveries
    CLOSING = "closing"  # consumer: committing and leaving the group
    PAUSED = "paused"  # SIGSTOP (a lab's pause): hung, as a long GC pause leaves a process; nothing closes
    FINISHED = "finished"
    CRASHED = "crashed"
    FAILED = "failed"

    @property
    def ended(self) -> bool:
        return self in (ClientState.FINISHED, ClientState.CRASHED, ClientState.FAILED)

    @property
    def halted(self) -> bool:
        """Nothing moves: ended, or paused (its last report's rate is not a rate now)."""
        return self.ended or self is ClientState.PAUSED


@dataclass(frozen=True)
class ClientEvent:
    """Something worth a line on the lab timeline: assigned, revoked, lost, stalled, resumed, note,
    error, started, finished, crashed."""

    ts: float  # epoch seconds
    client: str
    kind: str
    detail: str = ""
    partitions: tuple[int, ...] = ()


EventCallback = Callable[[ClientEvent], None]


@dataclass(frozen=True)
class ProducerStats:
    name: str
    state: ClientState
    attempted: int
    acked: int
    failed: Mapping[str, int]  # error name -> count (e.g. NOT_ENOUGH_REPLICAS, _MSG_TIMED_OUT)
    unknown: int  # outcome unknown (purged while in flight)
    in_flight: int
    rate: float  # acknowledged records per second, recent
    total: int
    log_path: str | None = None
    error: str | None = None
    output: tuple[str, ...] = ()  # a foreign command's last output lines (its pane shows them)
    foreign: bool = False  # played by a foreign command: only its payload log and the brokers tell what it did
    reports: bool = False  # a foreign producer that reports its attempts and failures (clients/foreign.py)
    transactional: bool = False  # producer.transaction-id set: records count as acked once their transaction committed
    transactions_committed: int = 0
    transactions_aborted: int = 0
    transactions_open: int = 0  # 0 or 1: begun, not yet committed or aborted
    uncommitted: int = 0  # records of the open transaction the brokers hold, waiting for its commit
    blocked_s: float = 0.0  # while BLOCKED: how long send() has waited for room in the full local buffer

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())

    @property
    def progress(self) -> float:
        done = self.acked + self.failed_total + self.unknown
        return min(1.0, done / self.total) if self.total else 0.0


# a read_committed consumer's wait behind an open transaction worth a timeline line and its pane's word (every
# transaction holds its readers until it commits: a short wait is how read_committed works)
HELD_SHOWN_AFTER_S = 2.0


def held_s(held: Mapping[int, float]) -> float:
    """How long a reader has waited so far behind an open transaction, over its partitions (0: it is not held)."""
    return max(held.values(), default=0.0)


@dataclass(frozen=True)
class ConsumerStats:
    name: str
    group: str
    state: ClientState
    group_state: str  # joining, stable, rebalancing, lost, left, dead
    received: int
    processed: int
    rate: float  # processed records per second, recent
    assignment: tuple[int, ...] = ()
    committed: Mapping[int, int] = field(default_factory=dict)  # partition -> committed offset
    lag: Mapping[int, int] = field(default_factory=dict)  # partition -> high watermark - position
    rebalances: int = 0
    member_id: str = ""
    log_path: str | None = None
    error: str | None = None
    output: tuple[str, ...] = ()  # a foreign command's last output lines (its pane shows them)
    foreign: bool = False  # played by a foreign command: its assignment and lag are its group's
    reports: bool = False  # a foreign consumer that reports its rebalances (clients/foreign.py)
    # read_committed: partition -> seconds it has waited so far at the last stable offset, an open transaction
    # past it; lso_wait_s, the longest such wait (None: read_uncommitted, or a client that does not tell)
    held: Mapping[int, float] = field(default_factory=dict)
    lso_wait_s: float | None = None

    @property
    def total_lag(self) -> int:
        return sum(self.lag.values())

    @property
    def held_s(self) -> float:
        return held_s(self.held)


class RateMeter:
    """Recent rate of a growing counter, from samples taken at most every ``every`` seconds."""

    def __init__(self, window: int = 6, every: float = 0.5) -> None:
        self._samples: deque[tuple[float, int]] = deque(maxlen=window)
        self._every = every

    def sample(self, count: int, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if not self._samples or now - self._samples[-1][0] >= self._every:
            self._samples.append((now, count))

    def rate(self) -> float:
        if len(self._samples) < 2:
            return 0.0
        (t0, c0), (t1, c1) = self._samples[0], self._samples[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0
