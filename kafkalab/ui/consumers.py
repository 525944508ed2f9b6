"""The consumers pane: per consumer its group, assignment, received / processed / committed, lag, rebalances."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from kafkalab.clients.stats import ConsumerStats

COLUMNS = (("name", "consumer"), ("group", "group"), ("state", "state"), ("assigned", "partitions"),
           ("received", "recv"), ("processed", "proc"), ("committed", "committed"), ("lag", "lag"),
           ("rebalances", "rebal"))


def consumer_row(c: ConsumerStats) -> dict[str, Text]:
    state = c.group_state if c.state == "running" else c.state
    state_style = {"stable": "green", "rebalancing": "yellow", "crashed": "bold red", "failed": "bold red",
                   "lost": "red"}.get(state, "")
    return {
        "name": Text(c.name), "group": Text(c.group), "state": Text(state, style=state_style),
        "assigned": Text(",".join(map(str, c.assignment)) or "-"),
        "received": Text(f"{c.received:,}"), "processed": Text(f"{c.processed:,}"),
        "committed": Text(f"{sum(c.committed.values()):,}"),
        "lag": Text(f"{c.total_lag:,}", style="yellow" if c.total_lag else ""),
        "rebalances": Text(str(c.rebalances)),
    }


class ConsumersTable(DataTable[Text]):
    def __init__(self) -> None:
        super().__init__(id="consumers", cursor_type="none")
        self.border_title = "consumers"
        self.shown: dict[str, dict[str, Text]] = {}

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            self.add_column(label, key=key)

    def show(self, consumers: tuple[ConsumerStats, ...]) -> None:
        """Add and remove rows, update only the cells that changed (each update re-renders the table)."""
        names = {c.name for c in consumers}
        for name in [n for n in self.shown if n not in names]:
            self.remove_row(name)
            del self.shown[name]
        for c in consumers:
            row = consumer_row(c)
            old = self.shown.get(c.name)
            if old is None:
                self.add_row(*(row[k] for k, _ in COLUMNS), key=c.name)
            else:
                for key, _ in COLUMNS:
                    if row[key] != old[key]:
                        self.update_cell(c.name, key, row[key], update_width=True)
            self.shown[c.name] = row
