"""The course consumer as an object the lab runner and the console drive.

Its poll loop (``consumer_loop``) runs in a child process: librdkafka cannot drop a group member
in-process without leaving the group and committing, and a crash must do neither, so ``crash()``
kills the child, exactly as the course's Java consumer dies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kafkalab.clients.child_client import ChildClient
from kafkalab.clients.options import ConsumerConfig
from kafkalab.clients.stats import ClientState, ConsumerStats, EventCallback


class Consumer(ChildClient):
    """One course consumer instance; ``settings`` are course option names (``consumer.group-id`` ...) or the
    same validated; ``bootstrap``, if given, overrides ``bootstrap.server``.

    The payload log goes to ``log_dir/consumer[-LOCALID].csv``. Events (assigned, revoked, lost,
    note, error, quit, wait, started, finished, crashed) reach ``on_event`` from a reader thread.
    """

    MODULE = "kafkalab.clients.consumer_loop"

    def __init__(
        self,
        settings: Mapping[str, str] | ConsumerConfig,
        log_dir: Path,
        bootstrap: str | None = None,
        on_event: EventCallback | None = None,
    ) -> None:
        self.config = ConsumerConfig.of(settings, bootstrap)
        super().__init__(self.config.name, log_dir, on_event)
        self._stats["group_state"] = "joining"

    def start(self) -> None:
        """Start the consumer process (returns at once)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._spawn({"config": asdict(self.config), "log_dir": str(self.log_dir)})

    def stop(self) -> None:
        """Clean close: finish the record in hand, store/commit as configured, leave the group."""
        self._send("stop")

    def end(self) -> None:
        """The run was stopped: the log written, then the process ends without the close (no leave-group, no
        final commit: nothing waits on the brokers the stop is ending)."""
        self._send("end")

    def crash(self) -> None:
        """Abrupt end (SIGKILL): no close, no leave-group, no final commit; the log stays ``.partial``."""
        self._kill()

    def _ended_crashed(self, final: dict[str, Any]) -> None:
        final["group_state"] = "dead"
        if self._crash_requested:
            final["log_path"] = str(self.log_path) + ".partial"
            if self._ended_by_stop:
                self._emit("finished", "killed with the run's stop (it had not ended): its log stays .partial")
            else:
                self._emit("crashed", "killed (no close, no leave-group, no commit)")

    def stats(self) -> ConsumerStats:
        s = self._stats
        state = self._shown_state(ClientState(s.get("state", "starting")))
        return ConsumerStats(
            name=self.name, group=self.config.group_id, state=state,
            group_state=s.get("group_state", "joining"), received=s.get("received", 0),
            processed=s.get("processed", 0), rate=0.0 if state.halted else s.get("rate", 0.0),
            assignment=tuple(s.get("assignment", ())),
            committed={int(k): v for k, v in s.get("committed", {}).items()},
            lag={int(k): v for k, v in s.get("lag", {}).items()}, rebalances=s.get("rebalances", 0),
            member_id=s.get("member_id", ""), log_path=s.get("log_path"), error=self._error,
            held={int(k): v for k, v in s.get("held", {}).items()}, lso_wait_s=s.get("lso_wait_s"),
        )
