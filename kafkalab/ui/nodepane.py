"""What the ZooKeeper and broker panes share: the title, the state badge, the usage line, the log tail."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

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
    if info.pid is None:
        return Text("no process\n", style="dim")
    if info.cpu_percent is None or info.rss_bytes is None:
        usage = Text("cpu, mem not recorded", style="dim")
    else:
        usage = Text.assemble(("cpu ", "dim"), f"{info.cpu_percent:.0f}%", (" · mem ", "dim"),
                              f"{info.rss_bytes / 2**20:.0f}M")
    return Text.assemble(("pid ", "dim"), str(info.pid), (" · up ", "dim"), duration(info.uptime_s), "\n", usage)


NOT_STARTED = Text("not started yet", style="dim")


class NodePane(Vertical):
    """A bordered pane for one node; subclasses add their own facts line."""

    def __init__(self, name: str, key: str, *, id: str | None = None) -> None:
        super().__init__(classes="node-pane", id=id)
        self.node_name = name
        self.key = key
        self.info: NodeInfo | None = None
        self.border_title = f"[{key}] {name}"

    def compose(self) -> ComposeResult:
        yield Line(classes="badge-line")
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
