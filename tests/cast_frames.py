"""What a terminal is sent, captured with its timing, written as a raw cast (every byte, as kafkalab wrote casts
before) and as the compacted cast kafkalab writes now, from the same bytes; and each compacted frame's screen
compared with the raw stream's at that instant, in a terminal emulator (pyte). Used by tests/test_cast.py and
benchmarks/bench_cast_size.py."""

from __future__ import annotations

import os
import pty
import re
import select
import time
from collections.abc import Sequence
from pathlib import Path

import pyte

from kafkalab.cast import CastWriter, read_cast
from kafkalab.cast.compact import FRAME_S, CompactCast
from kafkalab.cast.pty_session import HEADLESS_ENV, _set_size

Output = list[tuple[float, bytes]]  # (seconds since the start, bytes the terminal got)
# pyte does not know the kitty keyboard protocol Textual asks for (CSI > flags u, CSI < u) and would print
# its final "u"; terminals and asciinema's player take it as a request.
KITTY_KEYBOARD = re.compile(r"\x1b\[[<>=?]\d*(;\d+)?u")


def capture(argv: Sequence[str], cols: int, rows: int, timeout_s: float = 600.0) -> Output:
    """Run ``argv`` in a pty of ``cols`` x ``rows`` until it ends; what it sent, when."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            _set_size(0, cols, rows)
            os.execvpe(argv[0], list(argv), {**os.environ, **HEADLESS_ENV})
        finally:
            os._exit(127)
    started = time.monotonic()
    out: Output = []
    try:
        while time.monotonic() - started < timeout_s:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child and everything holding the pty are gone
                    break
                if not data:
                    break
                out.append((time.monotonic() - started, data))
    finally:
        os.close(master)
        os.waitpid(pid, 0)
    return out


def write_raw(output: Output, path: Path, cols: int, rows: int) -> Path:
    clock = _Clock()
    cast = CastWriter(path, cols, rows, env={"TERM": HEADLESS_ENV["TERM"]}, clock=clock)
    for clock.now, data in output:
        cast.output(data)
    cast.close()
    return path


def write_compact(output: Output, path: Path, cols: int, rows: int, frame_s: float = FRAME_S) -> CompactCast:
    clock = _Clock()
    cast = CompactCast(CastWriter(path, cols, rows, env={"TERM": HEADLESS_ENV["TERM"]}, clock=clock), cols, rows,
                       frame_s=frame_s, clock=clock)
    for clock.now, data in output:
        cast.output(data)
    clock.now += frame_s
    cast.close()
    return cast


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def _player(header: dict[str, object]) -> tuple[pyte.Screen, pyte.Stream]:
    screen = pyte.Screen(int(header["width"]), int(header["height"]))  # type: ignore[call-overload]
    return screen, pyte.Stream(screen)


def _cells(screen: pyte.Screen) -> list[list[tuple[object, ...]]]:
    return [[(c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse, c.strikethrough, c.blink)
             for c in (screen.buffer[y][x] for x in range(screen.columns))] for y in range(screen.lines)]


def frames_unlike_raw(raw: Path, compact: Path) -> list[float]:
    """The times of the compacted frames whose screen (characters and their styles) differs from what the raw
    stream shows at that instant: none, when the compaction shows what the terminal showed."""
    header, events = read_cast(raw)
    header2, frames = read_cast(compact)
    seen, stream = _player(header)
    shown, shown_stream = _player(header2)
    i = 0
    unlike = []
    for t, code, data in frames:
        while i < len(events) and events[i][0] <= t:
            if events[i][1] == "o":
                stream.feed(KITTY_KEYBOARD.sub("", events[i][2]))
            i += 1
        if code == "o":
            shown_stream.feed(KITTY_KEYBOARD.sub("", data))
        if _cells(seen) != _cells(shown):
            unlike.append(t)
    return unlike
