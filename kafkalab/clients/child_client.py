"""The parent side of a client whose loop runs in a child process (see ``child_io`` for the protocol)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any

from kafkalab.child_python import python_module
from kafkalab.clients.child_io import EXIT_CRASH, EXIT_FAILED
from kafkalab.clients.stats import ClientEvent, ClientState, EventCallback
from kafkalab.errors import KafkalabError
from kafkalab.priority import lower_autogroup_priority, nice_prefix


class ChildClient:
    """Spawns ``python -m MODULE``, sends it control words, and keeps its latest stats report; a reader
    thread turns its events into ``ClientEvent``s for ``on_event``. ``join``/``running`` follow that thread,
    which ends after the child has exited and its last report has been read."""

    MODULE: str
    _thread: threading.Thread | None = None

    def __init__(self, name: str, log_dir: Path, on_event: EventCallback | None) -> None:
        self.name = name
        self.log_dir = Path(log_dir)
        self.log_path = self.log_dir / f"{name}.csv"  # the payload log the child writes
        self._on_event = on_event
        self._proc: subprocess.Popen[str] | None = None
        self._stats: dict[str, Any] = {"state": ClientState.STARTING}
        self._stderr: deque[str] = deque(maxlen=20)
        self._error: str | None = None  # why it could not start, or why it failed
        self._last_error: str | None = None
        self._crash_requested = False
        self._ended_by_stop = False  # killed because the run was stopped, not crashed
        self._own_session = False  # spawned in a session of its own: signals go to its process group
        self._paused = False

    def _spawn(self, spec: dict[str, Any], background: bool = False) -> None:
        """Start the child and hand it ``spec``. ``background``: niced, in a session of its own (so its
        niceness counts against the nodes' sessions, not inside kafkalab's)."""
        if self._proc is not None:
            raise RuntimeError(f"{self.name} already started")
        self._own_session = background
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._proc = subprocess.Popen(
            [*(nice_prefix() if background else []), *python_module(self.MODULE)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=background,
        )
        if background:
            lower_autogroup_priority(self._proc.pid)
        self._send(json.dumps(spec))
        self._thread = threading.Thread(target=self._read, name=f"kafkalab-{self.name}", daemon=True)
        self._thread.start()
        threading.Thread(target=self._drain_stderr, args=(self._proc.stderr,), daemon=True).start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the child has ended and its last report has been read; True when it has."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def _send(self, line: str) -> None:
        """One line to the child; lost (harmlessly) when the child has already ended."""
        if self._proc is None or self._proc.stdin is None:
            return
        try:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def _signal(self, sig: int) -> None:
        """``sig`` to the child (its process group when it has a session of its own), unless it has ended."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                (os.killpg if self._own_session else os.kill)(self._proc.pid, sig)

    def pause(self) -> None:
        """SIGSTOP: hung, as a long GC pause or a stopped VM leaves a process (nothing closes, its group session
        and an open transaction stay as they are); ``state`` says PAUSED until ``resume``."""
        if not self.running:
            raise KafkalabError(f"{self.name} is not running: nothing to pause")
        self._signal(signal.SIGSTOP)
        self._paused = True

    def resume(self) -> None:
        """SIGCONT: it carries on from where it hung."""
        if not self._paused:
            raise KafkalabError(f"{self.name} is not paused: nothing to resume")
        self._signal(signal.SIGCONT)
        self._paused = False

    @property
    def paused(self) -> bool:
        return self._paused and self.running

    def _shown_state(self, reported: ClientState) -> ClientState:
        """The state its last report gave, or PAUSED while it is paused: a stopped process reports nothing."""
        return ClientState.PAUSED if self.paused and not reported.ended else reported

    def _kill(self) -> None:
        """SIGKILL the child: no close, nothing flushed."""
        if self._proc is not None and self._proc.poll() is None:
            self._crash_requested = True
            self._signal(signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL as a crash (a supervisor's kill -9): a paused child dies too, where a crash word waits."""
        self._kill()

    def kill_stopped(self) -> None:
        """SIGKILL the child because its run was stopped and it did not end in time: said as that, not a crash
        (its log stays ``.partial``)."""
        self._ended_by_stop = True
        self._kill()

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
                if item["kind"] == "error":
                    self._last_error = item["detail"]
                    if self._stats.get("state") == ClientState.STARTING:
                        self._error = item["detail"]
                self._emit(item["kind"], item["detail"], tuple(item["partitions"]))
        code = proc.wait()
        final = dict(self._stats)
        if code == 0:
            final["state"] = ClientState.FINISHED
        elif code == EXIT_CRASH or self._crash_requested:
            final["state"] = ClientState.CRASHED
            self._ended_crashed(final)
        else:
            final["state"] = ClientState.FAILED
            if self._error is None:
                tail = [t for t in self._stderr if t.strip()]
                self._error = (self._last_error if code == EXIT_FAILED else None) or (
                    tail[-1].strip() if tail else f"{self.name} process exited with status {code}")
        self._stats = final

    def _ended_crashed(self, final: dict[str, Any]) -> None:
        """What a crash adds to the last stats (a subclass's say)."""

    def _drain_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            self._stderr.append(line)

    def _emit(self, kind: str, detail: str, partitions: tuple[int, ...] = ()) -> None:
        if self._on_event is not None:
            self._on_event(ClientEvent(time.time(), self.name, kind, detail, partitions))
