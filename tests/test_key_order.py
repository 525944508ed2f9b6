"""Per-key order across partitions (key_reordered) and failed sends by the producer's error, on generated runs
whose topic grew mid-stream: counts known by construction, two seeds, through `kafkalab diff` (real Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafkalab.analysis.content_job import unknown_classes
from kafkalab.analysis.inputs import InputFile
from kafkalab.analysis.job import CLASSES, Identity, Sample
from kafkalab.analysis.report import Report
from kafkalab.analysis.verdict import CLEAN, verdict
from kafkalab.feeds.lab_source import sample_line
from kafkalab.logformat import MAX_BLOCK_TIMED_OUT, LogFormat, parse_msg_id
from tests.analysis_fixtures import spark_fixture  # noqa: F401 - the shared `spark` fixture
from tests.analysis_reference import assert_matches_reference
from tests.analysis_scenarios import RUN, TIMED_OUT, write_key_moves

KEY_ORDER = "records of {k} keys were processed after a newer record of the same key"
TIMED_OUT_CLAUSE = ("{n} records failed in the producer after its delivery timeout (delivery.timeout.ms): the "
                    "cluster did not lose them; the app must handle the failure or they are gone")


@pytest.mark.spark
@pytest.mark.parametrize("seed", [12, 21])
def test_keys_moved_by_added_partitions_are_counted_as_built(spark: object, tmp_path: Path, seed: int,
                                                             capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.cli import main

    monkeypatch.setenv("COLUMNS", "200")  # the table in one piece, its headings unwrapped

    built = write_key_moves(seed, tmp_path / "logs")
    w = built.written
    out = tmp_path / "report.json"
    assert main(["diff", "--producer", *map(str, w.producer_logs), "--consumer", *map(str, w.consumer_logs),
                 "--audit", *map(str, w.audit_logs), "--spark-master", "local[2]", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    report = Report.from_json(json.loads(out.read_text()))
    assert_matches_reference(report, w.producer_logs, w.consumer_logs, w.audit_logs, RUN)

    # what was built: the backlog of the moved keys, once each though two groups processed it so
    assert built.key_reordered > 0 and built.keys <= built.moved
    assert report.classes["key_reordered"] == built.key_reordered
    assert report.key_reordered_keys == len(built.keys)
    assert report.classes["reordered"] == 0  # each partition was processed in its order
    assert (report.classes["redelivered"], report.classes["recovered"]) == (built.redelivered, built.recovered)
    assert report.classes["lost"] == report.classes["duplicated"] == 0
    # its records on the old partitions, each after a newer record of its key on a new one
    assert {row.partition for row in report.per_partition if row.counts["key_reordered"]} <= set(range(built.old))
    samples = report.samples["key_reordered"]
    assert len({s.key for s in samples[:len(built.keys)]}) == min(len(built.keys), len(samples))  # keys first
    for s in samples:
        after = built.producer_rows[s.after_msg_id or ""]
        assert s.key in built.keys and after[5] == s.key == built.producer_rows[s.msg_id or ""][5]
        assert parse_msg_id(s.after_msg_id or "").seq > parse_msg_id(s.msg_id or "").seq
        assert s.partition < built.old <= (s.after_partition or 0) == after[3]

    # the failed sends by reason, the timed-out ones named in the verdict, apart from what the cluster lost
    assert report.failed_by_reason == dict(built.failed_by_reason)
    assert report.totals["failed"] == built.failed_by_reason.total()
    timed_out = built.failed_by_reason[TIMED_OUT]
    assert timed_out > 0
    n, k = f"{report.classes['key_reordered']:,}", f"{len(built.keys):,}"
    assert report.verdict.startswith(f"{n} {KEY_ORDER.format(k=k)} (keys move when partitions are added: order holds "
                                     "per partition only); also ")
    assert report.verdict.endswith(f"; {TIMED_OUT_CLAUSE.format(n=timed_out)}")

    # the text: the column, a sample naming its key and the pair, the failed sends by reason
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("part "))  # its words wrap: "key" over "ord."
    assert lines[header].split()[-4:] == ["reord.", "ord.", "recov.", "unexp."] and "key" in lines[header - 1].split()
    flat = " ".join(text.split())
    first = samples[0]
    assert (f"key_reordered: key {first.key}: {first.msg_id} @t1-{first.partition}:{first.offset} after "
            f"{first.after_msg_id} @t1-{first.after_partition}:{first.after_offset}") in flat
    assert "failed sends: " in flat and f"{timed_out} delivery timeout ({TIMED_OUT})" in flat


def test_a_run_whose_only_trouble_is_timed_out_sends_says_so_not_no_anomaly() -> None:
    clean = dict.fromkeys(CLASSES, 0)
    line = verdict(clean, 900, failed_by_reason={TIMED_OUT: 40, "_PURGE_QUEUE": 2})
    assert line == TIMED_OUT_CLAUSE.format(n=40)
    assert verdict(clean, 900, failed_by_reason={TIMED_OUT: 40}, causes=False) == \
        "40 records failed in the producer after its delivery timeout (delivery.timeout.ms)"
    assert verdict(clean, 900, failed_by_reason={"_PURGE_QUEUE": 2}) == CLEAN  # not a timeout: the app stopped it


def test_sends_that_blocked_past_max_block_are_named_in_the_verdict() -> None:
    """send-blocks: 7,000 records failed MAX_BLOCK_TIMED_OUT, and the verdict said "no anomaly"."""
    clean = dict.fromkeys(CLASSES, 0)
    blocked = "7,000 records were never sent: send() blocked past max.block.ms, its buffer full"
    assert verdict(clean, 900, failed_by_reason={MAX_BLOCK_TIMED_OUT: 7000}, causes=False) == blocked
    both = verdict(clean | {"duplicated": 3}, 900, failed_by_reason={TIMED_OUT: 40, MAX_BLOCK_TIMED_OUT: 7000})
    assert both.endswith(f"; {TIMED_OUT_CLAUSE.format(n=40)}; {blocked}: the cluster did not lose them; the app "
                         "must handle send()'s exception or they are gone")


def test_key_order_verdict_counts_keys_when_known_and_is_short_after_another_finding() -> None:
    classes = dict.fromkeys(CLASSES, 0) | {"key_reordered": 12}
    assert verdict(classes, key_reordered_keys=3) == (
        "12 records of 3 keys were processed after a newer record of the same key (keys move when partitions are "
        "added: order holds per partition only)")
    assert verdict(classes, causes=False).startswith("12 records were processed after a newer record of the same key")
    assert verdict(classes | {"duplicated": 2}).endswith("; also 12 out of their key's order")


def test_a_key_order_sample_names_the_key_and_the_pair_and_reads_back() -> None:
    sample = Sample(f"{RUN}:p1:3", "t1", 0, 12, key="7", after_msg_id=f"{RUN}:p1:9", after_partition=3, after_offset=1)
    assert sample.describe() == f"key 7: {RUN}:p1:3 @t1-0:12 after {RUN}:p1:9 @t1-3:1"
    assert Sample(**sample.to_json()) == sample
    assert set(Sample("r1:p:1", "t", 0, 1).to_json()) == {"msg_id", "topic", "partition", "offset"}
    assert sample_line(sample) == f"t1/0 @ offset 12  {RUN}:p1:3  key 7, after {RUN}:p1:9 at t1/3 @ offset 1"


def test_logs_without_sequence_numbers_cannot_tell_key_order() -> None:
    course = [InputFile(Path("payload.log"), "producer", 10, format=LogFormat.COURSE)]
    assert {"reordered", "key_reordered"} <= unknown_classes(Identity.CONTENT, True, course)
    assert "key_reordered" not in unknown_classes(Identity.MESSAGE_ID, True, course)
    assert "key_reordered" not in Identity.CONTENT.classes() and "key_reordered" in Identity.MESSAGE_ID.classes()
