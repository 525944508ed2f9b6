"""The processor (consume-transform-produce) as an object the lab runner and the console drive.

Its loop (``processor_loop``) runs in a child process, as the consumer's does: ``crash()`` kills it (no close, no
leave-group, no commit, an open transaction left open), as a processor's process dies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.clients.child_client import ChildClient
from kafkalab.clients.options import ProcessorConfig
from kafkalab.clients.payload_log import PARTIAL_SUFFIX
from kafkalab.clients.processor_logs import consumed_log_path, produced_log_path
from kafkalab.clients.stats import ClientState, EventCallback, held_s


@dataclass(frozen=True)
class ProcessorStats:
    name: str
    group: str
    state: ClientState
    received: int  # input records consumed
    produced: int  # output records acknowledged (exactly once: their transaction committed)
    failed: int  # output records that failed (exactly once: their transaction aborted)
    rate: float  # produced records per second, recent
    assignment: tuple[int, ...] = ()
    lag: Mapping[int, int] = field(default_factory=dict)  # input partition -> high watermark - position
    held: Mapping[int, float] = field(default_factory=dict)  # read_committed: as ConsumerStats.held
    transactional: bool = False
    transactions_committed: int = 0
    transactions_aborted: int = 0
    transactions_open: int = 0  # 0 or 1
    fenced: bool = False  # a newer instance of its transactional id took over, so it ended
    uncommitted: int = 0  # output records of the batch in hand the brokers acknowledged, its offsets not committed
    log_paths: tuple[str, ...] = ()  # consumed, produced
    error: str | None = None

    @property
    def total_lag(self) -> int:
        return sum(self.lag.values())

    @property
    def held_s(self) -> float:
        return held_s(self.held)


class Processor(ChildClient):
    """Reads ``processor.input-topic``, writes each record upper-cased (its message id kept) to
    ``processor.output-topic``; ``settings`` are course option names or the same validated, ``bootstrap`` (if
    given) overrides ``bootstrap.server``. Logs: see :mod:`kafkalab.clients.processor_logs`. Events (assigned,
    revoked, note, error, started, finished, crashed) reach ``on_event`` from a reader thread."""

    MODULE = "kafkalab.clients.processor_loop"

    def __init__(self, settings: Mapping[str, str] | ProcessorConfig, log_dir: Path, bootstrap: str | None = None,
                 on_event: EventCallback | None = None, log_name: str | None = None) -> None:
        """``log_name``: its logs' stem, when not its name (an instance running beside an earlier one, which
        holds the logs of that name: :func:`~kafkalab.clients.processor_logs.instance_log_name`)."""
        self.config = ProcessorConfig.of(settings, bootstrap)
        self.log_name = log_name or self.config.name
        super().__init__(self.log_name, log_dir, on_event)  # side by side, instances tell their events apart
        self.log_paths = (consumed_log_path(self.log_dir, self.log_name),
                          produced_log_path(self.log_dir, self.log_name))

    def start(self) -> None:
        """Start the processor process (returns at once)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._spawn({"config": asdict(self.config), "log_dir": str(self.log_dir), "log_name": self.log_name})

    def stop(self) -> None:
        """Clean close: the batch in hand finished and committed (its transaction, exactly once), the group left."""
        self._send("stop")

    def end(self) -> None:
        """The run was stopped: the logs written, then the process ends without waiting on the brokers (an open
        transaction aborted if that answers at once, no leave-group)."""
        self._send("end")

    def crash(self) -> None:
        """Abrupt end (SIGKILL): nothing committed, an open transaction left open; the logs stay ``.partial``."""
        self._kill()

    def _ended_crashed(self, final: dict[str, Any]) -> None:
        if self._crash_requested:
            final["log_paths"] = [str(p) + PARTIAL_SUFFIX for p in self.log_paths]
            if self._ended_by_stop:
                self._emit("finished", "killed with the run's stop (it had not ended): its logs stay .partial")
            else:
                open_txn = "; its open transaction left open" if self._stats.get("txn_open") else ""
                self._emit("crashed", f"killed (no close, no commit){open_txn}")

    def stats(self) -> ProcessorStats:
        s = self._stats
        state = self._shown_state(ClientState(s.get("state", ClientState.STARTING)))
        return ProcessorStats(
            name=self.name, group=self.config.group_id, state=state, received=s.get("received", 0),
            produced=s.get("produced", 0), failed=s.get("failed", 0),
            rate=0.0 if state.halted else s.get("rate", 0.0), assignment=tuple(s.get("assignment", ())),
            lag={int(k): v for k, v in s.get("lag", {}).items()},
            held={int(k): v for k, v in s.get("held", {}).items()}, transactional=self.config.transactional,
            transactions_committed=s.get("txn_committed", 0), transactions_aborted=s.get("txn_aborted", 0),
            transactions_open=s.get("txn_open", 0), fenced=s.get("fenced", False), uncommitted=s.get("uncommitted", 0),
            log_paths=tuple(s.get("log_paths", ())), error=self._error,
        )
