"""Records of aborted transactions read by a read_uncommitted consumer (aborted_read), on generated runs of a
transactional producer: counts known by construction, two seeds, real Spark."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from rich.console import Console

from kafkalab.analysis import analyze
from kafkalab.analysis.job import CLASSES
from kafkalab.analysis.report import failed_reasons
from kafkalab.analysis.verdict import verdict
from kafkalab.feeds.lab_source import report_view
from kafkalab.labs.expectations import is_metric
from kafkalab.labs.results import Outcome, RunResult
from kafkalab.labs.wording import metric_words
from kafkalab.logformat import ABORTED
from tests.analysis_fixtures import spark_fixture  # noqa: F401 - the shared `spark` fixture
from tests.analysis_reference import assert_matches_reference
from tests.analysis_scenarios import RUN, TIMED_OUT, write_transactions
from tests.test_analysis_report import make_report

ABORTED_READ = ("{n} records of aborted transactions were processed: the consumers read uncommitted records "
                "(isolation.level=read_uncommitted): use read_committed")


@pytest.mark.spark
@pytest.mark.parametrize("seed", [3, 8])
def test_aborted_records_read_uncommitted_are_their_own_class(spark: object, tmp_path: Path, seed: int) -> None:
    built = write_transactions(seed, tmp_path)
    w = built.written
    assert built.aborted_read > 0 and built.aborted > built.aborted_read  # some aborted records never written
    report = analyze(w.producer_logs, w.consumer_logs, w.audit_logs, session=spark)
    assert_matches_reference(report, w.producer_logs, w.consumer_logs, w.audit_logs, RUN)
    assert report.classes["aborted_read"] == built.aborted_read
    # not recovered (only p2's timed-out sends in the topic are), and, never acknowledged, never lost: the audit
    # reads them too (read_uncommitted)
    assert report.classes["recovered"] == built.recovered
    assert report.classes["lost"] == report.classes["missed_by_consumers"] == report.classes["lost_by_brokers"] == 0
    assert report.failed_by_reason == {k: v for k, v in {ABORTED: built.aborted, TIMED_OUT: built.timed_out}.items()
                                       if v}
    assert report.verdict.startswith(ABORTED_READ.format(n=built.aborted_read))
    assert {s.msg_id for s in report.samples["aborted_read"]} <= {r[0] for r in _aborted_rows(w.producer_logs)}

    # the read_committed consumer alone never read one
    committed = analyze(w.producer_logs, [built.committed_log], w.audit_logs, session=spark)
    assert committed.classes["aborted_read"] == 0 and "aborted" not in committed.verdict.split(";")[0]
    assert committed.classes["recovered"] == built.recovered


def _aborted_rows(producer_logs: list[Path]) -> list[list[str]]:
    return [row for p in producer_logs for row in csv.reader(p.open()) if row[7] == ABORTED]


def test_aborted_read_is_named_in_the_verdict_and_is_a_metric() -> None:
    classes = dict.fromkeys(CLASSES, 0) | {"aborted_read": 4}
    assert verdict(classes) == ABORTED_READ.format(n=4)
    assert verdict(classes, causes=False) == "4 records of aborted transactions were processed"
    assert verdict(classes | {"lost_by_brokers": 1}).endswith("; also 4 aborted records read")
    assert is_metric("aborted_read") and is_metric("key_reordered")
    assert metric_words("aborted_read").seen.format(n=4) == "4 records of aborted transactions were processed"


def test_failed_sends_read_by_reason() -> None:
    assert failed_reasons({ABORTED: 7, TIMED_OUT: 412, "(no error logged)": 2}) == (
        "412 delivery timeout (_MSG_TIMED_OUT), 7 transaction aborted (ABORTED), 2 (no error logged)")


def test_the_results_pane_and_the_report_text_say_why_sends_failed(tmp_path: Path) -> None:
    classes = dict.fromkeys(CLASSES, 0) | {"aborted_read": 3, "lost_by_brokers": None, "missed_by_consumers": None}
    report = make_report(classes)
    report.failed_by_reason = {TIMED_OUT: 412, ABORTED: 5}
    said = "412 delivery timeout (_MSG_TIMED_OUT), 5 transaction aborted (ABORTED)"
    view = report_view(RunResult("txn", tmp_path, Outcome.PASSED, report=report, verdict=report.verdict))
    assert view is not None and view.failed == said and view.totals["aborted_read"] == 3
    console = Console(record=True, width=200)
    report.print(console)
    text = " ".join(console.export_text().split())
    assert f"failed sends: {said}" in text and "aborted read" in text  # its column, as it counts
    report.classes["aborted_read"] = 0
    assert "aborted" not in " ".join(report.grid().headings)  # no column of zeros for a run without transactions
