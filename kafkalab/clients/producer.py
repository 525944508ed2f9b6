"""The course producer as an object the lab runner and the console drive.

Its send loop (``producer_loop``) runs in a child process, niced like the nodes and in a session of its
own: librdkafka's broker threads can busy-poll (``linger.ms=0`` with a full in-flight window) and, inside
kafkalab's process, took both cores from the nodes for up to 90 s, long enough for ZooKeeper sessions to
expire. In its own process the producer only ever gets a node's share of the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from kafkalab.clients.child_client import ChildClient
from kafkalab.clients.options import ProducerConfig
from kafkalab.clients.stats import ClientState, EventCallback, ProducerStats


class Producer(ChildClient):
    """Sends the course's records; see ``kafkalab.clients`` for the life cycle.

    ``settings`` are course option names (``producer.acks`` ...) or the same validated; ``bootstrap``, if
    given, overrides ``bootstrap.server``. The payload log goes to ``log_dir/producer[-LOCALID].csv``.
    Events (note, started, stalled, resumed, error, finished, crashed) reach ``on_event`` from a reader thread.
    """

    MODULE = "kafkalab.clients.producer_loop"

    def __init__(
        self,
        settings: Mapping[str, str] | ProducerConfig,
        log_dir: Path,
        run_id: str,
        bootstrap: str | None = None,
        on_event: EventCallback | None = None,
        seed: int | None = None,
    ) -> None:
        self.config = ProducerConfig.of(settings, bootstrap)
        super().__init__(self.config.name, log_dir, on_event)
        self.run_id = run_id
        self._seed = seed

    def start(self) -> None:
        """Start the producer process (returns at once)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._spawn({"config": asdict(self.config), "log_dir": str(self.log_dir), "run_id": self.run_id,
                     "seed": self._seed}, background=True)

    def stop(self, drain: bool = True) -> None:
        """Stop sending; with ``drain`` wait for outstanding deliveries (at most the delivery timeout),
        else purge them (their rows say failed/unknown). A transactional producer aborts its open transaction
        either way (its records' rows say failed, ABORTED). The log is closed as complete."""
        self._send("stop" if drain else "abort")

    def crash(self) -> None:
        """Abrupt end: outstanding records are dropped unlogged (a transactional producer's open transaction is
        left open, as a killed process leaves it); the log stays ``.partial``."""
        self._send("crash")

    def stats(self) -> ProducerStats:
        s = self._stats
        state = self._shown_state(ClientState(s.get("state", ClientState.STARTING)))
        failed: dict[str, int] = s.get("failed", {})
        attempted, acked, unknown = s.get("attempted", 0), s.get("acked", 0), s.get("unknown", 0)
        return ProducerStats(
            name=self.name, state=state, attempted=attempted, acked=acked, failed=failed, unknown=unknown,
            in_flight=max(0, attempted - acked - sum(failed.values()) - unknown),
            rate=0.0 if state.halted else s.get("rate", 0.0), total=self.config.total,
            log_path=s.get("log_path"), error=self._error, transactional=self.config.transactional,
            transactions_committed=s.get("txn_committed", 0), transactions_aborted=s.get("txn_aborted", 0),
            transactions_open=s.get("txn_open", 0), uncommitted=s.get("txn_written", 0),
            blocked_s=s.get("blocked_s", 0.0) if state == ClientState.BLOCKED else 0.0,
        )
