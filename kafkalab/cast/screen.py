"""A terminal screen as kafkalab's output draws it: cells of a character and a style, a cursor, the alternate
screen. Enough of a terminal for what Textual and Rich send (cursor moves, erases, SGR styles, modes); anything
else raises :class:`Unsupported`, so a recording made from it never shows a screen the terminal would not have.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple


class Style(NamedTuple):
    """An SGR state: colours as their SGR parameters ('' the terminal's default), attributes sorted."""

    fg: str = ""
    bg: str = ""
    attrs: tuple[str, ...] = ()


DEFAULT = Style()
Cell = tuple[str, Style]  # the right half of a wide character holds '' (its left half draws it)
BLANK: Cell = (" ", DEFAULT)
WIDE_TAIL = ""

# attributes an SGR parameter turns off (22 turns off bold and faint alike); 0 turns off everything
ATTRS_OFF = {"22": ("1", "2"), "23": ("3",), "24": ("4", "21"), "25": ("5", "6"), "27": ("7",),
             "28": ("8",), "29": ("9",), "55": ("53",), "59": ("58",)}
OFF_CODE = {attr: code for code, attrs in ATTRS_OFF.items() for attr in attrs}

TOKEN = re.compile(r"""
    (?P<text>[^\x00-\x1f\x7f\x1b]+)
  | \x1b\[(?P<params>[0-?]*)(?P<inter>[ -/]*)(?P<final>[@-~])
  | \x1b\](?P<osc>[^\x07\x1b]*)(?:\x07|\x1b\\)
  | \x1b(?P<esc>[ -/]*[0-Z\\^-~])
  | (?P<ctrl>[\x00-\x1a\x1c-\x1f\x7f])
""", re.VERBOSE)
HELD_MAX = 4096  # an escape sequence longer than this is not one kafkalab sends
ALT_SCREEN_MODES = ("?1049", "?1047", "?47")
PASSED_ESCAPES = ("=", ">", "(B", ")B")  # keypad modes, the ASCII character set: nothing on the screen changes
HYPERLINK = "8;"  # OSC 8: a cell attribute no recording keeps (its text is drawn again without it)


class Unsupported(Exception):
    """A sequence this screen does not model; ``rest`` is it and the text after it, as received."""

    def __init__(self, what: str, rest: str = "") -> None:
        super().__init__(what)
        self.rest = rest


@lru_cache(maxsize=4096)
def sgr_style(style: Style, params: str) -> Style:
    """``style`` after ``ESC [ params m``."""
    fg, bg, attrs = style.fg, style.bg, set(style.attrs)
    parts = params.split(";") if params else ["0"]
    i = 0
    while i < len(parts):
        p = parts[i] or "0"
        if p in ("38", "48", "58"):  # an extended colour: 5;n or 2;r;g;b follow
            take = 3 if parts[i + 1:i + 2] == ["5"] else 5
            value, i = ";".join(parts[i:i + take]), i + take
            if p == "38":
                fg = value
            elif p == "48":
                bg = value
            else:
                attrs = {a for a in attrs if not a.startswith("58")} | {value}
            continue
        head = p.split(":")[0]
        if p == "0":
            fg, bg, attrs = "", "", set()
        elif p in ATTRS_OFF:
            attrs = {a for a in attrs if attr_code(a) not in ATTRS_OFF[p]}
        elif p == "39":
            fg = ""
        elif p == "49":
            bg = ""
        elif head in ("38", "48"):  # colon form: 38:2::r:g:b
            fg, bg = (p, bg) if head == "38" else (fg, p)
        elif p.isdigit() and (30 <= int(p) <= 37 or 90 <= int(p) <= 97):
            fg = p
        elif p.isdigit() and (40 <= int(p) <= 47 or 100 <= int(p) <= 107):
            bg = p
        else:
            attrs = {a for a in attrs if a.split(":")[0] != head} | {p}
        i += 1
    return Style(fg, bg, tuple(sorted(attrs)))


def attr_code(attr: str) -> str:
    """An attribute's own code: '4' of the curly underline '4:3', '58' of an underline colour '58;5;9'."""
    return attr.split(":")[0].split(";")[0]


@lru_cache(maxsize=1024)
def _width(char: str) -> int:
    """The cells a character takes, as wcwidth says: none for a combining mark or a joiner, two when East Asian
    wide or full-width (most emoji too)."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


class Grid:
    """Rows of cells, and the main screen kept aside while the alternate one shows."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.cells = [self.blank_row() for _ in range(rows)]
        self._main: list[list[Cell]] | None = None

    def blank_row(self, cell: Cell = BLANK) -> list[Cell]:
        return [cell] * self.cols

    def alternate(self, on: bool) -> None:
        """Switch to the alternate screen (cleared) or back to the main one, as xterm's modes 1049/1047/47."""
        if on and self._main is None:
            self._main, self.cells = self.cells, [self.blank_row() for _ in range(self.rows)]
        elif not on and self._main is not None:
            self.cells, self._main = self._main, None

    def resize(self, cols: int, rows: int) -> None:
        def fit(grid: list[list[Cell]]) -> list[list[Cell]]:
            kept = [(row + [BLANK] * cols)[:cols] for row in grid[:rows]]
            return kept + [[BLANK] * cols for _ in range(rows - len(kept))]

        self.cols, self.rows = cols, rows
        self.cells = fit(self.cells)
        if self._main is not None:
            self._main = fit(self._main)


class Screen(Grid):
    """A :class:`Grid` that :meth:`feed` draws on as a terminal would."""

    def __init__(self, cols: int, rows: int) -> None:
        super().__init__(cols, rows)
        self.x = self.y = 0
        self.style = DEFAULT
        self.autowrap = True
        self._wrap_next = False  # the last column was written: the next character goes to the next line
        self._saved: tuple[int, int, Style] = (0, 0, DEFAULT)
        self._held = ""

    def feed(self, text: str) -> Iterator[str]:
        """Draw ``text``; yields, before it takes effect here, each sequence that a player must get as it is
        (modes, titles, the alternate screen). Raises :class:`Unsupported` at a sequence it does not model."""
        text, self._held = self._held + text, ""
        pos = 0
        while pos < len(text):
            m = TOKEN.match(text, pos)
            if m is None:
                if text[pos] == "\x1b" and len(text) - pos < HELD_MAX:  # cut short: the rest comes with the next
                    self._held = text[pos:]
                    return
                raise Unsupported(repr(text[pos:pos + 8]), text[pos:])
            pos = m.end()
            try:
                if m["text"] is not None:
                    self._print(m["text"])
                elif m["ctrl"] is not None:
                    self._control(m["ctrl"])
                elif m["final"] is not None:
                    yield from self._csi(m["params"], m["inter"], m["final"], m.group())
                elif m["osc"] is not None:
                    if not m["osc"].startswith(HYPERLINK):
                        yield m.group()
                else:
                    yield from self._escape(m["esc"])
            except Unsupported as exc:
                raise Unsupported(str(exc), text[m.start():]) from None

    # ---- drawing -------------------------------------------------------------------------------
    def _print(self, text: str) -> None:
        for char in text:
            width = _width(char)
            if width == 0:  # a combining mark: on the character drawn last
                x = self.x if self._wrap_next else self.x - 1
                if x > 0 and self.cells[self.y][x][0] == WIDE_TAIL:
                    x -= 1
                if x >= 0:
                    base, style = self.cells[self.y][x]
                    self.cells[self.y][x] = (base + char, style)
                continue
            if self._wrap_next or self.x + width > self.cols:
                if self.autowrap:
                    self.x = 0
                    self._line_feed()
                else:
                    self.x = self.cols - width
                self._wrap_next = False
            self._put(char, width)

    def _put(self, char: str, width: int) -> None:
        row, x = self.cells[self.y], self.x
        if row[x][0] == WIDE_TAIL and x > 0:  # over a wide character's right half: its left half goes
            row[x - 1] = (" ", row[x - 1][1])
        if x + width < self.cols and row[x + width][0] == WIDE_TAIL:  # over a wide character's left half
            row[x + width] = (" ", row[x + width][1])
        row[x] = (char, self.style)
        if width == 2:
            row[x + 1] = (WIDE_TAIL, self.style)
        if x + width >= self.cols:
            self.x = self.cols - 1
            self._wrap_next = self.autowrap
        else:
            self.x = x + width

    def _line_feed(self) -> None:
        if self.y < self.rows - 1:
            self.y += 1
        else:
            self.cells = [*self.cells[1:], self.blank_row()]

    def _erased(self) -> Cell:
        return (" ", Style(bg=self.style.bg))  # what an erase leaves: the current background

    def _erase(self, y: int, start: int, end: int) -> None:
        self.cells[y][start:end] = [self._erased()] * (end - start)

    def _move(self, y: int, x: int) -> None:
        self.y, self.x = max(0, min(self.rows - 1, y)), max(0, min(self.cols - 1, x))
        self._wrap_next = False

    # ---- sequences -----------------------------------------------------------------------------
    def _control(self, char: str) -> None:
        if char == "\r":
            self._move(self.y, 0)
        elif char in "\n\x0b\x0c":
            self._wrap_next = False
            self._line_feed()
        elif char == "\x08":
            self._move(self.y, self.x - 1)
        elif char == "\t":
            self._move(self.y, (self.x // 8 + 1) * 8)
        elif char != "\x07":  # a bell shows nothing
            raise Unsupported(f"control {ord(char):#04x}")

    def _csi(self, params: str, inter: str, final: str, seq: str) -> Iterator[str]:
        if params[:1] in ("?", "<", ">", "=") or inter:
            if final in "hl" and params.startswith("?"):
                yield seq
                self._mode(params, final == "h")
                return
            if final in "uqpc":  # keyboard protocol, cursor shape, mode and device queries: no cell changes
                yield seq
                return
            raise Unsupported(f"CSI {params}{inter}{final}")
        if final == "m":
            self.style = sgr_style(self.style, params)
            return
        numbers = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else []
        n = max(1, numbers[0]) if numbers else 1
        if final in "Hf":
            row = numbers[0] if numbers else 1
            col = numbers[1] if len(numbers) > 1 else 1
            self._move(max(1, row) - 1, max(1, col) - 1)
        elif final in "ABCDEFGd":
            y, x = {"A": (self.y - n, self.x), "B": (self.y + n, self.x), "C": (self.y, self.x + n),
                    "D": (self.y, self.x - n), "E": (self.y + n, 0), "F": (self.y - n, 0), "G": (self.y, n - 1),
                    "d": (n - 1, self.x)}[final]
            self._move(y, x)
        elif final in "JK":
            self._erase_in(final, numbers[0] if numbers else 0)
        elif final == "X":
            self._erase(self.y, self.x, min(self.cols, self.x + n))
        elif final == "s":
            self._saved = (self.x, self.y, self._saved[2])
        elif final == "u":
            self._move(self._saved[1], self._saved[0])
        else:
            raise Unsupported(f"CSI {params}{final}")

    def _erase_in(self, final: str, how: int) -> None:
        """ED (J) and EL (K): 0 to the end, 1 from the start, 2 (3) all."""
        start, end = {0: (self.x, self.cols), 1: (0, self.x + 1)}.get(how, (0, self.cols))
        self._erase(self.y, start, end)
        if final == "J":
            rows = {0: range(self.y + 1, self.rows), 1: range(self.y)}.get(how, range(self.rows))
            for y in rows:
                self._erase(y, 0, self.cols)

    def _mode(self, params: str, on: bool) -> None:
        for mode in params.split(";"):
            mode = mode if mode.startswith("?") else f"?{mode}"
            if mode == "?7":
                self.autowrap = on
            elif mode in ALT_SCREEN_MODES:
                if on and mode == "?1049":  # 1049 saves the cursor as it switches, and restores it after
                    self._saved = (self.x, self.y, self.style)
                self.alternate(on)
                if not on and mode == "?1049":
                    self._move(self._saved[1], self._saved[0])
                    self.style = self._saved[2]

    def _escape(self, esc: str) -> Iterator[str]:
        if esc == "7":
            self._saved = (self.x, self.y, self.style)
        elif esc == "8":
            self._move(self._saved[1], self._saved[0])
            self.style = self._saved[2]
        elif esc in PASSED_ESCAPES:
            yield "\x1b" + esc
        else:
            raise Unsupported(f"ESC {esc}")
