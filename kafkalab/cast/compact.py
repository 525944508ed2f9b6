"""What a recording keeps of a terminal: its screen at most every ``FRAME_S``, as the cells that changed since the
last frame, drawn again with as few escape sequences as it takes.

Textual repaints a widget's whole region when one character of it changes, and styles every segment from a reset
(``ESC[0m`` and then 24-bit colours): a 5-minute cast of the console took 7.6 MB, 70 % of it SGR sequences, when
about 6 % of the cells it drew had changed (docs/recording.md, benchmarks/bench_cast_size.py). The player gets the
same screens, at most ``FRAME_S`` late.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable

from kafkalab.cast.asciicast import CastWriter
from kafkalab.cast.screen import (
    ALT_SCREEN_MODES,
    ATTRS_OFF,
    DEFAULT,
    OFF_CODE,
    WIDE_TAIL,
    Cell,
    Grid,
    Screen,
    Style,
    Unsupported,
    attr_code,
)

FRAME_S = 0.1  # ten frames a second at most: a player shows no difference, a burst of repaints costs one frame
GAP = 4  # unchanged cells between two changed ones of a row drawn again, rather than moved over (a move costs more)
CLEAR = "\x1b[0m\x1b[H\x1b[2J"


def sgr(current: Style | None, wanted: Style) -> str:
    """The SGR sequence from ``current`` (None: not known) to ``wanted``: the shorter of a change and a reset."""
    if current == wanted:
        return ""
    full = ";".join(("0", *wanted.attrs, *(c for c in (wanted.fg, wanted.bg) if c)))
    if current is None:
        return f"\x1b[{full}m"
    removed = [a for a in current.attrs if a not in wanted.attrs]
    if any(attr_code(a) not in OFF_CODE for a in removed):
        return f"\x1b[{full}m"
    offs = sorted({OFF_CODE[attr_code(a)] for a in removed})
    kept = [a for a in current.attrs if not any(attr_code(a) in ATTRS_OFF[off] for off in offs)]
    params = [*offs, *(a for a in wanted.attrs if a not in kept)]
    params += [wanted.fg or "39"] if wanted.fg != current.fg else []
    params += [wanted.bg or "49"] if wanted.bg != current.bg else []
    return f"\x1b[{min(';'.join(params), full, key=len)}m"


def alternate_of(seq: str) -> bool | None:
    """True (False) for a sequence that shows (leaves) the alternate screen, None for any other."""
    if seq.startswith("\x1b[?") and seq[-1] in "hl" and any(f"?{m}" in ALT_SCREEN_MODES for m in
                                                               seq[3:-1].split(";")):
        return seq[-1] == "h"
    return None


class ScreenDiff:
    """Draws on a player's screen what changed on ``screen`` since it was last asked, and knows what the player
    shows (``shown``), where its cursor is and which style it draws in."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self.shown = Grid(screen.cols, screen.rows)
        self.cursor: tuple[int, int] | None = (0, 0)  # None: not known (the last column written, a mode passed)
        self.style: Style | None = DEFAULT

    def changes(self) -> str:
        out: list[str] = []
        cols = self.screen.cols
        for y, (row, was) in enumerate(zip(self.screen.cells, self.shown.cells, strict=True)):
            if row == was:
                continue
            x = 0
            while x < cols:
                if row[x] == was[x]:
                    x += 1
                    continue
                start = last = x
                end = x + 1
                while end < cols and end - last <= GAP:
                    if row[end] != was[end]:
                        last = end
                    end += 1
                end = last + 1
                if start > 0 and row[start][0] == WIDE_TAIL:  # a wide character is drawn from its left half
                    start -= 1
                if end < cols and row[end][0] == WIDE_TAIL:
                    end += 1
                out.append(self._draw(y, start, row[start:end]))
                x = end
            self.shown.cells[y] = list(row)
        return "".join(out)

    def passed(self, seq: str) -> None:
        """``seq`` went to the player as it is: its alternate screen follows, its cursor and style are unknown
        (xterm's 1049 restores both)."""
        alternate = alternate_of(seq)
        if alternate is not None:
            self.shown.alternate(alternate)
        self.cursor, self.style = None, None

    def restart(self, cols: int, rows: int) -> str:
        """The player's screen cleared, at a new size: the next changes draw every cell that is not blank."""
        self.shown = Grid(cols, rows)
        self.cursor, self.style = (0, 0), DEFAULT
        return CLEAR

    def hand_over(self) -> str:
        """The player's cursor and style set to the screen's: what follows goes to the player as it came."""
        return f"\x1b[{self.screen.y + 1};{self.screen.x + 1}H" + sgr(None, self.screen.style)

    def _draw(self, y: int, x: int, cells: list[Cell]) -> str:
        parts = [self._goto(y, x)]
        for char, style in cells:
            if char != WIDE_TAIL:
                parts += [sgr(self.style, style), char]
                self.style = style
        end = x + len(cells)
        self.cursor = (y, end) if end < self.screen.cols else None  # at the margin terminals differ: move next time
        return "".join(parts)

    def _goto(self, y: int, x: int) -> str:
        if self.cursor == (y, x):
            return ""
        position = f"\x1b[{y + 1};{x + 1}H"
        if self.cursor is not None and self.cursor[0] == y and x > self.cursor[1]:
            forward = f"\x1b[{x - self.cursor[1]}C"
            return min(forward, position, key=len)
        return position


class CompactCast:
    """A :class:`CastWriter` fed what a program sends its terminal, writing what the terminal showed: at most one
    frame every ``frame_s``, each the cells changed since the frame before. A sequence the screen does not model
    is written as it came, with everything after it (as a raw cast would be)."""

    def __init__(self, cast: CastWriter, cols: int, rows: int, frame_s: float = FRAME_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cast = cast
        self.frame_s = frame_s
        self._clock = clock
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.screen = Screen(cols, rows)
        self.diff = ScreenDiff(self.screen)
        self.raw = False  # the screen met a sequence it does not model: the rest goes as it came
        self._frame: list[str] = []
        self._dirty = False
        self._last = float("-inf")

    def output(self, data: bytes) -> None:
        self._draw(self._decoder.decode(data))
        self.flush_due()

    def _draw(self, text: str) -> None:
        if not text:
            return
        if self.raw:
            self._frame.append(text)
        else:
            try:
                for seq in self.screen.feed(text):  # before it takes effect: the screen up to it is drawn first
                    self._frame += [self.diff.changes(), seq]
                    self.diff.passed(seq)
            except Unsupported as exc:
                self._frame += [self.diff.changes(), self.diff.hand_over(), exc.rest]
                self.raw = True
        self._dirty = True

    def flush_due(self) -> None:
        """Write the frame when it is ``frame_s`` after the last (the pump calls this while it waits)."""
        if self._dirty and self._clock() - self._last >= self.frame_s:
            self._write_frame()

    def resize(self, cols: int, rows: int) -> None:
        self._write_frame()
        self.cast.resize(cols, rows)
        self.screen.resize(cols, rows)
        if self.raw:
            return
        self._frame.append(self.diff.restart(cols, rows))
        self._dirty = True

    def close(self) -> None:
        self._draw(self._decoder.decode(b"", final=True))  # a character cut short at the end: a replacement
        self._write_frame()
        self.cast.close()

    def _write_frame(self) -> None:
        if not self._dirty:
            return
        text = "".join(self._frame) + ("" if self.raw else self.diff.changes())
        self._frame, self._dirty = [], False
        if text:
            self.cast.output_text(text)
            self._last = self._clock()
