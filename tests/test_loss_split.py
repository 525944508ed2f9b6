"""Lost against missed: where an audit told them apart, Results, the grade card and the verdict all name which of
the two "lost" was, from the same numbers (Results once said `lost 2,000`, the card `FAIL lost == 0 seen 2000`,
while the lab's walkthrough said lost by the brokers 0, missed by the consumers everything)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from kafkalab.analysis.report import Report, loss_split
from kafkalab.analysis.verdict import verdict
from kafkalab.cli.fix_cmds import print_grade
from kafkalab.feeds.lab_source import report_view
from kafkalab.labs import load_lab
from kafkalab.labs.fix import parse_changes
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.results import ExpectationResult, FaultState, FaultStatus, Outcome, RunResult
from kafkalab.ui.results import partition_table
from tests.test_fix_core import lab_file

AUDITED = {"lost": 2000, "lost_by_brokers": 0, "missed_by_consumers": 2000, "duplicated": 0}
SAID = "2,000 never processed: 0 lost by the brokers, 2,000 in the topic but missed by the consumers"


def test_the_split_is_said_only_where_an_audit_told_them_apart() -> None:
    assert loss_split(AUDITED) == SAID
    assert loss_split({"lost": 2000, "lost_by_brokers": None, "missed_by_consumers": None}) == ""  # no audit
    assert loss_split({**AUDITED, "lost": 0}) == ""
    assert SAID.split(": ", 1)[1] in verdict(AUDITED, acknowledged=2000, consumed=0)  # the verdict names the two


def audited_run(run_dir: Path) -> RunResult:
    report = Report(run=None, totals={"acknowledged": 2000, "consumed_rows": 0}, classes=dict(AUDITED),
                    per_partition=[], samples={}, verdict="v", inputs=[], elapsed_s=0.0)
    r = RunResult("demo", run_dir, Outcome.FAILED, report=report, seed=1, verdict="v",
                  metrics={k: float(v) for k, v in AUDITED.items()},
                  expectations=[ExpectationResult("lost == 0", False, 2000.0, 0.0)])
    r.faults = [FaultStatus(0, "kill", FaultState.FIRED)]
    return r


def test_results_and_the_card_say_the_same_split(tmp_path: Path) -> None:
    run = audited_run(tmp_path)
    assert report_view(run) is not None and report_view(run).loss == SAID  # type: ignore[union-attr]
    g = FixAttempt(load_lab(lab_file(tmp_path)), parse_changes(3, ["producer.acks=all"]), "ann", runs=1).grade([run])
    assert g.loss == SAID
    console = Console(width=200, record=True)
    print_grade(console, g)
    assert SAID in console.export_text()
    # the per-partition table shows both kinds whenever records were lost: "lost by brokers 0" is the point
    table = partition_table({"0": {"lost": 2000, "lost_by_brokers": 0, "missed_by_consumers": 2000}})
    heads = [str(c.header) for c in table.columns]
    assert "lost by brokers" in heads and "missed" in heads
