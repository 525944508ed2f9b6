"""The report model, verdict and table, without Spark."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from kafkalab.analysis.inputs import InputFile, check_file, is_malformed
from kafkalab.analysis.job import CLASSES, TOTALS, Sample
from kafkalab.analysis.report import PartitionRow, Report, SparkRun
from kafkalab.analysis.verdict import CLEAN, verdict
from kafkalab.logformat import PRODUCER_COLUMNS


def make_report(classes: dict[str, int | None], audit: bool = False) -> Report:
    counts = {**dict.fromkeys(TOTALS, 10), **classes}
    row = PartitionRow("t", 0, counts, leader_changes=2)
    return Report(run="r1", totals=dict.fromkeys(TOTALS, 10), classes=classes, per_partition=[row],
                  samples={"lost": [Sample("r1:p:3", "t", 0, -1)]}, verdict=verdict(classes),
                  inputs=[InputFile(Path("p.csv"), "producer", 100, malformed=2, malformed_lines=[4, 9])],
                  elapsed_s=1.25, spark=SparkRun("local[2]", "4.3.0", 0, 2), audit=audit)


def test_verdict_names_the_most_serious_lesson_first() -> None:
    classes = dict.fromkeys(CLASSES, 0) | {"lost": 1204, "lost_by_brokers": 1204, "duplicated": 3}
    line = verdict(classes)
    assert line.startswith("1,204 acknowledged records never reached the log")
    assert line.endswith("; also 3 duplicated")
    assert "lost," not in line  # the split says it better than the total
    assert verdict(dict.fromkeys(CLASSES, 0)) == CLEAN
    no_audit = dict.fromkeys(CLASSES, 0) | {"lost": 5, "lost_by_brokers": None, "missed_by_consumers": None}
    assert verdict(no_audit).startswith("5 acknowledged records were never processed (give an audit log")


def test_a_loss_under_acks_all_is_not_blamed_on_acks_0_or_1() -> None:
    classes = dict.fromkeys(CLASSES, 0) | {"lost": 2930, "lost_by_brokers": 2930}
    assert "(acks=0, or acks=1 losing its leader)" in verdict(classes, acks="1")
    line = verdict(classes, acks="all")
    assert line.startswith("2,930 acknowledged records never reached the log with acks=all: a leader alone in its ISR")
    assert "acks=0" not in line and "min.insync.replicas=2" in line and "unclean" in line
    assert verdict(classes, acks="all", causes=False) == "2,930 acknowledged records never reached the log"


def test_a_duplicate_verdict_names_both_ways_a_retry_escapes_deduplication() -> None:
    line = verdict(dict.fromkeys(CLASSES, 0) | {"duplicated": 1})
    assert line.startswith("1 messages were written more than once")
    assert "without idempotence" in line and "bumped its epoch" in line  # an idempotent producer's epoch bump too


def test_verdict_names_typed_records_for_what_they_are() -> None:
    clean = dict.fromkeys(CLASSES, 0)
    assert verdict(clean, 300, typed=3) == (f"{CLEAN}; 3 records typed by hand (no message id): received, "
                                           "not part of the producer's audit")
    line = verdict(clean | {"unexpected": 2}, 300, typed=1)
    assert line.startswith("2 processed records were not sent by this run")
    assert line.endswith("; 1 records typed by hand (no message id): received, not part of the producer's audit")


def test_json_keys_and_fail_on() -> None:
    classes = dict.fromkeys(CLASSES, 0) | {"lost_by_brokers": None, "missed_by_consumers": None, "duplicated": 2}
    data = json.loads(json.dumps(make_report(classes).to_json()))
    assert {*CLASSES, "per_partition", "samples", "verdict", "inputs", "elapsed_s", "totals"} <= set(data)
    assert data["lost_by_brokers"] is None and data["duplicated"] == 2
    assert data["per_partition"][0]["leader_changes"] == 2
    assert data["inputs"]["files"][0]["malformed_lines"] == [4, 9] and data["inputs"]["malformed"] == 2
    assert data["spark"] == {"master": "local[2]", "version": "4.3.0", "executors": 0, "cores": 2}
    assert data["inputs"]["spark_master"] == "local[2]"
    report = make_report(classes)
    assert report.nonzero(["lost", "duplicated", "malformed"]) == ["duplicated", "malformed"]


def test_a_report_read_back_from_its_json_is_the_report_written() -> None:
    classes = dict.fromkeys(CLASSES, 0) | {"lost_by_brokers": None, "missed_by_consumers": None, "duplicated": 2}
    written = json.loads(json.dumps(make_report(classes).to_json()))
    back = Report.from_json(written)
    assert back.to_json() == written
    assert back.per_partition[0].leader_changes == 2 and back.samples["lost"][0].offset == -1
    assert back.spark == SparkRun("local[2]", "4.3.0", 0, 2) and back.malformed == 2
    assert back.nonzero(["lost", "duplicated", "malformed"]) == ["duplicated", "malformed"]
    recorded = Path(__file__).parent / "recorded" / "leader-failover" / "report.json"
    old = json.loads(recorded.read_text(encoding="utf-8"))  # written before reports named Spark's version
    again = Report.from_json(old).to_json()
    assert {k: again[k] for k in old if k != "inputs"} == {k: v for k, v in old.items() if k != "inputs"}
    assert again["inputs"]["files"] == old["inputs"]["files"]


def test_table_shows_partitions_totals_and_missing_audit_columns() -> None:
    console = Console(record=True, width=160)
    report = make_report(dict.fromkeys(CLASSES, 0) | {"lost": 7}, audit=True)
    report.print(console)
    text = console.export_text()
    assert "run r1 · topic t" in text and "all" in text and "leader" in text  # one topic: named once, above
    assert "lost by" in text and report.verdict in text  # below the table, no longer its caption
    two = make_report(dict.fromkeys(CLASSES, 0))
    two.per_partition.append(PartitionRow("u", 1, dict(two.per_partition[0].counts)))
    assert [row[0] for row in two.grid().rows] == ["t-0", "u-1"] and two.grid().topic is None  # two: on each row
    assert "brokers" in text  # the audit split has its columns
    assert "p.csv: 2 malformed line(s), skipped: 4, 9" in text
    assert "on local[2] (Spark 4.3.0, in the driver, 2 cores)" in text


def test_a_cluster_run_names_its_executors_and_cores() -> None:
    run = SparkRun("spark://10.0.0.5:7077", "4.3.0", 1, 1)
    assert run.describe() == "spark://10.0.0.5:7077 (Spark 4.3.0, 1 executor, 1 core)"
    assert SparkRun("yarn", "4.3.0", 4, 16).describe() == "yarn (Spark 4.3.0, 4 executors, 16 cores)"


def test_header_and_line_checks(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(",".join(PRODUCER_COLUMNS) + "\n")
    assert check_file(InputFile(path, "producer", 0)).size_bytes > 0
    assert not is_malformed("producer", "r1:p:0,0,t,0,5,k,acked,,0,\"a, b\"")
    assert is_malformed("producer", "r1:p:0,0,t,0,5,k,sent,,0,v")  # not a status of the contract
    assert is_malformed("producer", "r1:p,0,t,0,5,k,acked,,0,v")  # not run:producer:seq
    assert is_malformed("consumer", "r1:p:0,c,t,0,,k,0,0,v,g")  # no offset
    assert not is_malformed("consumer", ",c,t,0,3,k,,,v,g")  # no message id is a record, just unexpected
