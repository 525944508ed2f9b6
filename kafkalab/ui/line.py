"""A text line that repaints only when its text changed, and without a relayout when its height is fixed."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class Line(Static):
    """A Static for content refreshed every tick (states, counters, uptimes).

    ``Static.update`` lays out the whole screen again; four node panes, the table's status and the top
    bar doing that every second cost the console a tenth of a core and delayed key presses under load.
    A line whose CSS height is a fixed number of cells cannot change the layout, so it only repaints.
    """

    def __init__(self, content: str | Text = "", **kwargs: object) -> None:
        super().__init__(content, **kwargs)  # type: ignore[arg-type]
        self._shown: str | Text = content

    def show(self, content: str | Text) -> None:
        if content == self._shown:
            return
        self._shown = content
        height = self.styles.height
        self.update(content, layout=height is None or not height.is_cells)
