"""The consumers pane: per consumer its group, assignment, received / processed / committed, unread, rebalances.

"unread" is the consumer's own view: records on the partitions' leaders it has not fetched yet (high watermark
minus its position). The Groups tab's "commit lag" is Kafka's lag (log end minus the committed offset), the records a
restarted consumer would read again: higher while commits wait or fail (a paused coordinator). Two names, so
two numbers at the same moment never read as one disagreeing with itself.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.widgets import DataTable

from kafkalab.clients.stats import HELD_SHOWN_AFTER_S, ClientState, ConsumerStats

# short headings; the group is in the pane's title (in the name, name@group, when consumers are in several groups)
HEADINGS = {"name": "consumer", "state": "state", "assigned": "parts", "received": "recv", "processed": "proc",
            "committed": "commit", "lag": "unread", "rebalances": "rebal"}
# the columns by the room they get, widest first: the first whose cells fit is shown. The last keeps what a
# lab is about (who has which partitions, how far committed, the lag, the rebalances) in the side pane of a
# 100-column terminal: shorter headings and numbers, the state as the name's colour.
LAYOUTS = (tuple(HEADINGS), ("name", "state", "assigned", "committed", "lag", "rebalances"),
           ("name", "assigned", "committed", "lag", "rebalances"))
NARROW_HEADINGS = {"assigned": "part", "lag": "unrd", "rebalances": "reb"}
STATE_STYLES = {"stable": "green", "rebalancing": "yellow", "paused": "bold yellow", "crashed": "bold red",
                "failed": "bold red", "lost": "red"}
HELD_STYLE = "bold yellow"


def ranges(numbers: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 5) -> '0-3,5': an assignment in few characters."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans) or "-"


def compact(n: int) -> str:
    """A count in at most 5 characters: 9999, 12.3k, 499k, 1.2M."""
    if n < 10_000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k" if n < 100_000 else f"{n // 1000}k"
    return f"{n / 1_000_000:.1f}M"


UNMEASURED = "?"  # a partition whose leader did not answer the consumer's watermark query (a paused broker)
UNREAD_TIP = ("unread: records this consumer has not fetched yet (the leaders' high watermark minus its position; "
              f"'{UNMEASURED}': a partition whose leader did not answer). The Groups tab's commit lag counts from "
              "the committed offset, so it is higher while commits wait or fail")


def unread(c: ConsumerStats, count: Callable[[int], str] = "{:,}".format) -> str:
    """The consumer's unread records, '+?' when a partition it holds was not measured: '0' would hide it."""
    known = c.total_lag
    if not set(c.assignment) - set(c.lag):
        return count(known)
    return f"{count(known)}+{UNMEASURED}" if c.lag else UNMEASURED


def cell(text: str, style: str = "") -> Text:
    """A cell with one space before it: the table has no padding of its own (two cells a column)."""
    return Text(f" {text}", style=style)


def consumer_row(c: ConsumerStats, with_group: bool = False, narrow: bool = False) -> dict[str, Text]:
    """The cells of one consumer; ``narrow``: counts in short form and the state as the name's colour."""
    state = c.group_state if c.state == ClientState.RUNNING else c.state
    state_style = STATE_STYLES.get(state, "")
    if c.state == ClientState.RUNNING and c.held_s >= HELD_SHOWN_AFTER_S:  # read_committed, at an open transaction
        state, state_style = f"held {c.held_s:.0f}s", HELD_STYLE
    count = compact if narrow else "{:,}".format
    lag = unread(c, count)
    name = f"{c.name}@{c.group}" if with_group else c.name
    return {  # a foreign command's consumer is marked: its assignment and lag are its group's, not its own
        "name": cell(name + ("·cmd" if c.foreign else ""), state_style if narrow else ""),
        "state": cell(state, state_style), "assigned": cell(ranges(c.assignment)),
        "received": cell(count(c.received)), "processed": cell(count(c.processed)),
        "committed": cell(count(sum(c.committed.values()))),
        "lag": cell(lag, "yellow" if lag != "0" else ""), "rebalances": cell(str(c.rebalances)),
    }


def same_cell(a: Text, b: Text) -> bool:
    """Text's own == compares the characters and spans, not the base style: at 100 columns a name's colour is its
    state, and a change of colour alone must redraw it."""
    return a.plain == b.plain and a.style == b.style and a.spans == b.spans


def heading(key: str, narrow: bool) -> str:
    return f" {NARROW_HEADINGS.get(key, HEADINGS[key]) if narrow else HEADINGS[key]}"


def needed_width(columns: tuple[str, ...], rows: list[dict[str, Text]], narrow: bool) -> int:
    return sum(max([len(heading(k, narrow)), *(r[k].cell_len for r in rows)]) for k in columns)


class ConsumersTable(DataTable[Text]):
    def __init__(self) -> None:
        super().__init__(id="consumers", cursor_type="none", cell_padding=0)
        self.border_title = "consumers"
        self.tooltip = (f"part: partitions assigned · commit: committed offsets (sum) · {UNREAD_TIP} (unrd at 100 "
                        "columns) · reb: rebalances · held: a read_committed consumer waiting at the last stable "
                        "offset, an open transaction past it (its name in yellow at 100 columns)")
        self.shown: dict[str, dict[str, Text]] = {}
        self.columns_shown: tuple[str, ...] = ()
        self.consumers: tuple[ConsumerStats, ...] = ()

    def on_mount(self) -> None:
        self.set_columns(LAYOUTS[0])

    def on_resize(self, _event: events.Resize) -> None:
        self.show(self.consumers)

    def set_columns(self, columns: tuple[str, ...]) -> None:
        self.clear(columns=True)
        self.shown = {}
        self.columns_shown = columns
        narrow = columns == LAYOUTS[-1]
        for key in columns:
            self.add_column(heading(key, narrow), key=key)

    def layout_for(self, consumers: tuple[ConsumerStats, ...], with_group: bool) -> tuple[str, ...]:
        """The widest layout whose cells fit the pane (its last when none does)."""
        room = self.scrollable_content_region.width
        for columns in LAYOUTS:
            narrow = columns == LAYOUTS[-1]
            rows = [consumer_row(c, with_group, narrow) for c in consumers]
            if needed_width(columns, rows, narrow) <= room:
                return columns
        return LAYOUTS[-1]

    def show(self, consumers: tuple[ConsumerStats, ...]) -> None:
        """Add and remove rows, update only the cells that changed (each update re-renders the table)."""
        self.consumers = consumers
        groups = sorted({c.group for c in consumers})
        title = "consumers" + (f" · group {groups[0]}" if len(groups) == 1 else
                               f" · groups {', '.join(groups)}" if groups else "")
        if self.border_title != title:
            self.border_title = title
        with_group = len(groups) > 1
        columns = self.layout_for(consumers, with_group)
        if columns != self.columns_shown:
            self.set_columns(columns)
        narrow = columns == LAYOUTS[-1]
        names = {c.name for c in consumers}
        for name in [n for n in self.shown if n not in names]:
            self.remove_row(name)
            del self.shown[name]
        for c in consumers:
            row = consumer_row(c, with_group, narrow)
            old = self.shown.get(c.name)
            if old is None:
                self.add_row(*(row[k] for k in columns), key=c.name)
            else:
                for key in columns:
                    if not same_cell(row[key], old[key]):
                        self.update_cell(c.name, key, row[key], update_width=True)
            self.shown[c.name] = row
