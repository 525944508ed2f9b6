"""The results pane: the verdict in large text, totals and per-partition counts of the anomaly classes,
and throughput over the run with faults and leader changes marked."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Unpack

from rich import box
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from kafkalab.feeds.frames import ReportView, RunFrame
from kafkalab.labs.results import Phase
from kafkalab.ui.chart import ThroughputChart
from kafkalab.ui.widget_options import WidgetOptions

CLASSES = ("lost", "lost_by_brokers", "missed_by_consumers", "duplicated", "redelivered", "reordered",
           "recovered", "unexpected")
# the per-partition table: always these columns, then any other class with a count; short headings so
# the table fits the side pane of a 100-column terminal
COLUMNS = {"acknowledged": "acked", "consumed_rows": "proc.", "lost": "lost", "duplicated": "dupl.",
           "redelivered": "redel.", "reordered": "reord.", "leader_changes": "leader moves"}
MORE_COLUMNS = {"lost_by_brokers": "lost by brokers", "missed_by_consumers": "missed", "recovered": "recov.",
                "unexpected": "unexp."}


def label(cls: str) -> str:
    return cls.replace("_", " ")


def partition_table(per_partition: Mapping[int, Mapping[str, int]]) -> Table:
    """Partitions down, counts across, a total row; anomaly counts above zero in red."""
    rows = per_partition.values()
    shown = COLUMNS | {c: h for c, h in MORE_COLUMNS.items() if any(row.get(c) for row in rows)}
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False, show_footer=True,
                  footer_style="bold", header_style="bold", expand=False)
    table.add_column("part", footer="all", no_wrap=True)
    cells = {key: [f"{row.get(key, 0):,}" for _p, row in sorted(per_partition.items())] for key in shown}
    for key, heading in shown.items():
        total = f"{sum(row.get(key, 0) for row in rows):,}"
        widest = max(len(total), *map(len, cells[key]), *map(len, heading.split()))
        table.add_column(heading, justify="right", footer=total, no_wrap=False, min_width=widest)
    for i, partition in enumerate(sorted(per_partition)):
        row = per_partition[partition]
        table.add_row(str(partition), *(Text(cells[c][i], style="bold red" if row.get(c) and c in CLASSES else "")
                                        for c in shown))
    return table


NO_REPORT_YET = "No report yet: when a run ends, its verdict, per-partition counts and throughput chart appear here."
NO_REPORTS = ("No reports here: the default workload (g) is not analysed; its throughput shows below while it "
              "runs. A lab's run ends in a report here: `kafkalab console LAB` (`kafkalab labs` lists them).")


class ResultsPane(VerticalScroll):
    frame: RunFrame | None = None  # the last frame shown
    shown: ReportView | None = None  # the report on screen (dimmed to its verdict while a run is under way)
    in_progress = False

    def __init__(self, reports: bool = True, **kwargs: Unpack[WidgetOptions]) -> None:
        """``reports``: whether runs here end in a report (a lab's do; a bare console's workload does not)."""
        super().__init__(**kwargs)
        self.reports = reports

    def compose(self) -> ComposeResult:
        yield Static(NO_REPORT_YET if self.reports else NO_REPORTS, id="verdict")
        yield Static(id="totals")
        yield Static(id="per-partition")
        yield ThroughputChart(id="chart")

    def show(self, frame: RunFrame) -> None:
        self.query_one(ThroughputChart).show(frame.throughput, frame.markers)
        self.frame = frame
        report = frame.report
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
        self.query_one("#totals", Static).update(totals)
        self.query_one("#totals", Static).set_class(not totals.plain, "-empty")
        self.query_one("#per-partition", Static).update(partition_table(report.per_partition)
                                                        if report.per_partition else "")

    def show_in_progress(self, last_verdict: str) -> None:
        """A run under way: its report comes when it ends; the last run's verdict stays, named as the last's."""
        verdict = Text("\n  a run is under way: its report appears here when it ends  \n",
                       style="bold black on grey70", justify="center")
        verdict.append(f"\nthe last run's verdict: {last_verdict}", style="dim")
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
