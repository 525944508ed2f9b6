"""The text of each row of a Rich/Textual SVG export (F12, ``App.export_screenshot``), for tests that
compare what the console drew with what a terminal shows, or read a pane's words at a given size."""

from __future__ import annotations

import html
import re

CHAR_W = 12.2  # Rich's SVG export: one cell is 0.61 of a 20 px line
TEXT = re.compile(r'<text [^>]*x="([\d.]+)"[^>]*clip-path="url\(#[\w-]+-line-(\d+)\)">([^<]*)</text>')


def svg_rows(svg: str, rows: int, cols: int) -> list[str]:
    """Each terminal row's text (trailing blanks dropped)."""
    grid = [[" "] * cols for _ in range(rows)]
    for x, line, text in TEXT.findall(svg):
        row, col = int(line), round(float(x) / CHAR_W)
        for offset, ch in enumerate(html.unescape(text).replace("\xa0", " ")):
            if row < rows and col + offset < cols:
                grid[row][col + offset] = ch
    return ["".join(r).rstrip() for r in grid]
