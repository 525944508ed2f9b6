"""The records pane: the last records of a chosen topic (or one partition) as they arrive, and a line to
type a record (``key:value``) into it with its outcome shown, as an instructor shows per-partition order
and queue against publish/subscribe live."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static

from kafkalab.clients.records import Outcome, Record, TxnView
from kafkalab.errors import KafkalabError
from kafkalab.feeds.groups_feed import GroupsFeed, RecordsFrame

RECORD_COLUMNS = (("partition", "part"), ("offset", "offset"), ("key", "key"), ("value", "value"),
                  ("timestamp", "time"), ("txn", "txn"))
VALUE_WIDTH = 40
PICK_HINT = "pick a topic, then type records · esc gives the console its keys back"
# the records are read read_uncommitted; beside them a read_committed reader says which it never reads (aborted)
# or cannot read yet (held: past the last stable offset, an open transaction at or before them)
TXN_CELLS = {TxnView.ABORTED: Text("aborted", style="bold red"), TxnView.HELD: Text("held", style="yellow")}
TXN_TIP = ("txn: as a read_committed consumer sees the record: aborted (its transaction aborted: it never reads "
           "it), held (past the last stable offset: an open transaction holds it back); blank: it reads it")


def parse_watch(text: str) -> tuple[str, int | None]:
    """``topic`` or ``topic:partition``."""
    topic, sep, part = text.strip().partition(":")
    if not topic:
        raise KafkalabError("name a topic: topic or topic:partition")
    if not sep:
        return topic, None
    if not part.strip().isdigit():
        raise KafkalabError(f"{text!r}: the partition after ':' must be a number, as in {topic}:0")
    return topic, int(part)


def record_row(r: Record) -> tuple[str, ...]:
    stamp = "-" if r.timestamp_ms is None else time.strftime("%H:%M:%S", time.localtime(r.timestamp_ms / 1000)) + \
        f".{r.timestamp_ms % 1000:03d}"
    value = r.value_text if len(r.value_text) <= VALUE_WIDTH else r.value_text[:VALUE_WIDTH - 1] + "…"
    return str(r.partition), str(r.offset), r.key_text, value, stamp


def outcome_text(outcome: Outcome) -> Text:
    if outcome.ok:
        return Text.assemble((outcome.line, "bold"), "  → ", (outcome.describe(), "green"))
    return Text.assemble((outcome.line, "bold"), "  → ", (outcome.describe(), "bold red"))


class RecordsPane(Vertical):
    """Shown, it puts the cursor in its first line (the topic to follow, then the record to type): the letters
    typed there are text, not console keys, until esc gives the keys back."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", "Keys back", id="records.leave")]

    def __init__(self, feed: GroupsFeed) -> None:
        super().__init__(id="records")
        self.feed = feed
        self.shown: set[str] = set()
        self.watching: tuple[str, int | None] | None = None
        self.outcomes: list[Outcome] = []
        self.txn_shown: dict[str, TxnView] = {}

    def compose(self) -> ComposeResult:
        yield Input(placeholder="topic or topic:partition to follow (enter)", id="records-watch")
        table: DataTable[str | Text] = DataTable(cursor_type="none", id="records-table")
        table.tooltip = TXN_TIP
        yield table
        yield Input(placeholder="key:value to send to the followed topic (enter)", id="records-type")
        yield Static(Text(PICK_HINT, style="dim"), id="records-outcome")

    def focus_line(self) -> None:
        """The topic line until a topic is followed, then the record line."""
        self.query_one("#records-type" if self.watching else "#records-watch", Input).focus()

    def action_leave(self) -> None:
        self.screen.set_focus(None)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in RECORD_COLUMNS:
            table.add_column(label, key=key)

    def show(self, frame: RecordsFrame) -> None:
        table = self.query_one(DataTable)
        if (frame.topic, frame.partition) != self.watching:
            return  # a frame of the previous topic, or nothing followed yet
        if frame.error:
            self.say(Text(frame.error, style="red"))
        keys = {f"{r.partition}/{r.offset}" for r in frame.records}
        for gone in self.shown - keys:
            table.remove_row(gone)
            self.txn_shown.pop(gone, None)
        added = False
        views = frame.txn or (TxnView.PENDING,) * len(frame.records)
        for r, view in zip(frame.records, views, strict=True):
            key = f"{r.partition}/{r.offset}"
            cell = TXN_CELLS.get(view, "")
            if key not in self.shown:
                table.add_row(*record_row(r), cell, key=key)
                added = True
            elif self.txn_shown.get(key) != view:  # held until its transaction ended, or pending until read
                table.update_cell(key, "txn", cell, update_width=True)
            self.txn_shown[key] = view
        self.shown = keys
        if added:
            table.scroll_end(animate=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if event.input.id == "records-watch":
            try:
                topic, partition = parse_watch(text)
            except KafkalabError as exc:
                self.say(Text(str(exc), style="red"))
                return
            self.run_worker(lambda: self._watch(topic, partition), thread=True, exit_on_error=False, group="records")
        else:
            event.input.value = ""
            self.run_worker(lambda: self._type(text), thread=True, exit_on_error=False, group="records")

    def _watch(self, topic: str, partition: int | None) -> None:
        try:
            self.feed.watch(topic, partition)
        except KafkalabError as exc:
            self.app.call_from_thread(self.say, Text(str(exc), style="red"))
            return
        self.app.call_from_thread(self._watching, topic, partition)

    def _watching(self, topic: str, partition: int | None) -> None:
        self.watching = (topic, partition)
        self.query_one(DataTable).clear()
        self.shown = set()
        self.txn_shown = {}
        self.border_title = f"records of {topic}" + ("" if partition is None else f" partition {partition}")
        if self.query_one("#records-watch", Input).has_focus:
            self.query_one("#records-type", Input).focus()
        self.say(Text(f"following {self.border_title.removeprefix('records of ')}", style="dim"))

    def _type(self, line: str) -> None:
        try:
            outcome = self.feed.type_record(line)
        except Exception as exc:  # a bad -D-like setting or a client that cannot start: shown, not raised
            outcome = Outcome(line, error=str(exc) or type(exc).__name__)
        self.app.call_from_thread(self._typed, outcome)

    def _typed(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.say(outcome_text(outcome))

    def say(self, text: Text) -> None:
        self.query_one("#records-outcome", Static).update(text)
