"""The results pane: the verdict in large text, totals and per-partition counts of the anomaly classes,
and throughput over the run with faults and leader changes marked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Unpack

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from kafkalab.feeds.frames import ReportView, RunFrame
from kafkalab.labs.failover import Leadership, other_words
from kafkalab.labs.grade import Grade, GradeOutcome
from kafkalab.labs.graded_check import CheckPhase, CheckStatus
from kafkalab.labs.results import Phase
from kafkalab.ui.chart import ThroughputChart
from kafkalab.ui.widget_options import WidgetOptions

CLASSES = ("lost", "lost_by_brokers", "missed_by_consumers", "duplicated", "redelivered", "consumed_twice",
           "reordered", "key_reordered", "recovered", "aborted_read", "unexpected")
# the per-partition table: always these columns, then any other class with a count; short headings so
# the table fits the side pane of a 100-column terminal
COLUMNS = {"acknowledged": "acked", "consumed_rows": "proc.", "lost": "lost", "duplicated": "dupl.",
           "redelivered": "redel.", "reordered": "reord.", "leader_changes": "leader moves"}
MORE_COLUMNS = {"lost_by_brokers": "lost by brokers", "missed_by_consumers": "missed",
                "consumed_twice": "twice", "key_reordered": "key ord.", "recovered": "recov.",
                "aborted_read": "aborted read", "unexpected": "unexp."}


def label(cls: str) -> str:
    return cls.replace("_", " ")


def partition_table(per_partition: Mapping[str, Mapping[str, int]]) -> Table:
    """Partitions down (``topic/partition`` where the report spans topics), counts across, a total row; anomaly
    counts above zero in red."""
    rows = per_partition.values()
    # an audit's two kinds of loss are shown whenever there was a loss, a zero too: "lost by brokers 0" is the point
    lost = any(row.get("lost") for row in rows)
    shown = COLUMNS | {c: h for c, h in MORE_COLUMNS.items()
                       if any(row.get(c) for row in rows) or (lost and any(c in row for row in rows))}
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False, show_footer=True,
                  footer_style="bold", header_style="bold", expand=False)
    table.add_column("part", footer="all", no_wrap=True)
    cells = {key: [f"{row.get(key, 0):,}" for row in rows] for key in shown}
    for key, heading in shown.items():
        total = f"{sum(row.get(key, 0) for row in rows):,}"
        widest = max(len(total), *map(len, cells[key]), *map(len, heading.split()))
        table.add_column(heading, justify="right", footer=total, no_wrap=False, min_width=widest)
    for i, (partition, row) in enumerate(per_partition.items()):
        table.add_row(partition, *(Text(cells[c][i], style="bold red" if row.get(c) and c in CLASSES else "")
                                   for c in shown))
    return table


def moved_text(per_partition: Mapping[str, Mapping[str, int]], facts: Leadership | None = None) -> Text | None:
    """What the run moved, under the verdict: a failover lesson's "no anomaly" is its point only once the
    leaders it moved are named, with the run's count of leader changes (the table's total; other topics' only
    labelled as theirs), and how long each failover took (``facts``: the core's, as the verdict says them).
    None for a report without leader counts."""
    if not any("leader_changes" in row for row in per_partition.values()):
        return None
    facts = facts or Leadership()
    moved = {p: row["leader_changes"] for p, row in per_partition.items() if row.get("leader_changes")}
    out = Text("what moved  ", style="bold")
    if not moved:
        out.append("no partition's leader: every one kept its broker", style="dim")
    else:
        parts = [f"{p} ({n}×)" if n > 1 else str(p) for p, n in moved.items()]
        names = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
        plural = "s" if len(moved) > 1 else ""
        total = sum(moved.values())
        out.append(f"the leader{plural} of partition{plural} {names}: {total} leader change{'s' if total > 1 else ''}")
    out.append(other_words(facts.changes.other_by_topic()), style="dim")
    for line in facts.lines():
        out.append("\nfailover  ", style="bold").append(line, style="bold cyan")
    return out


def grade_card(grade: Grade) -> Group:
    """A graded check: its verdict, a row per check (PASS/FAIL, the value seen against the value wanted, in how
    many runs it held), the rules that name what mattered, the score. A check that was not graded shows only
    why and what to do: no rows, no rules, no score."""
    style = ("bold black on green" if grade.passed else "bold white on grey37" if grade.outcome == GradeOutcome.SOLUTION
             else "bold black on yellow" if not grade.graded else "bold white on red")
    verdict = Text(f"\n  {grade.verdict}  \n", style=style, justify="center")
    what = Text()
    whose = "the solution's changes  " if grade.outcome == GradeOutcome.SOLUTION else "your changes  "
    what.append(whose, style="bold").append(", ".join(grade.changes) or "none", style="cyan")
    if not grade.graded:
        for why in grade.not_graded_why:
            what.append("\n• ", style="bold").append(why)
        return Group(verdict, what, Text(f"\n{grade.todo}", style="bold"))
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False, header_style="bold",
                  expand=False)
    table.add_column("", no_wrap=True)
    table.add_column("check")
    table.add_column("seen", justify="right", no_wrap=True)
    table.add_column("wanted", justify="right", no_wrap=True)
    table.add_column("runs", justify="right", no_wrap=True)
    for row in grade.rows:
        mark = Text(row.mark, style=f"bold {row.mark.colour}")
        table.add_row(mark, row.text, Text(row.seen_text, style="" if row.passed else f"bold {row.mark.colour}"),
                      row.wanted_text,
                      f"{row.runs_held}/{row.runs}")
    if grade.loss:
        what.append("\nlost in the last graded run  ", style="bold").append(grade.loss)
    what.append(f"\nseeds {', '.join(map(str, grade.seeds))}", style="dim")
    for rule in grade.rules:
        what.append("\n• ", style="bold").append(rule)
    score = Text("\nscore ", style="bold").append(grade.score_text, style="bold green" if grade.passed else "bold")
    if grade.score_notes:
        score.append(f"  {grade.score_notes}", style="dim")
    if grade.todo:
        score.append(f"\n{grade.todo}" + ("; G gives up" if grade.outcome == GradeOutcome.NOT_FIXED else ""),
                     style="dim")
    return Group(verdict, table, what, score)


SAMPLES_HINT = "a shows samples of these records (partition, offset, message id)"
NO_REPORT_YET = "No report yet: when a run ends, its verdict, per-partition counts and throughput chart appear here."
NO_REPORTS = ("No reports here: the default workload (g) is not analysed; its throughput shows below while it "
              "runs. A lab's run ends in a report here: `kafkalab console LAB` (`kafkalab labs` lists them).")


class ResultsPane(VerticalScroll):
    frame: RunFrame | None = None  # the last frame shown
    shown: ReportView | None = None  # the report on screen (dimmed to its verdict while a run is under way)
    in_progress = False
    # how a report-less moment names the verdict kept from before (a replay's is of the run it replays)
    under_way = "a run is under way: its report appears here when it ends"
    earlier_verdict = "the last run's verdict"

    def __init__(self, reports: bool = True, **kwargs: Unpack[WidgetOptions]) -> None:
        """``reports``: whether runs here end in a report (a lab's do; a bare console's workload does not)."""
        super().__init__(**kwargs)
        self.reports = reports

    def compose(self) -> ComposeResult:
        yield Static(NO_REPORT_YET if self.reports else NO_REPORTS, id="verdict")
        yield Static(id="totals")
        yield Static(id="per-partition")
        yield ThroughputChart(id="chart")

    shown_check = CheckStatus()

    def show(self, frame: RunFrame) -> None:
        self.query_one(ThroughputChart).show(frame.throughput, frame.markers)
        self.frame = frame
        report = frame.report
        check = frame.check
        if check.running:  # a graded check: no verdict until its last run ended
            if check != self.shown_check:
                self.shown_check, self.in_progress = check, True
                self._show_verdict_only(Text(f"\n  {check.text}: the grade appears here when the runs end  \n",
                                             style="bold black on yellow", justify="center"))
            return
        if check.over:
            if check != self.shown_check or report != self.shown or self.in_progress:
                self.shown_check, self.shown, self.in_progress = check, report, False
                self.show_check(check, report)
            return
        self.shown_check = check
        if report is None:
            if frame.live and self.shown is not None and not self.in_progress:
                self.show_in_progress(self.shown.verdict)  # the last run's counts would read as this one's
                self.in_progress = True
            return
        if report == self.shown and not self.in_progress:
            return
        self.shown, self.in_progress = report, False
        if not report.analysed:
            self.show_no_report(frame.phase, report.verdict)
            return
        style = "bold black on green" if report.ok else "bold white on red"
        self.query_one("#verdict", Static).update(Text(f"\n  {report.verdict}  \n", style=style, justify="center"))
        in_table = set(COLUMNS) | set(MORE_COLUMNS) if report.per_partition else set()
        totals = Text()
        for cls in CLASSES:
            count = report.totals.get(cls, 0)
            if cls not in in_table:
                totals.append(f"{label(cls)}\xa0", style="dim").append(f"{count:,}   ",
                                                                       style="bold red" if count else "green")
        if report.failed:  # why sends failed: a delivery timeout is the app's to handle, not the cluster's loss
            totals = Text("failed sends  ", style="bold").append(report.failed).append("\n").append_text(totals)
        if report.loss:  # which of the two "lost" was, as the card and the verdict say it
            totals = Text("lost  ", style="bold").append(report.loss, style="bold red").append("\n").append_text(totals)
        moved = moved_text(report.per_partition, frame.leadership)  # right under the verdict, the run's point
        if moved is not None:
            totals = moved.append("\n").append_text(totals) if totals.plain else moved
        if any(report.samples.values()):  # which records: no room for them here, and the key is in no footer
            totals.append("\n" if totals.plain else "").append(SAMPLES_HINT, style="dim")
        self.query_one("#totals", Static).update(totals)
        self.query_one("#totals", Static).set_class(not totals.plain, "-empty")
        self.query_one("#per-partition", Static).update(partition_table(report.per_partition)
                                                        if report.per_partition else "")

    def show_check(self, check: CheckStatus, report: ReportView | None) -> None:
        """The grade card in place of the run's verdict (the demonstration's expectations are not the fix's);
        the last graded run's counts below it. A check without a grade says why (not graded) or that it stopped."""
        if check.grade is not None:
            card: Group | Text = grade_card(check.grade)
        elif check.phase == CheckPhase.NOT_GRADED:
            card = Text(f"\n  NOT GRADED: {check.reason}  \n", style="bold black on yellow", justify="center")
            card.append("\nyour fix was not judged: check it again (f)", style="bold")
        else:
            card = Text(f"\n  {check.text}  \n", style="bold white on grey37", justify="center")
        self.query_one("#verdict", Static).update(card)
        self.call_after_refresh(self.scroll_home, animate=False)  # a new grade is read from its verdict down
        analysed = report is not None and report.analysed
        self.query_one("#totals", Static).update(Text("the last graded run's counts:", style="dim")
                                                 if analysed else "")
        self.query_one("#totals", Static).set_class(not analysed, "-empty")
        self.query_one("#per-partition", Static).update(partition_table(report.per_partition)
                                                        if report is not None and report.per_partition else "")

    def show_in_progress(self, last_verdict: str) -> None:
        """A run under way: its report comes when it ends; the last run's verdict stays, named as the last's."""
        verdict = Text(f"\n  {self.under_way}  \n", style="bold black on grey70", justify="center")
        verdict.append(f"\n{self.earlier_verdict}: {last_verdict}", style="dim")
        self._show_verdict_only(verdict)

    def _show_verdict_only(self, verdict: Text) -> None:
        self.query_one("#verdict", Static).update(verdict)
        self.query_one("#totals", Static).update("")
        self.query_one("#totals", Static).add_class("-empty")
        self.query_one("#per-partition", Static).update("")

    def show_no_report(self, phase: Phase, why: str) -> None:
        """A run that ended before its analysis: what happened, and no counts that would read as a report."""
        stopped = phase == Phase.STOPPED
        head = "the run was stopped" if stopped else "the run failed"
        verdict = Text(f"\n  {head}: no report  \n", style="bold white on grey37" if stopped else "bold white on red",
                       justify="center")
        verdict.append(f"\n{why}\n", style="bold").append(
            "A report needs a run that reaches its analysis: g starts the next run.", style="dim")
        self._show_verdict_only(verdict)

    def samples_text(self) -> str:
        report = self.frame.report if self.frame else None
        if report is None or not report.analysed:
            return "No report: the run ended before its analysis."
        if not report.samples:
            return "The report has no samples: no anomalies."
        return "\n\n".join(f"{label(cls)}:\n  " + "\n  ".join(ids) for cls, ids in report.samples.items() if ids)
