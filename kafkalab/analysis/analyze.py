"""``analyze()``: the one entry point the CLI, the console and the lab runner call."""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalab.analysis.content_job import classify_content, identity_of, unknown_classes
from kafkalab.analysis.hadoop_fs import HadoopFiles
from kafkalab.analysis.inputs import check_inputs, detect_run, locate_malformed, mixed_runs_error, reject_repeats
from kafkalab.analysis.job import CLASSES, TOTALS, Identity, classify
from kafkalab.analysis.report import PartitionRow, Report
from kafkalab.analysis.spark_session import DEFAULT_MASTER, WarmSession, spark_run, start_session
from kafkalab.analysis.verdict import report_verdict
from kafkalab.errors import KafkalabError
from kafkalab.logformat import LogFormat

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
    log_format: LogFormat | None = None,
) -> Report:
    """Classify a run's anomalies from its payload logs (local paths, or URIs and globs of URIs that
    the session's Hadoop FileSystem reads).

    ``session``: a running SparkSession, or a :class:`WarmSession` (waited for); without one, the
    process's session is started (or joined) on ``master``. ``leader_changes`` maps (topic, partition)
    to the number of leader changes the run recorded, shown per partition. Raises KafkalabError for
    inputs that make the job impossible; malformed lines are skipped and reported in ``inputs``.

    Producer and consumer logs are kafkalab's CSV or the course's payload logs, each detected from its
    content unless ``log_format`` says which; as soon as one is a course log, records are matched by their
    content instead of their message id (see content_job.py) and the report says so.
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
                           remote, log_format)
    files, consumer_files, audit_files = checked["producer"], checked["consumer"], checked["audit"]
    inputs = [*files, *consumer_files, *audit_files]
    reject_repeats(inputs)
    run = detect_run(files)
    identity = identity_of(inputs)
    size = sum(f.size_bytes for f in inputs)
    if identity is Identity.CONTENT:
        result = classify_content(spark(), inputs, size)
    else:
        result = classify(spark(), [f.path for f in files], [f.path for f in consumer_files],
                          [f.path for f in audit_files], run, size)
    if result.foreign_runs:
        raise mixed_runs_error([r for r in (run, *result.foreign_runs) if r])
    if result.producer_id_repeats:
        raise KafkalabError(f"{result.producer_id_repeats:,} message ids appear in more than one producer row; "
                            "each send is logged once, so is a producer log given twice or appended to?")
    for kind, count in result.malformed.items():
        if count:
            locate_malformed([f for f in inputs if f.kind == kind])
    changes = leader_changes or {}
    unknown = unknown_classes(identity, bool(audit_files), inputs)
    rows = [PartitionRow(p.topic, p.partition, _known(p.counts, unknown),
                         changes.get((p.topic, p.partition), 0) if leader_changes is not None else None)
            for p in result.partitions]
    totals = {name: sum(r.counts.get(name) or 0 for r in rows) for name in TOTALS}
    classes = _known({name: sum(r.counts.get(name) or 0 for r in rows) for name in CLASSES}, unknown)
    samples = {name: found for name, found in result.samples.items() if name not in unknown}
    report = Report(run=run, totals=totals, classes=classes, per_partition=rows, samples=samples, verdict="",
                    inputs=inputs, elapsed_s=time.monotonic() - started, spark=spark_run(spark()),
                    audit=bool(audit_files), identity=identity,
                    # a content identity's counts are of copies, not of sends with their errors
                    failed_by_reason=result.failed_by_reason if identity is Identity.MESSAGE_ID else None,
                    key_reordered_keys=None if "key_reordered" in unknown else result.key_reordered_keys)
    report.verdict = report_verdict(report)
    return report


def _known(counts: dict[str, int], unknown: frozenset[str]) -> dict[str, int | None]:
    """The counts, None for the classes the logs cannot tell."""
    return {k: (None if k in unknown else v) for k, v in counts.items()}
