"""Tables the command line prints, fitted to the terminal's width as the console's own tables are.

The console's compact style (a rule under the header, columns a space apart, no box), names and numbers always
whole, prose wrapped between words; columns that still do not fit go to a second table below, the first column
repeated, rather than being cut to "…". The width is the console's: the terminal's, else ``COLUMNS``, else 80.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from rich import box
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text


class Fit(Enum):
    """How a column's cells may be laid out."""

    WHOLE = "whole"  # a name, a number, a state: never wrapped, never cut
    WRAP = "wrap"  # prose: wrapped between words, never inside one


@dataclass(frozen=True)
class Column:
    """A column: its heading (several words may wrap), how its cells fit, its alignment and footer."""

    heading: str
    fit: Fit = Fit.WHOLE
    justify: JustifyMethod = "left"
    footer: str = ""


WORD_FOLD = 20  # a prose word longer than this may be cut across lines: a table split for it reads worse
GAP = 2  # between two columns: the box's inner edge and a space of padding (none before the first)


def cell_width(cell: str) -> int:
    """The width a cell takes on screen (its Rich markup is no width)."""
    return max((Text.from_markup(line).cell_len for line in cell.splitlines()), default=0)


def _longest_word(text: str) -> int:
    return max((len(word) for word in Text.from_markup(text).plain.split()), default=0)


@dataclass(frozen=True)
class _Sized:
    column: Column
    least: int  # the narrowest it may be: its widest cell if whole, its longest word (to WORD_FOLD) if prose
    most: int  # its widest cell: never wider


def _size(column: Column, cells: Sequence[str]) -> _Sized:
    heading = _longest_word(column.heading)
    widest = max([cell_width(c) for c in cells] + [cell_width(column.footer), heading, 1])
    if column.fit == Fit.WHOLE:
        return _Sized(column, widest, widest)
    return _Sized(column, max(min(WORD_FOLD, max([_longest_word(c) for c in cells], default=1)), heading), widest)


def _groups(sized: Sequence[_Sized], width: int) -> list[list[int]]:
    """Column indexes per table: all in one when their least widths fit, else the first column and as many of
    the next as fit, then the first again with the rest."""
    if sum(s.least for s in sized) + GAP * (len(sized) - 1) <= width or len(sized) < 2:
        return [list(range(len(sized)))]
    groups: list[list[int]] = []
    current = [0]
    used = sized[0].least
    for i in range(1, len(sized)):
        if len(current) > 1 and used + GAP + sized[i].least > width:
            groups.append(current)
            current, used = [0], sized[0].least
        current.append(i)
        used += GAP + sized[i].least
    groups.append(current)
    return groups


def _widths(sized: Sequence[_Sized], width: int) -> list[int]:
    """Each column its least width, then prose columns widened toward their widest cell while room is left."""
    widths = [s.least for s in sized]
    room = width - sum(widths) - GAP * (len(sized) - 1)
    growing = [i for i, s in enumerate(sized) if s.most > s.least]
    while room > 0 and growing:
        share = max(1, room // len(growing))
        for i in list(growing):
            grow = min(share, sized[i].most - widths[i], room)
            widths[i] += grow
            room -= grow
            if widths[i] >= sized[i].most:
                growing.remove(i)
            if room <= 0:
                break
    return widths


def fitted_tables(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int, title: str | None = None,
                  row_styles: Sequence[str] | None = None) -> list[Table]:
    """``rows`` (cells may hold Rich markup) under ``columns`` in tables no wider than ``width``: one table when
    the columns fit at their least, else more, each repeating the first column; ``title`` above the first."""
    sized = [_size(col, [row[i] for row in rows]) for i, col in enumerate(columns)]
    tables = []
    for n, group in enumerate(_groups(sized, width)):
        widths = _widths([sized[i] for i in group], width)
        footer = any(columns[i].footer for i in group)
        table = Table(title=title if n == 0 else None, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                      padding=(0, 0, 0, 1), pad_edge=False, show_edge=False, show_footer=footer,
                      header_style="bold", footer_style="bold", expand=False, collapse_padding=False)
        for i, w in zip(group, widths, strict=True):
            col = columns[i]
            table.add_column(col.heading, footer=col.footer, justify=col.justify, width=w, overflow="fold",
                             no_wrap=False)
        for r, row in enumerate(rows):
            table.add_row(*(row[i] for i in group), style=row_styles[r] if row_styles else None)
        tables.append(table)
    return tables


def print_fitted(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]], title: str | None = None,
                 row_styles: Sequence[str] | None = None) -> None:
    """:func:`fitted_tables` at the console's width, printed one below the other."""
    for table in fitted_tables(columns, rows, console.width, title, row_styles):
        console.print(table)
