"""The results pane: the verdict in large text, totals and per-partition counts of the anomaly classes,
and throughput over the run with faults and leader changes marked."""

from __future__ import annotations

from collections.abc import Mapping

from rich import box
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from kafkalab.ui.chart import ThroughputChart
from kafkalab.ui.source import RunFrame

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


class ResultsPane(VerticalScroll):
    frame: RunFrame | None = None  # the frame on screen

    def compose(self) -> ComposeResult:
        yield Static("No report yet: it appears here when a run ends.", id="verdict")
        yield Static(id="totals")
        yield Static(id="per-partition")
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

    def samples_text(self) -> str:
        report = self.frame.report if self.frame else None
        if report is None:
            return "No report yet."
        if not report.samples:
            return "The report has no samples: no anomalies."
        return "\n\n".join(f"{label(cls)}:\n  " + "\n  ".join(ids) for cls, ids in report.samples.items() if ids)
