"""A librdkafka client in a helper process, so that its crash costs the console one answer, not its life.

librdkafka 2.16 takes its whole process down now and then: assertions and segfaults when a group's coordinator
moves (:mod:`kafkalab.admin.group_helper`), a segfault that ended a console during a leader failover. A helper
holds the client; the console's end (:class:`HelperProcess`) starts it on first use, asks one request at a time
and waits a bounded time for the answer. A helper that died (named by its signal) or hung is ended and said so
once; the next call starts a new one. Requests and answers are JSON, framed on the helper's stdin and stdout;
its stderr goes to a log file, so librdkafka's last words never reach the console's terminal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kafkalab.errors import KafkalabError

ANSWER_GRACE_S = 20.0  # beyond the answer's own wait: the helper's start, a loaded machine
EXIT_WAIT_S = 5.0  # from a helper's pipe closing to its exit code


class HelperGone(KafkalabError):
    """The helper died or gave no answer in time; ``why`` says which ('died of SIGSEGV (librdkafka)')."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class HelperClosed(KafkalabError):
    """Asked after :meth:`HelperProcess.close`: the console is closing, no new helper starts."""


class ClusterGenerations:
    """Which cluster a request is about, as a number the helper can compare: a new number whenever the key
    object changes. The key is held, so a new cluster object can never be taken for the last one (an ``id()``
    is reused once its object is freed, and a lab's next cluster may listen on the same ports)."""

    def __init__(self) -> None:
        self._last: object | None = None
        self._generation = 0

    def of(self, key: object) -> int:
        if key is not self._last:
            self._last, self._generation = key, self._generation + 1
        return self._generation


def serve(answer: Callable[..., Any]) -> None:
    """The helper's loop (stderr to its log): each request on stdin is ``answer(*request)``'s JSON on stdout,
    until the console's end closes."""
    answers = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # nothing but answers on the pipe: a stray print goes to the log
    requests = Connection(os.dup(0), writable=False)
    while True:
        try:
            request = json.loads(requests.recv_bytes())
        except (EOFError, OSError):
            return
        answers.send_bytes(json.dumps(answer(*request)).encode())


class HelperProcess:
    """The console's end of one helper: ``command`` runs :func:`serve`."""

    def __init__(self, command: Sequence[str], log_path: Path) -> None:
        self.command = tuple(command)
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._to: Connection | None = None
        self._from: Connection | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The helper's process id (None before the first call, after a death is told, after close)."""
        proc = self._proc
        return None if proc is None else proc.pid

    def ask(self, request: Sequence[Any], wait_s: float) -> Any:
        """The helper's answer to ``request`` (JSON-able), given ``wait_s`` and a grace for its start.

        Raises :class:`HelperGone` when the helper died (during this request or since the last) or did not answer
        in time, :class:`HelperClosed` after :meth:`close`."""
        with self._lock:
            if self._closed:
                raise HelperClosed("the console is closing")
            if self._proc is not None and self._proc.poll() is not None:  # it died between two calls
                raise HelperGone(_why(self._end()))
            to, back = self._connection()
            pipe_closed = False
            try:
                to.send_bytes(json.dumps(list(request)).encode())
                answered = back.poll(wait_s + ANSWER_GRACE_S)
                if answered:
                    answer = json.loads(back.recv_bytes())
            except (EOFError, OSError):
                answered, pipe_closed = False, True
            if not answered:
                code = self._end(exiting=pipe_closed)
                if self._closed:  # close() ended it under this request
                    raise HelperClosed("the console is closing")
                raise HelperGone(_why(code))
        return answer

    def _connection(self) -> tuple[Connection, Connection]:
        if self._proc is None or self._to is None or self._from is None:
            self._end()
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "ab") as log:
                self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                              start_new_session=True)
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._to = Connection(os.dup(self._proc.stdin.fileno()), readable=False)
            self._from = Connection(os.dup(self._proc.stdout.fileno()), writable=False)
            self._proc.stdin.close()
            self._proc.stdout.close()
        return self._to, self._from

    def _end(self, exiting: bool = False) -> int | None:
        """Kill the helper (if any) and forget it; its exit code, None if it was alive (no answer in time).

        ``exiting``: its pipe closed, so it is dying; the kernel closes a process's pipes before it reaps it,
        so wait a moment for the exit code (the signal that ended it) before calling it alive."""
        proc, self._proc = self._proc, None
        for conn in (self._to, self._from):
            if conn is not None:
                conn.close()
        self._to = self._from = None
        if proc is None:
            return None
        try:
            code = proc.wait(EXIT_WAIT_S) if exiting else proc.poll()
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            proc.kill()
        proc.wait(5)
        return code

    def close(self) -> None:
        """End the helper for good, at once: a request under way gets :class:`HelperClosed`, not its wait."""
        self._closed = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
        with self._lock:
            self._end()


def _why(code: int | None) -> str:
    if code is None:
        return "gave no answer in time"
    if code < 0:
        return f"died of {signal.Signals(-code).name} (librdkafka)"
    return f"ended (exit {code})"
