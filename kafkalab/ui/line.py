"""A text line that repaints only when its text changed, and without a relayout when its height is fixed; and
:func:`flow`, which lays parts of a line out on as few lines as a width allows."""

from __future__ import annotations

from typing import Unpack

from rich.text import Text
from textual.widgets import Static

from kafkalab.ui.widget_options import WidgetOptions


class Line(Static):
    """A Static for content refreshed every tick (states, counters, uptimes).

    ``Static.update`` lays out the whole screen again; four node panes, the table's status and the top
    bar doing that every second cost the console a tenth of a core and delayed key presses under load.
    A line whose CSS height is a fixed number of cells cannot change the layout, so it only repaints.
    """

    def __init__(self, content: str | Text = "", **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(content, **kwargs)
        self._shown: str | Text = content

    def show(self, content: str | Text) -> None:
        if content == self._shown:
            return
        self._shown = content
        height = self.styles.height
        self.update(content, layout=height is None or not height.is_cells)

    def show_parts(self, parts: list[Text]) -> None:
        """``parts`` :func:`flow`-ed to this line's width (80 before its first layout)."""
        self.show(flow(parts, self.content_size.width or 80))


def flow(parts: list[Text], width: int, gap: str = "  ") -> Text:
    """``parts`` joined by ``gap`` on as few lines of ``width`` cells as they fit, broken only between parts
    (Rich's own wrapping breaks at any space, even U+00A0: "ETA" on one line, its value on the next)."""
    out = Text()
    used = 0
    for part in parts:
        if used and used + len(gap) + part.cell_len > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(gap)
            used += len(gap)
        out.append_text(part)
        used += part.cell_len
    return out
