"""The results pane: the verdict in large text, totals and per-partition counts of the anomaly classes,
and throughput over the run with faults and leader changes marked."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from kafkalab.ui.chart import ThroughputChart
from kafkalab.ui.source import RunFrame

CLASSES = ("lost", "lost_by_brokers", "missed_by_consumers", "duplicated", "redelivered", "reordered",
           "recovered", "unexpected")


def label(cls: str) -> str:
    return cls.replace("_", " ")


class ResultsPane(VerticalScroll):
    def __init__(self) -> None:
        super().__init__(id="results")
        self.frame: RunFrame | None = None

    def compose(self) -> ComposeResult:
        yield Static("No report yet: it appears here when a run ends.", id="verdict")
        yield Static(id="totals")
        yield DataTable(id="per-partition", cursor_type="none", show_cursor=False)
        yield ThroughputChart(id="chart")

    def show(self, frame: RunFrame) -> None:
        self.query_one(ThroughputChart).show(frame.throughput, frame.markers)
        if frame.report == (self.frame.report if self.frame else None):
            self.frame = frame
            return
        self.frame = frame
        report = frame.report
        if report is None:
            return
        style = "bold black on green" if report.ok else "bold white on red"
        self.query_one("#verdict", Static).update(Text(f"\n  {report.verdict}  \n", style=style, justify="center"))
        totals = Text()
        for cls in CLASSES:
            count = report.totals.get(cls, 0)
            totals.append(f"{label(cls)} ", style="dim").append(f"{count:,}   ", style="bold red" if count else "green")
        self.query_one("#totals", Static).update(totals)
        table: DataTable[str] = self.query_one("#per-partition", DataTable)
        table.clear(columns=True)
        shown = [c for c in CLASSES if any(row.get(c) for row in report.per_partition.values())]
        table.add_columns("partition", *map(label, shown))
        for partition in sorted(report.per_partition):
            row = report.per_partition[partition]
            table.add_row(str(partition), *(f"{row.get(c, 0):,}" for c in shown))

    def samples_text(self) -> str:
        report = self.frame.report if self.frame else None
        if report is None:
            return "No report yet."
        if not report.samples:
            return "The report has no samples: no anomalies."
        return "\n\n".join(f"{label(cls)}:\n  " + "\n  ".join(ids) for cls, ids in report.samples.items() if ids)
