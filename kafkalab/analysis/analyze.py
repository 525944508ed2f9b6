"""``analyze()``: the one entry point the CLI, the console and the lab runner call."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalab.analysis.hadoop_fs import HadoopFiles
from kafkalab.analysis.inputs import check_inputs, detect_run, locate_malformed, mixed_runs_error, reject_repeats
from kafkalab.analysis.job import AUDIT_CLASSES, CLASSES, TOTALS, classify
from kafkalab.analysis.report import PartitionRow, Report
from kafkalab.analysis.spark_session import DEFAULT_MASTER, WarmSession, spark_run, start_session
from kafkalab.analysis.verdict import verdict
from kafkalab.errors import KafkalabError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PathLike = Path | str


def analyze(
    producer_logs: Sequence[PathLike],
    consumer_logs: Sequence[PathLike],
    audit_logs: Sequence[PathLike] | None = None,
    *,
    session: SparkSession | WarmSession | None = None,
    leader_changes: Mapping[tuple[str, int], int] | None = None,
    master: str = DEFAULT_MASTER,
) -> Report:
    """Classify a run's anomalies from its payload logs (local paths, or URIs and globs of URIs that
    the session's Hadoop FileSystem reads).

    ``session``: a running SparkSession, or a :class:`WarmSession` (waited for); without one, the
    process's session is started (or joined) on ``master``. ``leader_changes`` maps (topic, partition)
    to the number of leader changes the run recorded, shown per partition. Raises KafkalabError for
    inputs that make the job impossible; malformed lines are skipped and reported in ``inputs``.
    """
    started = time.monotonic()
    if not producer_logs:
        raise KafkalabError("no producer log given; the analysis compares producer and consumer logs")

    @functools.cache
    def spark() -> SparkSession:
        return session.get() if isinstance(session, WarmSession) else session or start_session(master)

    @functools.cache
    def remote() -> HadoopFiles:
        return HadoopFiles(spark())

    checked = check_inputs({"producer": producer_logs, "consumer": consumer_logs, "audit": audit_logs or []},
                           remote)
    files, consumer_files, audit_files = checked["producer"], checked["consumer"], checked["audit"]
    inputs = [*files, *consumer_files, *audit_files]
    reject_repeats(inputs)
    run = detect_run(files)
    result = classify(spark(), [f.path for f in files], [f.path for f in consumer_files],
                      [f.path for f in audit_files], run, sum(f.size_bytes for f in inputs))
    if result.foreign_runs:
        raise mixed_runs_error([r for r in (run, *result.foreign_runs) if r])
    if result.producer_id_repeats:
        raise KafkalabError(f"{result.producer_id_repeats:,} message ids appear in more than one producer row; "
                            "each send is logged once, so is a producer log given twice or appended to?")
    for kind, count in result.malformed.items():
        if count:
            locate_malformed([f for f in inputs if f.kind == kind])
    changes = leader_changes or {}
    rows = [PartitionRow(p.topic, p.partition, _audit_aware(p.counts, bool(audit_files)),
                         changes.get((p.topic, p.partition), 0) if leader_changes is not None else None)
            for p in result.partitions]
    totals = {name: sum(r.counts.get(name) or 0 for r in rows) for name in TOTALS}
    classes: dict[str, int | None] = {name: sum(r.counts.get(name) or 0 for r in rows) for name in CLASSES}
    if not audit_files:
        classes = {name: None if name in AUDIT_CLASSES else value for name, value in classes.items()}
    return Report(run=run, totals=totals, classes=classes, per_partition=rows, samples=result.samples,
                  verdict=verdict(classes, totals["acknowledged"], totals["typed"], totals["consumed_rows"]),
                  inputs=inputs,
                  elapsed_s=time.monotonic() - started, spark=spark_run(spark()), audit=bool(audit_files))


def _audit_aware(counts: dict[str, int], audit: bool) -> dict[str, int | None]:
    return {k: (None if not audit and k in AUDIT_CLASSES else v) for k, v in counts.items()}
