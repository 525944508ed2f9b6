"""The consumers pane: per consumer its group, assignment, received / processed / committed, lag, rebalances."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from kafkalab.clients.stats import ConsumerStats

# short headings: every column, lag and rebalances included, fits the side pane of a 160-column terminal
# the group is in the pane's title (in the name, name@group, when consumers are in several groups)
COLUMNS = (("name", "consumer"), ("state", "state"), ("assigned", "parts"),
           ("received", "recv"), ("processed", "proc"), ("committed", "commit"), ("lag", "lag"),
           ("rebalances", "rebal"))


def ranges(numbers: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 5) -> '0-3,5': an assignment in few characters."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans) or "-"


def cell(text: str, style: str = "") -> Text:
    """A cell with one space before it: the table has no padding of its own (two cells a column)."""
    return Text(f" {text}", style=style)


def consumer_row(c: ConsumerStats, with_group: bool = False) -> dict[str, Text]:
    state = c.group_state if c.state == "running" else c.state
    state_style = {"stable": "green", "rebalancing": "yellow", "crashed": "bold red", "failed": "bold red",
                   "lost": "red"}.get(state, "")
    return {
        "name": cell(f"{c.name}@{c.group}" if with_group else c.name), "state": cell(state, state_style),
        "assigned": cell(ranges(c.assignment)),
        "received": cell(f"{c.received:,}"), "processed": cell(f"{c.processed:,}"),
        "committed": cell(f"{sum(c.committed.values()):,}"),
        "lag": cell(f"{c.total_lag:,}", "yellow" if c.total_lag else ""),
        "rebalances": cell(str(c.rebalances)),
    }


class ConsumersTable(DataTable[Text]):
    def __init__(self) -> None:
        super().__init__(id="consumers", cursor_type="none", cell_padding=0)
        self.border_title = "consumers"
        self.shown: dict[str, dict[str, Text]] = {}

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(f" {label}", key=key)

    def show(self, consumers: tuple[ConsumerStats, ...]) -> None:
        """Add and remove rows, update only the cells that changed (each update re-renders the table)."""
        groups = sorted({c.group for c in consumers})
        title = "consumers" + (f" · group {groups[0]}" if len(groups) == 1 else
                               f" · groups {', '.join(groups)}" if groups else "")
        if self.border_title != title:
            self.border_title = title
        names = {c.name for c in consumers}
        for name in [n for n in self.shown if n not in names]:
            self.remove_row(name)
            del self.shown[name]
        for c in consumers:
            row = consumer_row(c, with_group=len(groups) > 1)
            old = self.shown.get(c.name)
            if old is None:
                self.add_row(*(row[k] for k, _ in COLUMNS), key=c.name)
            else:
                for key, _ in COLUMNS:
                    if row[key] != old[key]:
                        self.update_cell(c.name, key, row[key], update_width=True)
            self.shown[c.name] = row
