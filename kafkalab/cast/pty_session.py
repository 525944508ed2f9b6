"""Run a command in a pty this process owns and record what it sends to its terminal.

Interactive (``console --record``): the real terminal in raw mode; the child's output goes to it and to the
cast, keys go to the child, window-size changes go to the child and into the cast. Headless (``run --record``):
a pty of a fixed size and no terminal at all, the cast the only reader.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
import tty
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from kafkalab.cast.asciicast import CastWriter, end_on_last_frame
from kafkalab.cast.compact import CompactCast

SHOW_KEYS_ENV = "KAFKALAB_SHOW_KEYS"  # set for the child: the console draws the keys pressed as captions
HEADLESS_ENV = {"TERM": "xterm-256color", "COLORTERM": "truecolor"}
RECORDED_ENV = ("SHELL", "TERM")
_DRAIN_S = 0.3


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _spawn(argv: Sequence[str], cols: int, rows: int, env: Mapping[str, str]) -> tuple[int, int]:
    """Fork ``argv`` on a new pty of ``cols`` x ``rows`` (set before it runs); returns (pid, master fd)."""
    pid, master = pty.fork()
    if pid == 0:  # the child: its stdin/stdout/stderr are the pty
        try:
            _set_size(0, cols, rows)
            os.execvpe(argv[0], list(argv), dict(env))
        finally:
            os._exit(127)
    return pid, master


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: every holder of the pty's other side is gone
        return b""


class _Pump:
    """Copies the child's output to the cast (and a terminal), input to the child, until the child ends."""

    def __init__(self, pid: int, master: int, cast: CompactCast, out_fd: int | None = None,
                 in_fd: int | None = None, tick: Callable[[], None] | None = None) -> None:
        self.pid, self.master, self.cast = pid, master, cast
        self.out_fd, self.in_fd = out_fd, in_fd
        self.tick = tick
        self.status: int | None = None

    def _output(self, data: bytes) -> None:
        self.cast.output(data)
        if self.out_fd is not None:
            _write_all(self.out_fd, data)

    def run(self, deadline: float = float("inf")) -> int:
        while self.status is None:
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGTERM)
                deadline = float("inf")
            fds = [self.master] + ([self.in_fd] if self.in_fd is not None else [])
            ready, _, _ = select.select(fds, [], [], 0.1)
            self.cast.flush_due()  # a frame after the child's last output, though nothing more comes
            if self.tick is not None:
                self.tick()
            if self.master in ready:
                data = _read(self.master)
                if data:
                    self._output(data)
                else:
                    self._wait(0)
            if self.in_fd is not None and self.in_fd in ready:
                keys = os.read(self.in_fd, 1024)
                if keys:
                    _write_all(self.master, keys)
                else:
                    self.in_fd = None
            if self.status is None:
                self._wait(os.WNOHANG)
        # the child ended: what it wrote last may still be in the pty (processes it left may hold it open)
        while select.select([self.master], [], [], _DRAIN_S)[0] and (data := _read(self.master)):
            self._output(data)
        return os.waitstatus_to_exitcode(self.status)

    def _wait(self, flags: int) -> None:
        pid, status = os.waitpid(self.pid, flags)
        if pid:
            self.status = status


def _recorded_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: env[k] for k in RECORDED_ENV if k in env}


def record_interactive(argv: Sequence[str], cast_path: Path, env: Mapping[str, str] | None = None) -> int:
    """Run ``argv`` on this terminal through a pty, recording it; returns its exit code."""
    in_fd, out_fd = sys.stdin.fileno(), sys.stdout.fileno()
    cols, rows = os.get_terminal_size(out_fd)
    child_env = {**os.environ, **(env or {})}
    pid, master = _spawn(argv, cols, rows, child_env)
    cast = CompactCast(CastWriter(cast_path, cols, rows, env=_recorded_env(child_env)), cols, rows)
    resized: list[bool] = []

    def follow_size() -> None:
        if resized:
            resized.clear()
            new_cols, new_rows = os.get_terminal_size(out_fd)
            _set_size(master, new_cols, new_rows)  # the kernel tells the child (SIGWINCH)
            cast.resize(new_cols, new_rows)

    saved = termios.tcgetattr(in_fd)
    previous = signal.signal(signal.SIGWINCH, lambda *_: resized.append(True))
    tty.setraw(in_fd)
    try:
        return _Pump(pid, master, cast, out_fd, in_fd, follow_size).run()
    finally:
        termios.tcsetattr(in_fd, termios.TCSAFLUSH, saved)
        signal.signal(signal.SIGWINCH, previous)
        cast.close()
        end_on_last_frame(cast_path)
        with contextlib.suppress(OSError):
            os.close(master)


def record_headless(argv: Sequence[str], cast_path: Path, cols: int = 160, rows: int = 48,
                    timeout_s: float = 600.0, env: Mapping[str, str] | None = None) -> int:
    """Run ``argv`` in a pty of ``cols`` x ``rows`` with no terminal, recording it; stopped after
    ``timeout_s``. Returns its exit code."""
    child_env = {**os.environ, **HEADLESS_ENV, **(env or {})}
    pid, master = _spawn(argv, cols, rows, child_env)
    cast = CompactCast(CastWriter(cast_path, cols, rows, env=_recorded_env(child_env)), cols, rows)
    try:
        return _Pump(pid, master, cast).run(time.monotonic() + timeout_s)
    finally:
        cast.close()
        end_on_last_frame(cast_path, skip_lead=True)
        with contextlib.suppress(OSError):
            os.close(master)
