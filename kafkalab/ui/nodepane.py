"""What the ZooKeeper, controller and broker panes share: the title that fits, the state badge, the usage line,
the log tail."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget

from kafkalab.cluster import NodeInfo, NodeState
from kafkalab.ui.line import Line
from kafkalab.ui.logtail import LogTail

BADGE_STYLE = {
    NodeState.STARTING: "bold black on yellow",
    NodeState.RUNNING: "bold black on green",
    NodeState.STOPPING: "bold black on yellow",
    NodeState.STOPPED: "bold white on grey37",
    NodeState.KILLED: "bold white on red",
    NodeState.PAUSED: "bold black on cyan",
    NodeState.FAILED: "bold white on dark_red",
}


def badge(state: NodeState) -> Text:
    return Text(f" {state.value.upper()} ", style=BADGE_STYLE[state])


def duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def usage_lines(info: NodeInfo) -> Text:
    """pid, uptime, cpu and memory of a node that runs; a node that is down has none (its process may not be
    reaped yet, and its pid read "pid 30603 · up 0s" under KILLED for a moment)."""
    if info.pid is None or not info.state.alive:
        return Text("no process\n", style="dim")
    if info.cpu_percent is None or info.rss_bytes is None:
        usage = Text("cpu, mem not recorded", style="dim")
    else:
        usage = Text.assemble(("cpu ", "dim"), f"{info.cpu_percent:.0f}%", (" · mem ", "dim"),
                              f"{info.rss_bytes / 2**20:.0f}M")
    return Text.assemble(("pid ", "dim"), str(info.pid), (" · up ", "dim"), duration(info.uptime_s), "\n", usage)


NOT_STARTED = Text("not started yet", style="dim")
ISOLATED = "ISOLATED"  # the mark of a node cut from every other (kafkalab.feeds.net_view)
NET_STYLE = "bold magenta"  # the network marks, as the chart marks a network change
ISOLATED_STYLE = "bold white on magenta"


def net_parts(marks: tuple[str, ...], error: str = "") -> list[Text]:
    """A pane's network marks as parts a narrow pane breaks between: ✂ ISOLATED as a badge, each other mark
    after a ✂; a proxy that did not answer, dimmed."""
    parts = [Text(f" ✂ {m} ", ISOLATED_STYLE) if m == ISOLATED else Text(f"✂ {m}", NET_STYLE) for m in marks]
    if error:
        parts.append(Text(f"proxy: {error}"[:80], style="dim"))
    return parts

TITLE_FRAME = 6
"""Columns a round or heavy border keeps around its title: the corner, a line and a space on each side."""


class TitleLevel(IntEnum):
    """How much of a pane's title its border holds; every pane has a form at each level, longest first."""

    FULL = 0  # [1] broker-1 ★ · [!] controller 101 ★
    SHORT = 1  # [1] broker ★ · [!] ctl 101 ★
    TIGHT = 2  # 1 broker★ · ! ctl 101★ (six KRaft panes at 100 columns: 10 columns for a title)
    TINY = 3  # 1 b★ · ! c101★


def fitting_level(panes: Iterable[tuple[tuple[str, ...], int]]) -> TitleLevel:
    """The longest level at which every pane's form (its forms, its width in columns) fits its border; the
    tiniest when none does (Textual then cuts it, but it still begins with the key)."""
    panes = list(panes)
    return next((level for level in TitleLevel
                 if all(len(forms[level]) <= width - TITLE_FRAME for forms, width in panes)), TitleLevel.TINY)


class FittedTitle(Widget):
    """A pane whose border title is its form at the longest level that fits, chosen again on each resize. Six
    KRaft panes at 100 columns have 10 or 11 columns for a title: Textual cut `[0] controller-1` to
    `[0] contr…` (three panes alike) and `[1] broker-1` to `[1] broke…`."""

    title_shown = ""  # the title as plain text (Textual keeps it as markup, `[@]` escaped)

    def title_forms(self) -> tuple[str, str, str, str]:
        """The title at each :class:`TitleLevel`; each names the key that picks the node, its role and id."""
        raise NotImplementedError

    def title_row(self) -> list[FittedTitle]:
        """The panes that share one level, so a row reads alike (`! ctl 101★` beside `@ ctl 102`, not
        `[@] ctl 102`, where the first pane is a column narrower)."""
        return [self]

    def show_title(self, level: TitleLevel) -> None:
        title = self.title_forms()[level]
        if title != self.title_shown:  # a title set repaints the whole pane: only on a change
            self.title_shown = title
            self.border_title = Text(title)  # plain: `[@]` is not markup

    def fit_title(self) -> None:
        """Every pane of the row at the level they all hold (a resize or a longer title may change it)."""
        row = self.title_row()
        level = fitting_level((pane.title_forms(), pane.outer_size.width) for pane in row)
        for pane in row:
            pane.show_title(level)

    def on_resize(self, _event: events.Resize) -> None:
        self.fit_title()


class NodePane(Vertical, FittedTitle):
    """A bordered pane for one node; subclasses add their own facts line and their short titles."""

    def __init__(self, name: str, key: str, *, id: str | None = None) -> None:
        super().__init__(classes="node-pane", id=id)
        self.node_name = name
        self.key = key
        self.info: NodeInfo | None = None
        self.show_title(TitleLevel.FULL)

    def title_forms(self) -> tuple[str, str, str, str]:
        return (f"[{self.key}] {self.node_name}",) * 2 + (f"{self.key} {self.node_name}",) * 2

    def title_row(self) -> list[FittedTitle]:
        """The node panes beside this one (ZooKeeper's or the controllers', and the brokers')."""
        if self.parent is None:
            return [self]
        return [pane for pane in self.parent.children if isinstance(pane, NodePane)]

    def compose(self) -> ComposeResult:
        yield Line(classes="badge-line")
        yield Line(classes="net-line")
        yield Line(classes="facts-line")
        yield Line(classes="usage-line")
        yield from self.compose_extra()
        yield LogTail(classes="log-tail")

    def compose_extra(self) -> ComposeResult:
        yield from ()

    def show_info(self, info: NodeInfo) -> None:
        self.info = info
        line = badge(info.state)
        if info.reason and info.state != NodeState.RUNNING:
            line.append(f" {info.reason}", style="italic")
        self.query_one(".badge-line", Line).show(line)
        self.query_one(".usage-line", Line).show(usage_lines(info))
        for state in NodeState:
            self.set_class(info.state == state, f"-{state.value}")

    def forget(self) -> None:
        """The node is gone (a reset, the next run's fresh cluster): its old state, reason and log no longer hold."""
        self.info = None
        self.query_one(".badge-line", Line).show(NOT_STARTED)
        self.query_one(".usage-line", Line).show(Text())
        self.query_one(LogTail).clear()
        for state in NodeState:
            self.set_class(False, f"-{state.value}")

    def show_net(self, marks: tuple[str, ...], error: str = "") -> None:
        """The node's links cut, dropped, delayed (:meth:`NetView.marks`); the line is there only while some are
        (a node pane has no row to spare at 100x30)."""
        parts = net_parts(marks, error)
        line = self.query_one(".net-line", Line)
        if bool(parts) != line.display:
            line.display = bool(parts)
        line.show_parts(parts)
        self.set_class(ISOLATED in marks, "-isolated")
        self.set_class(bool(parts), "-net")

    def set_selected(self, selected: bool) -> None:
        """Mark the pane as the one the node keys act on: its border (app.tcss, ``.node-pane.-selected``).

        A class change makes Textual restyle the pane's whole subtree (a dozen widgets), the costliest step
        of a key press; no rule styles a pane's children by ``-selected``, so only the pane is restyled.
        """
        if self.has_class("-selected") == selected:
            return
        self.set_class(selected, "-selected", update=False)
        self.app.stylesheet.apply(self)

    def show_facts(self, facts: Text) -> None:
        """The pane's own facts; before its node exists (a lab's cluster starts with its first run) only that,
        not 'not registered' or 'clients: unknown', which read as faults on a screen nobody has touched."""
        self.query_one(".facts-line", Line).show(facts if self.info is not None else NOT_STARTED)

    def add_log(self, lines: tuple[str, ...]) -> None:
        self.query_one(LogTail).add(lines)
