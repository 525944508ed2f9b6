"""The course consumer as an object the lab runner and the console drive.

Its poll loop (``consumer_loop``) runs in a child process: librdkafka cannot drop a group member
in-process without leaving the group and committing, and a crash must do neither, so ``crash()``
kills the child, exactly as the course's Java consumer dies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from kafkalab.clients.client_thread import ClientThread
from kafkalab.clients.consumer_loop import EXIT_CRASH
from kafkalab.clients.options import ConsumerConfig
from kafkalab.clients.stats import ClientEvent, ClientState, ConsumerStats, EventCallback


class Consumer(ClientThread):
    """One course consumer instance; ``settings`` are course option names (``consumer.group-id`` ...) or the
    same validated; ``bootstrap``, if given, overrides ``bootstrap.server``.

    The payload log goes to ``log_dir/consumer[-LOCALID].csv``. Events (assigned, revoked, lost,
    note, error, quit, wait, started, finished, crashed) reach ``on_event`` from a reader thread.
    """

    def __init__(
        self,
        settings: Mapping[str, str] | ConsumerConfig,
        log_dir: Path,
        bootstrap: str | None = None,
        on_event: EventCallback | None = None,
    ) -> None:
        self.config = ConsumerConfig.of(settings, bootstrap)
        self.name = self.config.name
        self.log_dir = Path(log_dir)
        self.log_path = self.log_dir / f"{self.name}.csv"
        self._on_event = on_event
        self._proc: subprocess.Popen[str] | None = None
        self._stats: dict[str, Any] = {"state": "starting", "group_state": "joining"}
        self._stderr: deque[str] = deque(maxlen=20)
        self._error: str | None = None
        self._crash_requested = False

    def start(self) -> None:
        """Start the consumer process (returns at once)."""
        if self._proc is not None:
            raise RuntimeError("consumer already started")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "kafkalab.clients.consumer_loop"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps({"config": asdict(self.config), "log_dir": str(self.log_dir)}) + "\n")
        self._proc.stdin.flush()
        self._start_thread(self._read, self.name)
        threading.Thread(target=self._drain_stderr, args=(self._proc.stderr,), daemon=True).start()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def stop(self) -> None:
        """Clean close: finish the record in hand, store/commit as configured, leave the group."""
        if self._proc is None or self._proc.stdin is None:
            return
        try:
            self._proc.stdin.write("stop\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def crash(self) -> None:
        """Abrupt end (SIGKILL): no close, no leave-group, no final commit; the log stays ``.partial``."""
        if self._proc is not None and self._proc.poll() is None:
            self._crash_requested = True
            os.kill(self._proc.pid, signal.SIGKILL)

    def stats(self) -> ConsumerStats:
        s = self._stats
        return ConsumerStats(
            name=self.name, group=self.config.group_id, state=(state := ClientState(s.get("state", "starting"))),
            group_state=s.get("group_state", "joining"), received=s.get("received", 0),
            processed=s.get("processed", 0), rate=0.0 if state.ended else s.get("rate", 0.0),
            assignment=tuple(s.get("assignment", ())),
            committed={int(k): v for k, v in s.get("committed", {}).items()},
            lag={int(k): v for k, v in s.get("lag", {}).items()}, rebalances=s.get("rebalances", 0),
            member_id=s.get("member_id", ""), log_path=s.get("log_path"), error=self._error,
        )

    # -- reader thread ----------------------------------------------------------------------------
    def _read(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for line in proc.stdout:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if item.get("t") == "stats":
                self._stats = item
            elif item.get("t") == "event":
                if item["kind"] == "error" and self._stats.get("state") == "starting":
                    self._error = item["detail"]
                self._emit(item["kind"], item["detail"], tuple(item["partitions"]))
        code = proc.wait()
        final = dict(self._stats)
        if code == 0:
            final["state"] = ClientState.FINISHED
        elif code == EXIT_CRASH or self._crash_requested:
            final.update(state=ClientState.CRASHED, group_state="dead")
            if self._crash_requested:
                final["log_path"] = str(self.log_path) + ".partial"
                self._emit("crashed", "killed (no close, no leave-group, no commit)")
        else:
            final["state"] = ClientState.FAILED
            if self._error is None:
                tail = [t for t in self._stderr if t.strip()]
                self._error = tail[-1].strip() if tail else f"consumer process exited with status {code}"
        self._stats = final

    def _drain_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            self._stderr.append(line)

    def _emit(self, kind: str, detail: str, partitions: tuple[int, ...] = ()) -> None:
        if self._on_event is not None:
            self._on_event(ClientEvent(time.time(), self.name, kind, detail, partitions))
