"""The partition / ISR table: keyed rows that keep their place, changed cells marked for a few seconds,
cursor and scroll kept across refreshes, last known values greyed while the brokers are unreachable."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Unpack

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.feeds.frames import NO_CLUSTER_STATES, no_cluster_yet
from kafkalab.ui.line import Line
from kafkalab.ui.widget_options import WidgetOptions

NOT_FAILURES = NO_CLUSTER_STATES

MARK_S = 4.0
COLUMNS = (("partition", "partition"), ("leader", "leader"), ("replicas", "replicas"), ("isr", "ISR"),
           ("end", "offset"), ("status", "status"))
LEADER_DOWN = "electing a leader"
LEADER_CUT = "leader cut off"  # its process runs, but the proxy cuts it from ZooKeeper / the other brokers
DOWN_MARK = "✗"
CUT_MARK = "✂"
STATUS_STYLE = {"ok": "green", "under-replicated": "yellow", "under min ISR": "bold dark_orange",
                "offline": "bold red", LEADER_DOWN: "bold red", LEADER_CUT: "bold magenta"}
Row = dict[str, str]


def row_of(p: PartitionState, down: frozenset[int] = frozenset(), cut: frozenset[int] = frozenset()) -> Row:
    """The table's cells; a leader whose process kafkalab saw end (``down``) is marked at once, before the
    cluster's metadata catches up (the controller elects a new leader seconds later); one the network-fault
    proxy cuts off (``cut``: from ZooKeeper or the controllers, or from every other broker) is marked ✂ while the
    metadata still names it: the zombie that acknowledges writes its followers never fetch."""
    leader_down = p.leader is not None and p.leader in down
    leader_cut = p.leader is not None and p.leader in cut and not leader_down
    mark = DOWN_MARK if leader_down else CUT_MARK if leader_cut else ""
    return {
        "partition": row_key(p),
        "leader": "none" if p.leader is None else f"{p.leader}{mark}",
        "replicas": ",".join(map(str, p.replicas)), "isr": ",".join(map(str, p.isr)),
        "end": "?" if p.end_offset is None or p.end_offset < 0 else f"{p.end_offset:,}",  # -1001: no leader
        "status": LEADER_DOWN if leader_down else LEADER_CUT if leader_cut else p.status,
    }


def row_key(p: PartitionState) -> str:
    return f"{p.topic}/{p.partition}"


@dataclass
class TableDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[tuple[str, str]] = field(default_factory=list)  # (row key, column key)


def diff_rows(old: Mapping[str, Row], new: Mapping[str, Row]) -> TableDiff:
    """Rows added (in the new order), removed, and cells whose text changed."""
    diff = TableDiff()
    for key, row in new.items():
        if key not in old:
            diff.added.append(key)
            continue
        diff.changed += [(key, col) for col, value in row.items() if old[key].get(col) != value]
    diff.removed = [key for key in old if key not in new]
    return diff


def leader_moves(old: ClusterSnapshot, new: ClusterSnapshot, short: bool = False) -> list[str]:
    """'leader of t/3 moved 2 -> 1' for every partition whose leader changed between two snapshots; ``short``:
    't/3: 2 -> 1' (a toast titled "leaders moved", one line each in the 34 columns it has at 100x30).

    Only a partition that kept its replicas counts: a topic deleted and created again (a reused cluster's
    next run) gets a new assignment led by its first replica, and no leader moved."""
    before = {row_key(p): p for p in old.partitions}
    moves = []
    for p in new.partitions:
        was = before.get(row_key(p))
        if was is not None and was.replicas == p.replicas and was.leader != p.leader:
            change = f"{'none' if was.leader is None else was.leader} -> {'none' if p.leader is None else p.leader}"
            moves.append(f"{row_key(p)}: {change}" if short else f"leader of {row_key(p)} moved {change}")
    return moves


class PartitionTable(DataTable[Text]):
    def __init__(self, clock: Callable[[], float] = time.monotonic, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(cursor_type="row", cell_padding=0, **kwargs)
        self.clock = clock
        self.rows_now: dict[str, Row] = {}
        self.marks: dict[tuple[str, str], float] = {}
        self.stale = False
        self.down: frozenset[int] = frozenset()  # brokers whose process is gone, as the node states say
        self.cut: dict[int, str] = {}  # brokers the network-fault proxy cuts off, each with what from ("zk · 2,3")
        self.last: ClusterSnapshot | None = None
        self.shown: tuple[tuple[str, str], ...] = COLUMNS
        self.widths = {key: len(label) + 1 for key, label in COLUMNS}

    def on_mount(self) -> None:
        self._add_columns()

    def hide_offsets(self) -> None:
        """No offset column: a replay's recorded snapshots have no end offsets (the run's watch asks none)."""
        self.shown = tuple((key, label) for key, label in COLUMNS if key != "end")
        self.widths.pop("end", None)
        self.clear(columns=True)
        self._add_columns()
        self.rows_now = {}

    def _add_columns(self) -> None:
        for key, label in self.shown:
            self.add_column(f" {label}", key=key, width=self.widths[key])

    def _fit(self, rows: dict[str, Row]) -> None:
        """Fixed column widths keep cells in place; they only grow, by rebuilding the columns (rarely)."""
        wanted = {col: max([self.widths[col], *(len(row[col]) + 1 for row in rows.values())])
                  for col in self.widths}
        wanted["status"] = max(wanted["status"], len(" under-replicated "))
        if wanted != self.widths:
            self.widths = wanted
            self.clear(columns=True)
            self._add_columns()
            self.rows_now = {}

    def cell(self, key: str, col: str) -> Text:
        value = self.rows_now[key][col]
        style = STATUS_STYLE.get(value, "") if col == "status" else ""
        if col == "leader" and (value == "none" or value.endswith(DOWN_MARK)):
            style = "bold red"
        elif col == "leader" and value.endswith(CUT_MARK):
            style = "bold magenta"
        if self.marks.get((key, col), 0) > self.clock():
            style = "bold reverse"
        if self.stale:
            style = "dim strike" if col == "status" else "dim"
        return Text(f" {value}", style=style)

    def show(self, snapshot: ClusterSnapshot) -> None:
        now = self.clock()
        if no_cluster_yet(snapshot) and (self.rows_now or self.last):  # a fresh cluster: the last one's rows go
            self.clear()
            self.rows_now, self.last, self.stale = {}, None, False
            self.marks.clear()
            return
        stale = not snapshot.reachable
        if stale:
            if not self.stale:
                self.stale = True
                self._redraw_all()
            return
        self.last = snapshot
        new = {row_key(p): row_of(p, self.down, frozenset(self.cut)) for p in snapshot.partitions}
        for key, row in new.items():  # a leader that did not answer in time: its last known end offset
            if row["end"] == "?" and key in self.rows_now:
                row["end"] = self.rows_now[key]["end"]
        self._fit(new)
        diff = diff_rows(self.rows_now, new)
        was_stale, self.stale = self.stale, False
        self.rows_now = new
        for key in diff.removed:
            self.remove_row(key)
        for key in diff.added:
            self.add_row(*(self.cell(key, col) for col, _ in self.shown), key=key)
        for key, col in diff.changed:
            if col in self.widths and col != "end":  # offsets move every second of a run: no news, no mark
                self.marks[(key, col)] = now + MARK_S
        expired = [kc for kc, until in self.marks.items() if until <= now]
        for kc in expired:
            del self.marks[kc]
        if was_stale:
            self._redraw_all()
            return
        for key, col in {*diff.changed, *((k, c) for k, c in expired if k in new)}:
            if col in self.widths:
                self.update_cell(key, col, self.cell(key, col))

    def set_down(self, down: frozenset[int]) -> None:
        """Brokers known to be down; their leaderships are marked now, not at the next snapshot."""
        if down != self.down:
            self.down = down
            if self.last is not None and not self.stale:
                self.show(self.last)

    def set_cut(self, cut: dict[int, str]) -> None:
        """Brokers cut off by the network-fault proxy; their leaderships are marked now."""
        if cut != self.cut:
            self.cut = cut
            if self.last is not None and not self.stale:
                self.show(self.last)

    def _redraw_all(self) -> None:
        for key in self.rows_now:
            for col, _ in self.shown:
                self.update_cell(key, col, self.cell(key, col))


class PartitionsPane(Vertical):
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(id="partitions")
        self.border_title = "partitions"
        self.clock = clock
        self.last_ok: ClusterSnapshot | None = None

    def compose(self) -> ComposeResult:
        yield Line("waiting for the first snapshot ...", id="partitions-status")
        view = Line(id="partitions-view")  # whose metadata the table shows, and who is left out (as `cluster status`)
        view.display = False  # an empty line would still take a row
        yield view
        yield Line(id="presenter-run")  # presenter mode only: the run's progress, the clients pane being hidden
        yield PartitionTable(clock=self.clock, id="partition-table")

    def show(self, snapshot: ClusterSnapshot, role: str, controller: int | None) -> None:
        """``role`` and ``controller``: who is named as the controller (KRaft: the quorum's active one)."""
        self.query_one(PartitionTable).show(snapshot)
        self.set_class(not snapshot.reachable and snapshot.error not in NOT_FAILURES, "-stale")
        self.query_one("#partitions-status", Line).show(self.status_line(snapshot, role, controller))
        self.show_view(snapshot)
        if snapshot.reachable or no_cluster_yet(snapshot):  # a fresh cluster's 'unreachable since' is its own
            self.last_ok = snapshot if snapshot.reachable else None

    def show_view(self, snapshot: ClusterSnapshot) -> None:
        """Whose view the rows are, in words wrapped between words; the line takes no row when there is none to
        name (unreachable, a replay's recorded snapshots)."""
        view = snapshot.metadata_view
        said = view.said()
        line = self.query_one("#partitions-view", Line)
        line.display = bool(said)
        line.show(Text(said, style=STATUS_STYLE[LEADER_CUT] if view.left_out else "dim"))

    def status_line(self, snapshot: ClusterSnapshot, role: str, controller: int | None) -> Text:
        if not snapshot.reachable and snapshot.error in NOT_FAILURES:
            return Text.assemble((f" {snapshot.error.split(':')[0].upper()} ", "bold reverse"),
                                 f" {snapshot.error.partition(': ')[2] or 'the table fills when it is up'}")
        if snapshot.helper_failed:  # the brokers were not asked: calling them unreachable would mislead
            return Text.assemble((" NO SNAPSHOT ", "bold white on red"),
                                 f" {snapshot.error}; last known values, greyed")
        if not snapshot.reachable:
            since = f" since {clock_time(self.last_ok.taken_at)}" if self.last_ok else ""
            return Text.assemble((" UNREACHABLE ", "bold white on red"),
                                 f" brokers unreachable{since}: last known values, greyed ({snapshot.error})")
        parts = snapshot.partitions
        bad = {s: sum(1 for p in parts if p.status == s) for s in ("under-replicated", "under min ISR", "offline")}
        wrong = [Text(f"{count} {status}", style=STATUS_STYLE[status]) for status, count in bad.items() if count]
        cut = self.query_one(PartitionTable).cut
        wrong[:0] = [Text(f"{CUT_MARK} {b} cut from {what}", style=STATUS_STYLE[LEADER_CUT]) for b, what in cut.items()]
        who = Text.assemble((f"{role} ", "dim"), str(controller if controller is not None else "?"))
        count = Text.assemble(("partitions ", "dim"), str(len(parts)))
        when = clock_time(snapshot.taken_at)
        return fit_status(wrong, [who, count], when, self.query_one("#partitions-status").content_size.width or 80)


def fit_status(wrong: list[Text], facts: list[Text], when: str, width: int) -> Text:
    """The table's header in ``width`` columns: what is wrong first, the time last and always there (at 100
    columns the line had wrapped, "updated" ending the one row shown). The words give way first ("updated",
    then the facts from the last), then what is wrong is cut short."""
    def line(parts: list[Text], clock: Text) -> Text:
        return Text("  ").join([*parts, clock])

    updated = Text.assemble(("updated ", "dim"), when)
    for shown in (line([*wrong, *facts], updated), *(line([*wrong, *facts[:n]], Text(when))
                                                     for n in range(len(facts), -1, -1))):
        if shown.cell_len <= width:
            return shown
    head = Text("  ").join(wrong)
    head.truncate(max(width - len(when) - 2, 1), overflow="ellipsis")
    return line([head], Text(when))


def clock_time(epoch: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch))
