"""The analysis report: totals, anomaly counts, per-partition rows, samples, verdict; JSON and a table."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.analysis.inputs import InputFile
from kafkalab.analysis.job import AUDIT_CLASSES, CLASSES, NO_REASON, Identity, Sample
from kafkalab.clients.error_words import failure_words

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

# a column only where it counts: it needs a transactional producer, which few runs have
SHOWN_WHEN_SEEN = ("aborted_read",)
# short, as the console's partition table has them: words wrap between them, never inside one
HEADINGS = {
    "attempted": "sent", "acknowledged": "acked", "consumed_rows": "consumed", "lost": "lost",
    "lost_by_brokers": "lost by brokers", "missed_by_consumers": "missed by consumers",
    "duplicated": "dupl.", "redelivered": "redel.", "consumed_twice": "twice", "reordered": "reord.",
    "key_reordered": "key ord.", "recovered": "recov.", "aborted_read": "aborted read",
    "unexpected": "unexp.", "leader_changes": "leader moves",
}


@dataclass(frozen=True)
class ReportGrid:
    """The per-partition table as plain cells (counts with Rich markup): the CLI fits it to the terminal.

    ``topic`` is the one topic every row is of (named once, above the table; the rows then give the partition
    alone), None when the rows span topics (each row then reads ``topic-partition``). The first column is the
    partition, every other a count; ``footers`` are the totals.
    """

    title: str
    topic: str | None
    headings: list[str]
    rows: list[list[str]]
    footers: list[str]


@dataclass
class PartitionRow:
    topic: str
    partition: int
    counts: dict[str, int | None]
    leader_changes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "leader_changes": self.leader_changes,
                **self.counts}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PartitionRow:
        counts = {k: v for k, v in d.items() if k not in ("topic", "partition", "leader_changes")}
        return cls(d["topic"], d["partition"], counts, d.get("leader_changes"))


@dataclass(frozen=True)
class SparkRun:
    """Where the job ran: the master, Spark's version, executor processes (0 in local mode: the driver
    runs the tasks) and the cores (task slots) they had."""

    master: str
    version: str
    executors: int
    cores: int

    def describe(self) -> str:
        where = "in the driver" if self.executors == 0 else _plural(self.executors, "executor")
        return f"{self.master} (Spark {self.version}, {where}, {_plural(self.cores, 'core')})"


@dataclass
class Report:
    """What a run's logs say. Class counts are None where the logs cannot tell them (an audit log not given, no
    sequence numbers). ``failed_by_reason``: the failed sends per the producer's error (None where the records
    are matched by content); ``key_reordered_keys``: the keys the key_reordered records are of (None with it)."""

    run: str | None
    totals: dict[str, int]
    classes: dict[str, int | None]
    per_partition: list[PartitionRow]
    samples: dict[str, list[Sample]]
    verdict: str
    inputs: list[InputFile]
    elapsed_s: float
    spark: SparkRun | None = None
    audit: bool = field(default=False)
    identity: Identity = Identity.MESSAGE_ID
    failed_by_reason: dict[str, int] | None = None
    key_reordered_keys: int | None = None

    @property
    def malformed(self) -> int:
        return sum(f.malformed for f in self.inputs)

    def nonzero(self, names: list[str]) -> list[str]:
        """The named classes (or ``malformed``) whose count is above zero: what --fail-on acts on."""
        return [n for n in names if (self.malformed if n == "malformed" else self.classes.get(n) or 0) > 0]

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            **self.classes,
            "key_reordered_keys": self.key_reordered_keys,
            "totals": self.totals,
            "failed_by_reason": self.failed_by_reason,
            "per_partition": [row.to_json() for row in self.per_partition],
            "samples": {name: [s.to_json() for s in found] for name, found in self.samples.items()},
            "verdict": self.verdict,
            "identity": str(self.identity),
            "inputs": {"audit": self.audit, "malformed": self.malformed,
                       "spark_master": self.spark.master if self.spark else None,
                       "files": [f.to_json() for f in self.inputs]},
            "spark": vars(self.spark) if self.spark else None,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Report:
        """The report ``to_json`` wrote (a run dir's report.json, read back by a replay)."""
        inputs = d["inputs"]
        return cls(
            run=d["run"], totals=d["totals"], classes={name: d[name] for name in CLASSES if name in d},
            per_partition=[PartitionRow.from_json(row) for row in d["per_partition"]],
            samples={name: [Sample(**s) for s in found] for name, found in d["samples"].items()},
            verdict=d["verdict"], inputs=[InputFile.from_json(f) for f in inputs["files"]],
            elapsed_s=d["elapsed_s"], spark=SparkRun(**d["spark"]) if d.get("spark") else None,
            audit=inputs["audit"], identity=Identity(d.get("identity", Identity.MESSAGE_ID)),
            failed_by_reason=d.get("failed_by_reason"), key_reordered_keys=d.get("key_reordered_keys"),
        )

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")

    def grid(self) -> ReportGrid:
        """The per-partition table's cells with a totals row: partitions down, counts across."""
        shown_classes = [c for c in self.identity.classes() if (self.audit or c not in AUDIT_CLASSES)
                         and (c not in SHOWN_WHEN_SEEN or self.classes[c])]
        leaders = any(row.leader_changes is not None for row in self.per_partition)
        topics = {row.topic for row in self.per_partition}
        topic = next(iter(topics)) if len(topics) == 1 else None
        headings = ["part" if topic else "partition"]
        footers = ["all"]
        if leaders:
            headings.append(HEADINGS["leader_changes"])
            footers.append(f"{sum(r.leader_changes or 0 for r in self.per_partition):,}")
        for name in ("attempted", "acknowledged", "consumed_rows"):
            headings.append(HEADINGS[name])
            footers.append(f"{self.totals[name]:,}")
        for name in shown_classes:
            headings.append(HEADINGS[name])
            footers.append(_cell(self.classes[name]))
        rows = []
        for row in self.per_partition:
            cells = [str(row.partition) if topic else f"{row.topic}-{row.partition}"]
            if leaders:
                cells.append("" if row.leader_changes is None else f"{row.leader_changes:,}")
            cells += [f"{row.counts[n] or 0:,}" for n in ("attempted", "acknowledged", "consumed_rows")]
            cells += [_cell(row.counts[n]) for n in shown_classes]
            rows.append(cells)
        title = f"run {self.run or '?'}" + (f" · topic {topic}" if topic else "")
        return ReportGrid(title, topic, headings, rows, footers)

    def table(self) -> RenderableType:
        """The per-partition table with a totals row, at its natural width (the CLI fits :meth:`grid` instead)."""
        from rich.table import Table

        grid = self.grid()
        table = Table(title=grid.title, show_footer=True, header_style="bold", footer_style="bold")
        for i, (heading, footer) in enumerate(zip(grid.headings, grid.footers, strict=True)):
            table.add_column(heading, footer=footer, justify="left" if i == 0 else "right", no_wrap=True)
        for cells in grid.rows:
            table.add_row(*cells)
        return table

    def print(self, console: Console, tables: Sequence[RenderableType] = ()) -> None:
        """The table (``tables``: it fitted to the terminal, else :meth:`table`), the verdict, samples, inputs."""
        from rich.markup import escape

        for table in tables or [self.table()]:
            console.print(table)
        console.print(self.verdict, highlight=False)
        if self.identity is Identity.CONTENT:
            console.print(f"[dim]{CONTENT_NOTE}[/]", highlight=False)
        if self.failed_by_reason:
            console.print(f"[dim]failed sends:[/] {escape(failed_reasons(self.failed_by_reason))}", highlight=False)
        for name, found in self.samples.items():
            ids = escape(", ".join(s.describe() for s in found[:3]))  # a record's value may hold "[...]"
            console.print(f"[dim]{name}:[/] {ids}{' …' if len(found) > 3 else ''}", highlight=False)
        for f in self.inputs:
            if f.malformed:
                lines = ", ".join(map(str, f.malformed_lines))
                console.print(f"[yellow]{f.path}: {f.malformed} malformed line(s), skipped: {lines}[/]")
        where = f" on {self.spark.describe()}" if self.spark else ""
        console.print(f"[dim]analysed in {self.elapsed_s:.1f} s{where}[/]")


CONTENT_NOTE = ("records matched by topic, partition, key and value, as a multiset (a course log has no message ids): "
                "repeated values count as copies of one record, and reordering cannot be seen; '-' is a class these "
                "logs cannot tell")


# the producer's error for a record its delivery timeout failed (librdkafka's name; kafkalab's producer logs it)
DELIVERY_TIMEOUT = "_MSG_TIMED_OUT"


def failed_reasons(by_reason: Mapping[str, int]) -> str:
    """"40 delivery timeout (_MSG_TIMED_OUT), 2 transaction aborted (ABORTED)": the most frequent first."""
    ranked = sorted(by_reason.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{n:,} {reason}" if reason == NO_REASON else f"{n:,} {failure_words(reason)} ({reason})"
                     for reason, n in ranked)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _cell(value: int | None) -> str:
    if value is None:
        return "-"
    return f"[bold red]{value:,}[/]" if value else "0"




def loss_split(classes: Mapping[str, int | None]) -> str:
    """Which of the two an acknowledged record never processed was, where an audit read the topic back:
    "2,000 never processed: 0 lost by the brokers, 2,000 in the topic but missed by the consumers". "" when
    nothing was lost or no audit told them apart. Results, the grade card and the verdict say it this way."""
    parts = loss_parts(classes)
    return f"{classes.get('lost') or 0:,} never processed: {parts}" if parts else ""


def loss_parts(classes: Mapping[str, int | None]) -> str:
    """"0 lost by the brokers, 2,000 in the topic but missed by the consumers" ("" as for :func:`loss_split`)."""
    lost, by_brokers, missed = (classes.get(k) for k in ("lost", "lost_by_brokers", "missed_by_consumers"))
    if not lost or by_brokers is None or missed is None:
        return ""
    return f"{by_brokers:,} lost by the brokers, {missed:,} in the topic but missed by the consumers"
