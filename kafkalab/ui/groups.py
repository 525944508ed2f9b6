"""The consumer-groups pane: one card per group (state, and offsets it had and has no more: expired or deleted;
members and their partitions, per partition the committed offset, log-end offset and commit lag, total commit
lag over time as a sparkline) and the reset-offsets modal, whose dry-run table is shown before anything is
executed. A group Kafka forgot once its offsets expired still has its card, saying so.

"commit lag" is Kafka's lag (log end minus the committed offset): what a restarted consumer would read again.
The Clients tab's "unread" counts from the consumer's position instead; the two names keep two numbers at the
same moment from reading as one number that disagrees with itself (a paused coordinator holds commits back).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, Select, Sparkline, Static

from kafkalab.admin import GroupDescription, OffsetMove, ResetTarget
from kafkalab.admin.groups import RESET_MODES
from kafkalab.errors import KafkalabError
from kafkalab.feeds.groups_feed import GroupsFeed, GroupsFrame

COMMIT_LAG = "commit lag"  # not just "lag": the Clients tab's "unread" is another count
COMMIT_LAG_TIP = ("commit lag: the log end minus the group's committed offset, the records a restarted consumer "
                  "would read again. The Clients tab's unread counts from each consumer's position, so it is lower "
                  "while commits wait or fail")
LAG_COLUMNS = (("topic", "topic"), ("partition", "part"), ("committed", "committed"), ("log_end", "log-end"),
               ("lag", COMMIT_LAG), ("member", "member"))
STATE_STYLE = {"Stable": "green", "Empty": "dim", "Dead": "dim", "PreparingRebalance": "yellow",
               "CompletingRebalance": "yellow", "Unknown": "red"}
GONE_STYLE = "bold yellow"  # offsets it had and has no more: a returning consumer starts at auto.offset.reset


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def header_text(desc: GroupDescription, selected: bool) -> Text:
    lag = desc.total_lag
    # the commit lag before the coordinator and the assignor: a narrow card wraps those, not the figure
    return Text.assemble(
        ("▶ " if selected else "  ", "bold"), (desc.group_id, "bold"), "  ",
        (desc.state_label(desc.taken_at), GONE_STYLE if desc.offsets_gone else STATE_STYLE.get(desc.state, "")),
        (f"  {COMMIT_LAG} ", "dim"),
        (_num(lag), "bold yellow" if lag else ""), ("  coordinator ", "dim"), desc.coordinator or "-",
        ("  assignor ", "dim"), desc.assignor or "-",
    )


def member_text(desc: GroupDescription) -> Text:
    if not desc.reachable:
        return Text(f"no answer: {desc.error or 'the group coordinator did not answer'} (the next poll asks again)",
                    style="red")
    gone = Text(f"\n{desc.offsets_gone.explain()}", style=GONE_STYLE) if desc.offsets_gone else Text()
    if not desc.members:
        return Text("no active member", style="dim").append_text(gone)
    out = Text()
    for m in desc.members:
        # a space after each comma: a narrow card wraps between partitions, not inside one ("tes" / "t-topic:7")
        parts = ", ".join(f"{t}:{p}" for t, p in m.partitions) or "-"
        out.append(f"{m.client_id} {m.host}", style="cyan").append(f" {parts}\n")
    out.rstrip()
    return out.append_text(gone)


def lag_rows(desc: GroupDescription) -> list[tuple[str, ...]]:
    return [(p.topic, str(p.partition), _num(p.committed), _num(p.log_end), _num(p.lag),
             p.member.client_id if p.member else "-") for p in desc.partitions]


class GroupCard(Vertical):
    """One group's facts; updated in place so the table keeps its scroll position."""

    def __init__(self, group_id: str, card_id: str) -> None:
        super().__init__(id=card_id, classes="group-card")
        self.group_id = group_id
        self.desc: GroupDescription | None = None
        self.rows: list[tuple[str, ...]] = []
        self._pending: tuple[GroupDescription, tuple[int, ...], bool] | None = None
        self._ready = False  # mounted, columns added

    def compose(self) -> ComposeResult:
        header = Static(classes="group-header")
        header.tooltip = COMMIT_LAG_TIP
        yield header
        yield Static(classes="group-members")
        yield Sparkline([], classes="group-lag")
        table: DataTable[str] = DataTable(cursor_type="none", classes="group-table")
        table.tooltip = COMMIT_LAG_TIP
        yield table

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in LAG_COLUMNS:
            table.add_column(label, key=key)
        self._ready = True
        if self._pending is not None:
            self.show(*self._pending)

    def show(self, desc: GroupDescription, lags: tuple[int, ...], selected: bool) -> None:
        """Show the group's facts; a card not mounted yet (no widgets, no columns) keeps them for its mount."""
        self.desc = desc
        if not self._ready:
            self._pending = (desc, lags, selected)
            return
        self._pending = None
        self.set_class(selected, "-selected")
        self.query_one(".group-header", Static).update(header_text(desc, selected))
        self.query_one(".group-members", Static).update(member_text(desc))
        self.query_one(Sparkline).data = list(lags) or [0]
        rows = lag_rows(desc)
        if rows != self.rows:
            table = self.query_one(DataTable)
            table.clear()
            for row in rows:
                table.add_row(*row, key=f"{row[0]}/{row[1]}")
            self.rows = rows


def unknown_groups(frame: GroupsFrame, used: tuple[str, ...]) -> Text:
    """The run's consumers' groups that the brokers do not know: a consumer that never got a coordinator has
    no group to describe, and an empty tab would read as "no consumer ran"."""
    known = {g.group_id for g in frame.groups}
    missing = [g for g in used if g not in known]
    if not missing:
        return Text()
    names = ", ".join(missing)
    return Text.assemble(("\nthe run's consumers use ", ""), (names, "bold"),
                         (f", which the brokers do not know: `kafkalab group describe {missing[0]}` says why", ""))


class GroupsPane(VerticalScroll):
    """Every consumer group of the cluster, one card each; ``]`` picks the group the reset key acts on."""

    def __init__(self) -> None:
        super().__init__(id="groups")
        self.cards: dict[str, GroupCard] = {}
        self.selected: str | None = None
        self.frame = GroupsFrame()

    def compose(self) -> ComposeResult:
        yield Static(Text("consumer groups appear here once a consumer joins one", style="dim"), id="groups-status")

    def show(self, frame: GroupsFrame, used: tuple[str, ...] = ()) -> None:
        """``used``: the groups the run's consumers use; one the brokers do not know is named, not left out."""
        status = self.query_one("#groups-status", Static)
        if frame.error:
            status.update(Text(f"groups: {frame.error} (last values shown)", style="red"))
            return
        self.frame = frame
        line = Text(f"{len(frame.groups)} group(s) · ] picks one · O resets its offsets", style="dim") \
            if frame.groups else Text("no consumer group on the brokers yet", style="dim")
        status.update(line.append_text(unknown_groups(frame, used)))
        names = [g.group_id for g in frame.groups]
        if self.selected not in names:
            self.selected = names[0] if names else None
        for gone in [g for g in self.cards if g not in names]:
            self.cards.pop(gone).remove()
        for index, desc in enumerate(frame.groups):
            card = self.cards.get(desc.group_id)
            if card is None:
                card = self.cards[desc.group_id] = GroupCard(desc.group_id, f"group-card-{index}-{len(self.cards)}")
                self.mount(card)
            self._show_card(card, desc, frame)

    def _show_card(self, card: GroupCard, desc: GroupDescription, frame: GroupsFrame) -> None:
        card.show(desc, frame.lag_history.get(desc.group_id, ()), desc.group_id == self.selected)

    def select_next(self) -> str | None:
        names = [g.group_id for g in self.frame.groups]
        if not names:
            return None
        self.selected = names[(names.index(self.selected) + 1) % len(names)] if self.selected in names else names[0]
        for desc in self.frame.groups:
            if desc.group_id in self.cards:
                self._show_card(self.cards[desc.group_id], desc, self.frame)
        self.cards[self.selected].scroll_visible()
        return self.selected

    def selected_group(self) -> GroupDescription | None:
        return next((g for g in self.frame.groups if g.group_id == self.selected), None)


class ResetScreen(ModalScreen[str | None]):
    """The CLI's reset choices; Dry run shows TOPIC PARTITION NEW-OFFSET, Execute commits exactly that
    plan (planned again first: if the offsets or the group changed meanwhile, the new plan is shown)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="reset.cancel")]

    def __init__(self, feed: GroupsFeed, group: str, topics: list[str]) -> None:
        super().__init__(classes="modal")
        self.feed = feed
        self.group = group
        self.topics = topics
        self.plan: list[OffsetMove] | None = None
        self.planned_for: tuple[tuple[str, ...], ResetTarget] | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide-dialog", id="reset-dialog"):
            yield Label(Text(f"Reset the offsets of group {self.group}", style="bold"))
            yield Input(" ".join(self.topics), placeholder="topic or topic:0,1 (several: space between)",
                        id="reset-topics")
            with Horizontal(id="reset-choice"):
                yield Select([(f"--{m}", m) for m in RESET_MODES], value="to-earliest", allow_blank=False,
                             id="reset-mode")
                yield Input(placeholder="N or ISO time", id="reset-value")
            table: DataTable[str] = DataTable(cursor_type="none", id="reset-plan")
            yield table
            yield Static(Text("Dry run first: the new offsets show here before anything is committed", style="dim"),
                         id="reset-status")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Dry run", variant="primary", id="reset-dry-run")
                yield Button("Execute", variant="error", id="reset-execute", disabled=True)
                yield Button("Close (esc)", id="reset-close")

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET")

    def request(self) -> tuple[tuple[str, ...], ResetTarget]:
        specs = tuple(self.query_one("#reset-topics", Input).value.split())
        mode = str(self.query_one("#reset-mode", Select).value)
        value = self.query_one("#reset-value", Input).value.strip()
        return specs, ResetTarget(mode, value if mode in ("to-offset", "shift-by", "to-datetime") else "")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "reset-close":
            self.dismiss(None)
            return
        try:
            specs, target = self.request()
        except KafkalabError as exc:
            self.say(str(exc), error=True)
            return
        execute = event.button.id == "reset-execute"
        self.say("executing ..." if execute else "planning ...")
        self.run_worker(lambda: self._work(specs, target, execute), thread=True, exit_on_error=False,
                        group="reset")

    def _work(self, specs: tuple[str, ...], target: ResetTarget, execute: bool) -> None:
        try:
            moves = self.feed.plan_reset(self.group, list(specs), target)
            if execute and (specs, target) == self.planned_for and moves == self.plan:
                self.feed.apply_reset(self.group, moves)
                self.app.call_from_thread(self.dismiss, f"group {self.group}: offsets reset ({target.describe()})")
                return
        except KafkalabError as exc:
            self.app.call_from_thread(self.say, str(exc), True)
            return
        note = "the offsets changed since the dry run: check the new plan, then Execute" if execute else ""
        self.app.call_from_thread(self.show_plan, specs, target, moves, note)

    def show_plan(self, specs: tuple[str, ...], target: ResetTarget, moves: list[OffsetMove], note: str) -> None:
        self.plan, self.planned_for = moves, (specs, target)
        table = self.query_one(DataTable)
        table.clear()
        for m in moves:
            table.add_row(m.topic, str(m.partition), _num(m.current), str(m.new))
        self.query_one("#reset-execute", Button).disabled = False
        self.say(note or f"dry run of {target.describe()}: nothing committed yet; Execute commits these offsets",
                 error=bool(note))

    def on_input_changed(self, _event: Input.Changed) -> None:
        self.query_one("#reset-execute", Button).disabled = True  # a changed request needs a new dry run

    def on_select_changed(self, _event: Select.Changed) -> None:
        self.query_one("#reset-execute", Button).disabled = True

    def say(self, message: str, error: bool = False) -> None:
        self.query_one("#reset-status", Static).update(Text(message, style="bold red" if error else ""))

    def action_cancel(self) -> None:
        self.dismiss(None)


def open_reset(pane: GroupsPane, feed: GroupsFeed, push: Callable[..., object],
               done: Callable[[str | None], None]) -> str | None:
    """Open the reset modal on the pane's selected group; returns why not, if it cannot."""
    desc = pane.selected_group()
    if desc is None:
        return "no consumer group to reset yet"
    topics = sorted({p.topic for p in desc.partitions})
    push(ResetScreen(feed, desc.group_id, topics), done)
    return None
