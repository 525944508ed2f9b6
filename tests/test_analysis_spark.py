"""The Spark classifier against the plain-Python reference, on generated runs with every class injected."""

from __future__ import annotations

import csv
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from kafkalab.analysis import WarmSession, analyze
from kafkalab.analysis.job import AUDIT_CLASSES, CLASSES, TOTALS, Identity, classify
from kafkalab.errors import KafkalabError
from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS, TYPED_MSG_ID
from tests.analysis_fixtures import spark_fixture  # noqa: F401 - the shared `spark` fixture
from tests.analysis_reference import assert_matches_reference
from tests.analysis_scenarios import RUN, Scenario, Send, scenarios, write_scenario

pytestmark = pytest.mark.spark


def check_against_reference(spark, written, audit: bool) -> None:
    report = analyze(written.producer_logs, written.consumer_logs, written.audit_logs, session=spark)
    bad = assert_matches_reference(report, written.producer_logs, written.consumer_logs, written.audit_logs, RUN)
    assert {f.kind: 0 for f in report.inputs} | {
        kind: sum(f.malformed for f in report.inputs if f.kind == kind) for kind in bad if bad[kind]
    } == {f.kind: bad[f.kind] for f in report.inputs}
    for f in report.inputs:
        assert f.malformed_lines == written.garbage_lines.get(f.path, [])
    for name in AUDIT_CLASSES:
        assert (report.classes[name] is None) == (not audit)
    return report


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(scenario=scenarios())
def test_spark_matches_reference_per_partition(spark, tmp_path_factory, scenario: Scenario) -> None:
    written = write_scenario(scenario, tmp_path_factory.mktemp("run"))
    report = check_against_reference(spark, written, scenario.audit)
    # and the reference finds what was injected
    inj = written.injected
    assert report.classes["lost"] == inj["missed"] + inj["broker_lost"] + inj["acks0_lost"]
    assert report.classes["duplicated"] == inj["duplicated"]
    assert report.classes["redelivered"] == inj["redelivered"]
    assert report.classes["recovered"] == inj["recovered_failed"] + (inj["recovered_unknown"] if scenario.audit else 0)
    assert report.classes["aborted_read"] == inj["aborted_read"]  # not recovered, nor the unread ones
    assert report.classes["unexpected"] == scenario.foreign_rows + scenario.no_id_rows
    assert report.totals["typed"] == scenario.typed_rows
    if scenario.audit:
        assert report.classes["missed_by_consumers"] == inj["missed"]
        assert report.classes["lost_by_brokers"] == inj["broker_lost"] + inj["acks0_lost"]


def test_every_class_at_once_with_samples(spark, tmp_path: Path) -> None:
    fates = ["ok", "missed", "broker_lost", "acks0_ok", "acks0_lost", "duplicated", "redelivered",
             "recovered_failed", "recovered_unknown", "failed", "unknown", "failed_no_partition", "aborted_read",
             "aborted_unread"]
    sends = [Send("p1", "t1", i % 2, fate) for i, fate in enumerate(fates * 3)]
    sends += [Send("p2", "t1", 0, "ok"), Send("p2", "t1", 0, "reordered")] * 2
    # key a's first record is on partition 1, which c1 reads after partition 0, where its second is: key_reordered
    sends += [Send("p2", "t1", 1, "ok", key="a"), Send("p2", "t1", 0, "ok", key="a")]
    written = write_scenario(Scenario(sends, second_group=True, foreign_rows=2, no_id_rows=1, typed_rows=3), tmp_path)
    report = check_against_reference(spark, written, audit=True)
    assert all(report.classes[name] > 0 for name in Identity.MESSAGE_ID.classes()), report.classes
    assert report.classes["consumed_twice"] is None  # message ids tell a redelivery from a duplicate
    assert report.totals["attempted"] == len(sends)
    assert set(report.samples) == set(Identity.MESSAGE_ID.classes())
    assert report.classes["key_reordered"] == report.key_reordered_keys == 1
    (sample,) = report.samples["key_reordered"]
    assert (sample.key, sample.msg_id, sample.partition, sample.after_msg_id, sample.after_partition) \
        == ("a", f"{RUN}:p2:4", 1, f"{RUN}:p2:5", 0)
    consumed = {row[0] for p in written.consumer_logs for row in csv.reader(p.open())}
    for sample in report.samples["lost"]:
        assert sample.msg_id is not None and sample.msg_id not in consumed
    assert any(s.msg_id is None for s in report.samples["unexpected"])  # the row without an id
    assert report.verdict.startswith(f"{report.classes['lost_by_brokers']} acknowledged records never reached")
    assert report.classes["unexpected"] == 3 and report.totals["typed"] == 3  # typed records are not unexpected
    assert all(s.msg_id != TYPED_MSG_ID for found in report.samples.values() for s in found)
    assert report.verdict.endswith("; 3 records typed by hand (no message id): received, not part of the "
                                   "producer's audit")


def test_typed_records_alone_are_no_anomaly(spark, tmp_path: Path) -> None:
    sends = [Send("p1", "t1", 0, "ok") for _ in range(4)]
    written = write_scenario(Scenario(sends, second_group=True, typed_rows=2, no_id_rows=1), tmp_path)
    report = analyze(written.producer_logs, written.consumer_logs, session=spark)
    assert report.totals["typed"] == 2  # two positions, each read by both groups
    assert report.classes["unexpected"] == 1  # the row without an id nobody typed
    assert report.verdict.startswith("1 processed records were not sent by this run")
    assert "2 records typed by hand (no message id)" in report.verdict


def test_separate_groups_each_reading_everything_is_not_redelivery(spark, tmp_path: Path) -> None:
    sends = [Send("p1", "t1", 0, "ok") for _ in range(5)]
    written = write_scenario(Scenario(sends, second_group=True), tmp_path)
    report = analyze(written.producer_logs, written.consumer_logs, session=spark)
    assert report.totals["consumed_rows"] == 10
    classes = [n for n in Identity.MESSAGE_ID.classes() if n not in AUDIT_CLASSES]
    assert {name: report.classes[name] for name in classes} == dict.fromkeys(classes, 0)
    assert report.verdict.startswith("no anomaly")


def test_leader_changes_show_per_partition(spark, tmp_path: Path) -> None:
    written = write_scenario(Scenario([Send("p1", "t1", p, "ok") for p in (0, 1)]), tmp_path)
    report = analyze(written.producer_logs, written.consumer_logs, session=spark,
                     leader_changes={("t1", 1): 3})
    assert [(r.partition, r.leader_changes) for r in report.per_partition] == [(0, 0), (1, 3)]
    assert report.to_json()["per_partition"][1]["leader_changes"] == 3


def test_json_has_the_stable_keys(spark, tmp_path: Path) -> None:
    written = write_scenario(Scenario([Send("p1", "t1", 0, "missed"), Send("p1", "t1", 0, "ok")]), tmp_path)
    data = analyze(written.producer_logs, written.consumer_logs, written.audit_logs, session=spark).to_json()
    for key in (*CLASSES, "per_partition", "samples", "verdict", "inputs", "elapsed_s", "totals"):
        assert key in data
    assert data["lost"] == data["missed_by_consumers"] == 1
    assert set(data["totals"]) == set(TOTALS)
    assert data["samples"]["lost"] == [{"msg_id": f"{RUN}:p1:0", "topic": "t1", "partition": 0, "offset": 0}]


def test_warm_session_is_reused(spark, tmp_path: Path) -> None:
    warm = WarmSession("local[2]").start()
    assert warm.get(timeout=300) is spark  # the process's one session, joined
    written = write_scenario(Scenario([Send("p1", "t1", 0, "ok")]), tmp_path)
    assert analyze(written.producer_logs, written.consumer_logs, session=warm).totals["consumed_rows"] == 1


def test_warm_session_warms_up_with_the_rows_and_shapes_asked_for(spark, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[object, ...]] = []
    monkeypatch.setattr("kafkalab.analysis.warmup.warm_up",
                        lambda session, rows, shapes, rounds, go_on: seen.append((session, rows, shapes, rounds,
                                                                                   go_on())))
    warm = WarmSession("local[2]", warmup_rows=1234, warmup_shapes=(True,), warmup_rounds=3)
    assert warm.start(go_on=lambda: False).get(timeout=300) is spark
    assert seen == [(spark, 1234, (True,), 3, False)]


def test_stop_cuts_a_warm_up_short_instead_of_waiting_for_its_rounds(spark, monkeypatch: pytest.MonkeyPatch) -> None:
    """A console quit while Spark still warms up: the warm-up's job is cancelled, not waited for (a quit on a
    busy machine waited minutes), and that is no failure to start."""
    from kafkalab.analysis import spark_session, warmup
    from kafkalab.analysis.job import ANALYSIS_JOB_GROUP

    running = threading.Event()

    def slow_warm_up(session, *_args) -> None:  # a pass that would take two minutes
        session.sparkContext.setJobGroup(ANALYSIS_JOB_GROUP, "warm-up", interruptOnCancel=True)
        running.set()
        session.sparkContext.parallelize(range(2), 2).foreach(lambda _: time.sleep(120))

    monkeypatch.setattr(warmup, "warm_up", slow_warm_up)
    monkeypatch.setattr(spark_session, "start_session", lambda *_args: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)  # the process's one session stays for the other tests
    warm = WarmSession("local[2]").start()
    assert running.wait(120)
    time.sleep(2)  # its tasks are sleeping
    began = time.monotonic()
    warm.stop()
    assert time.monotonic() - began < 30
    assert warm.ready  # ended, and no error recorded


def test_warm_up_runs_rounds_after_the_first_only_while_allowed(spark, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its generated logs are a real run's shape: the job finds exactly the losses (one by the brokers, one
    missed by the consumer), the duplicate and the redelivery planted, and no malformed line."""
    from kafkalab.analysis import warmup

    results = []
    monkeypatch.setattr(warmup, "classify", lambda *args: results.append(classify(*args)))
    allowed = iter([True, False])
    warmup.warm_up(spark, rows=300, shapes=(True, False), rounds=3, go_on=lambda: next(allowed))
    assert len(results) == 3  # the first round's two passes, then one more before go_on said no
    for result in results:
        totals = {k: sum(p.counts[k] for p in result.partitions) for k in ("lost", "duplicated", "redelivered")}
        assert totals == {"lost": 2, "duplicated": 1, "redelivered": 1}, totals  # lost by brokers, and missed
        assert not any(result.malformed.values()) and not result.foreign_runs


# bad input: one clear error, before or after Spark


def write_log(path: Path, columns: tuple[str, ...], rows: list[tuple]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def producer_row(msg_id: str, offset: int = 0) -> tuple:
    return (msg_id, 0, "t1", 0, offset, "k", "acked", "", 0, "v")


def test_missing_and_empty_files_are_refused(tmp_path: Path) -> None:
    good = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"producer log .*nope.csv does not exist"):
        analyze([tmp_path / "nope.csv"], [good])
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(KafkalabError, match=r"empty.csv is empty"):
        analyze([tmp_path / "empty.csv"], [good])


def test_a_header_not_of_the_contract_is_refused(tmp_path: Path) -> None:
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"does not start with the producer header"):
        analyze([consumer], [consumer])


def test_the_same_file_twice_is_refused(tmp_path: Path) -> None:
    producer = write_log(tmp_path / "p.csv", PRODUCER_COLUMNS, [producer_row("r1:p1:0")])
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"given twice"):
        analyze([producer, producer], [consumer])


def test_producer_logs_of_two_runs_are_refused_naming_them(tmp_path: Path) -> None:
    a = write_log(tmp_path / "a.csv", PRODUCER_COLUMNS, [producer_row("runA:p1:0")])
    b = write_log(tmp_path / "b.csv", PRODUCER_COLUMNS, [producer_row("runB:p2:0")])
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"different runs are mixed: runA .*, runB"):
        analyze([a, b], [consumer])


def test_one_file_mixing_runs_is_refused_after_the_job(spark, tmp_path: Path) -> None:
    mixed = write_log(tmp_path / "p.csv", PRODUCER_COLUMNS,
                      [producer_row("runA:p1:0"), producer_row("runA:p1:1", 1), producer_row("runB:p1:0", 2)])
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"different runs are mixed: runA, runB"):
        analyze([mixed], [consumer], session=spark)


def test_a_producer_log_given_under_two_names_is_refused(spark, tmp_path: Path) -> None:
    rows = [producer_row("r1:p1:0")]
    a = write_log(tmp_path / "a.csv", PRODUCER_COLUMNS, rows)
    b = write_log(tmp_path / "b.csv", PRODUCER_COLUMNS, rows)
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"1 message ids appear in more than one producer row"):
        analyze([a, b], [consumer], session=spark)


def test_malformed_lines_are_counted_with_file_and_line(spark, tmp_path: Path) -> None:
    producer = write_log(tmp_path / "p.csv", PRODUCER_COLUMNS, [producer_row("r1:p1:0"), producer_row("r1:p1:1", 1)])
    consumer = tmp_path / "c.csv"
    consumer.write_text(",".join(CONSUMER_COLUMNS) + "\n"
                        "r1:p1:0,c1,t1,0,0,k,0,0,v,g\n"
                        "this line is not a record\n"
                        "r1:p1:1,c1,t1,zero,1,k,0,0,v,g\n"
                        "r1:p1:1,c1,t1,0,1,k,0,0,v,g,one too many\n")
    report = analyze([producer], [consumer], session=spark)
    assert report.malformed == 3
    files = {f["kind"]: f for f in report.to_json()["inputs"]["files"]}
    assert files["consumer"]["malformed_lines"] == [3, 4, 5]
    assert files["producer"]["malformed"] == 0
    assert report.classes["lost"] == 1  # r1:p1:1 was only seen on malformed lines
    assert report.nonzero(["malformed", "duplicated"]) == ["malformed"]


def test_cli_diff_fail_on_and_json(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalab.cli import main

    written = write_scenario(Scenario([Send("p1", "t1", 0, "duplicated"), Send("p1", "t1", 0, "ok")]), tmp_path)
    args = ["diff", "--producer", *map(str, written.producer_logs), "--consumer", *map(str, written.consumer_logs),
            "--audit", *map(str, written.audit_logs), "--spark-master", "local[2]"]
    out = tmp_path / "report.json"
    assert main([*args, "--json", str(out), "--fail-on", "lost"]) == 0
    assert main([*args, "--fail-on", "lost,duplicated"]) == 1
    assert "failing on: duplicated" in capsys.readouterr().out
    import json

    assert json.loads(out.read_text())["duplicated"] == 1
    assert main([*args, "--fail-on", "nonsense"]) == 2
    assert "kafkalab: error: --fail-on: unknown class nonsense" in capsys.readouterr().err


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "kafkalab", "diff", "--producer", str(tmp_path / "missing.csv"),
         "--consumer", str(tmp_path / "missing2.csv")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert proc.stderr.startswith("kafkalab: error: producer log") and "does not exist" in proc.stderr
