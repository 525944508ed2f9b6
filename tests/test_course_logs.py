"""The course's payload logs (topic,partition,key,value, no header, values raw): read by the analysis and
`kafkalab diff`, records matched by content. Generated runs with known injected counts, checked against the
plain-Python reference (tests/analysis_reference.py) and against what was injected."""

from __future__ import annotations

import csv
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafkalab.analysis import analyze
from kafkalab.analysis.inputs import InputFile, check_file, locate_malformed
from kafkalab.analysis.job import Identity
from kafkalab.analysis.run_logs import run_logs
from kafkalab.errors import KafkalabError
from kafkalab.logformat import CONSUMER_COLUMNS, LogFormat
from tests.analysis_fixtures import spark_fixture  # noqa: F401 - the shared `spark` fixture
from tests.analysis_reference import course_reference

pytestmark = pytest.mark.spark

TOPIC = "t1"
# the course's quotes hold commas and quote marks, written raw
QUOTES = ('"Fall seven times, stand up eight." -- Japanese Proverb',
          '"I think the world is run by \'C\' students." -- Al McGuire',
          '"What makes the engine go? Desire, desire, desire." -- Stanley Kunitz, O Magazine, September 2003')
# fate -> (copies in the topic, times processed, logged by the producer)
FATES = {
    "ok": (1, 1, True),
    "missed": (1, 0, True),
    "broker_lost": (0, 0, True),
    "duplicated": (2, 2, True),
    "redelivered": (1, 2, True),
    "null_key_missed": (1, 0, True),  # key null: `null` in the course's logs, empty in kafkalab's audit
    "leftover": (1, 1, False),  # processed, sent by no producer of the run
}


@dataclass
class CourseRun:
    producer_logs: list[Path]
    consumer_logs: list[Path]
    audit_logs: list[Path]
    injected: Counter = field(default_factory=Counter)
    malformed: Counter = field(default_factory=Counter)


def write_course_run(out: Path, seed: int, sends: int = 60, unique: bool = True, csv_group: bool = False) -> CourseRun:
    """A run of one course producer (rolls of 20, keys restarting each roll) and two course consumers, plus
    kafkalab's audit. ``unique``: every value differs, so each fate is one identity; else values repeat.
    Always a half-written last producer line (a record processed, so `unexpected`), a consumer's cut last line
    (its record counts as missed) and a garbage line. ``csv_group``: a kafkalab consumer of a second group reads
    the whole topic, one record twice at one offset."""
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    topic: dict[int, list[tuple[str, str, int]]] = {0: [], 1: [], 2: []}  # partition -> (key, value, processed)
    producer: list[str] = []
    injected: Counter = Counter()
    for i in range(sends):
        fate = rng.choice(sorted(FATES))
        copies, times, logged = FATES[fate]
        partition = rng.randrange(3)
        key = "null" if fate == "null_key_missed" else str(i % 20)
        value = f"{QUOTES[i % 3]} #{i}" if unique else QUOTES[rng.randrange(3)]
        if fate == "leftover":
            value = f"leftover, from \"before\" #{i}" if unique else "leftover"
        injected[fate] += 1
        if logged:
            producer.append(f"{TOPIC},{partition},{key},{value}")
        for copy in range(copies):
            topic[partition].append((key, value, times // copies if copies > 1 else times if copy == 0 else 0))
    cut_value = f"{QUOTES[0]} cut"  # the crashed producer's last line: acknowledged, processed, logged in half
    topic[0].append(("7", cut_value, 1))
    missed_cut = f"{QUOTES[1]} cut"  # processed by the crashed consumer, its line cut short
    topic[1].append(("8", missed_cut, 0))
    producer.append(f"{TOPIC},1,8,{missed_cut}")
    topic[2].append(("", "quit", 0))  # a control record: obeyed, logged by nobody but the audit

    first, second, again, audit = [], [], [], []
    for partition, records in topic.items():
        for offset, (key, value, times) in enumerate(records):
            audit.append(("", "audit", TOPIC, partition, offset, "" if key == "null" else key, 0, 0, value, ""))
            line = f"{TOPIC},{partition},{key},{value}"
            target = first if partition < 2 else second
            target.extend([line] * min(times, 1))
            again.extend([line] * (times - 1))  # after a rebalance, read again
    second.extend(again)
    second.append("garbage,line")
    written = CourseRun([out / "producer" / "payload.log"], [out / "consumer-1" / "payload-1.log",
                                                             out / "consumer-2" / "payload-2.log"],
                        [out / "audit.csv"], injected, Counter(producer=1, consumer=2))
    _write_lines(written.producer_logs[0], producer, f"{TOPIC},0,7,{cut_value}"[:-3])
    _write_lines(written.consumer_logs[0], first, f"{TOPIC},1")
    _write_lines(written.consumer_logs[1], second, None)
    _write_csv(written.audit_logs[0], audit)
    if csv_group:
        rows = [(r[0], "c9", *r[2:9], "g2") for r in audit if r[8] != "quit"]
        written.consumer_logs.append(_write_csv(out / "consumer-c9.csv", [*rows, rows[0]]))
    return written


def _write_lines(path: Path, lines: list[str], cut: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines) + (cut or ""), encoding="utf-8")


def _write_csv(path: Path, rows: list[tuple]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(CONSUMER_COLUMNS)
        writer.writerows(rows)
    return path


def expected_by_fate(run: CourseRun, audit: bool) -> dict[str, int | None]:
    """What the injected fates are, read as the report's classes (identities unique)."""
    inj = run.injected
    missed = inj["missed"] + inj["null_key_missed"] + 1  # the consumer's cut line
    twice = inj["duplicated"] + inj["redelivered"]
    return {"lost": missed + inj["broker_lost"], "unexpected": inj["leftover"] + 1,  # + the producer's cut line
            "lost_by_brokers": inj["broker_lost"] if audit else None,
            "missed_by_consumers": missed if audit else None,
            "duplicated": inj["duplicated"] if audit else None, "redelivered": inj["redelivered"] if audit else None,
            "consumed_twice": None if audit else twice, "reordered": None, "key_reordered": None, "recovered": None,
            "aborted_read": None}


def malformed(report) -> dict[str, int]:
    found: Counter = Counter()
    for f in report.inputs:
        found[f.kind] += f.malformed
    return dict(+found)


def nonzero(counts: dict) -> Counter:
    return Counter({k: v for k, v in counts.items() if v})


@pytest.mark.parametrize("seed", [3, 11])
def test_course_logs_with_known_injections(spark, tmp_path: Path, seed: int) -> None:
    run = write_course_run(tmp_path, seed)
    assert all(run.injected[f] for f in FATES), run.injected  # every fate drawn
    for audit in (True, False):
        audits = run.audit_logs if audit else []
        report = analyze(run.producer_logs, run.consumer_logs, audits, session=spark)
        assert report.identity is Identity.CONTENT and report.run is None
        assert {k: report.classes[k] for k in expected_by_fate(run, audit)} == expected_by_fate(run, audit)
        assert report.totals["acknowledged"] == report.totals["attempted"] == sum(
            n for f, n in run.injected.items() if FATES[f][2]) + 1  # the consumer's cut record; the cut line is none
        expected, bad = course_reference(run.producer_logs, run.consumer_logs, audits)
        assert {k: nonzero(v) for k, v in expected.items() if nonzero(v)} == \
            {(r.topic, r.partition): nonzero(r.counts) for r in report.per_partition if nonzero(r.counts)}
        assert malformed(report) == dict(+Counter(bad)) == dict(run.malformed)
    cut = next(f for f in report.inputs if f.path == run.consumer_logs[0])
    assert cut.malformed_lines == [len(run.consumer_logs[0].read_text().splitlines())]  # the last line
    assert "records matched by topic, partition, key and value" in report.verdict
    assert report.verdict.startswith(f"{report.classes['lost']} acknowledged records were never processed")
    assert f"{report.classes['consumed_twice']} consumed twice" in report.verdict
    lost = report.samples["lost"]
    assert lost and all(s.msg_id is None and s.record and s.offset == -1 for s in lost)


@pytest.mark.parametrize("seed", [5, 8])
def test_repeated_values_and_a_second_group_match_the_reference(spark, tmp_path: Path, seed: int) -> None:
    """Repeated quotes collapse into shared identities: the counts are the multiset rules', as the reference
    computes them, not the fates'. A kafkalab consumer of another group brings offsets: its repeat at one
    offset is a redelivery even without an audit."""
    run = write_course_run(tmp_path, seed, sends=80, unique=False, csv_group=True)
    for audits in (run.audit_logs, []):
        report = analyze(run.producer_logs, run.consumer_logs, audits, session=spark)
        expected, bad = course_reference(run.producer_logs, run.consumer_logs, audits)
        assert {k: nonzero(v) for k, v in expected.items() if nonzero(v)} == \
            {(r.topic, r.partition): nonzero(r.counts) for r in report.per_partition if nonzero(r.counts)}
        assert malformed(report) == dict(+Counter(bad))
        assert (report.classes["redelivered"] or 0) >= 1  # the kafkalab consumer's repeat, told by its offset
    assert report.classes["duplicated"] is None and report.classes["consumed_twice"] is not None


def test_the_format_is_detected_per_file_and_a_tail_is_found(tmp_path: Path) -> None:
    course = tmp_path / "payload.log"
    course.write_text("t1,0,3,a, \"b\"\nt1,1,4,c")
    f = check_file(InputFile(course, "producer", 0))
    assert f.format is LogFormat.COURSE and f.tail == b"t1,1,4,c"
    locate_malformed([f])
    assert (f.malformed, f.malformed_lines) == (1, [2])  # whole-looking, but not known to be whole
    course.write_text("t1,0,3,a\r\n")
    assert check_file(InputFile(course, "producer", 0)).tail is None
    csv_log = _write_csv(tmp_path / "c.csv", [])
    assert check_file(InputFile(csv_log, "consumer", 0)).format is LogFormat.KAFKALAB
    with pytest.raises(KafkalabError, match="does not start with the consumer header"):
        check_file(InputFile(course, "consumer", 0), LogFormat.KAFKALAB)


def test_a_run_dir_lists_both_formats(tmp_path: Path) -> None:
    for name in ("producer-p1.csv", "consumer-c1.csv", "audit.csv", "producer/payload.log",
                 "consumer-1/payload-1.log", "consumer-2/payload.log", "consumer-2/other.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    (tmp_path / "consumer-3").mkdir()
    (tmp_path / "consumer-3" / "payload-3.log").write_text("")  # a consumer that got nothing: no record to read
    logs = run_logs(tmp_path)
    relative = [[str(p.relative_to(tmp_path)) for p in found] for found in (logs.producer, logs.consumer, logs.audit)]
    assert relative == [["producer-p1.csv", "producer/payload.log"],
                        ["consumer-c1.csv", "consumer-1/payload-1.log", "consumer-2/payload.log"], ["audit.csv"]]


def test_cli_diff_reads_course_logs_and_run_dirs(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalab.cli import main

    run = write_course_run(tmp_path / "run", 3)
    out = tmp_path / "report.json"
    assert main(["diff", str(tmp_path / "run"), "--spark-master", "local[2]", "--json", str(out),
                 "--fail-on", "duplicated"]) == 1
    text = capsys.readouterr().out
    assert "failing on: duplicated" in text and "records matched by topic, partition, key and value" in text
    import json

    data = json.loads(out.read_text())
    assert data["identity"] == "topic, partition, key, value" and data["duplicated"] == run.injected["duplicated"]
    assert {f.get("format", "kafkalab") for f in data["inputs"]["files"]} == {"course", "kafkalab"}
    # a first line no format knows: refused unless --format says course (it is then one malformed line)
    bad = tmp_path / "bad-first.log"
    bad.write_text("t1,oops\n" + run.producer_logs[0].read_text())
    args = ["diff", "--producer", str(bad), "--consumer", *map(str, run.consumer_logs), "--spark-master", "local[2]"]
    assert main(args) == 2
    assert "nor with a course record topic,partition,key,value" in capsys.readouterr().err
    assert main([*args, "--format", "course", "--json", "-"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert forced["inputs"]["malformed"] == 4 and forced["lost"] == expected_by_fate(run, False)["lost"]


def diff_error(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "kafkalab", "diff", *args], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkalab: error: "), result.stderr
    return lines[0]


def test_cli_bad_course_inputs_are_one_line(tmp_path: Path) -> None:
    good = tmp_path / "payload.log"
    good.write_text("t1,0,1,v\n")
    neither = tmp_path / "notes.txt"
    neither.write_text("some notes, not a log\n")
    line = diff_error("--producer", str(neither), "--consumer", str(good))
    assert f"producer log {neither} does not start with the producer header" in line and "--format" in line
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert f"consumer log {empty} is empty" in diff_error("--producer", str(good), "--consumer", str(empty))
    line = diff_error("--producer", str(tmp_path / "gone.log"), "--consumer", str(good), "--format", "course")
    assert "gone.log does not exist" in line
    line = diff_error("--producer", str(good), "--consumer", str(good), "--format", "kafkalab")
    assert "does not start with the producer header" in line
    (tmp_path / "run" / "producer").mkdir(parents=True)
    (tmp_path / "run" / "producer" / "payload.log").write_text("t1,0,1,v\n")
    assert "holds no consumer log" in diff_error(str(tmp_path / "run"))
    assert "run directory" in diff_error(str(tmp_path / "nowhere"))


def test_a_course_producer_and_a_kafkalab_consumer_that_logged_its_records_as_typed_match(
        spark, tmp_path: Path) -> None:
    """A foreign producer whose records kafkalab's consumer logs as typed by hand (`kafkalab type` stamps them so):
    the same records, matched by content; none lost, none unexpected."""
    producer = tmp_path / "producer" / "payload.log"
    producer.parent.mkdir()
    producer.write_text("".join(f"{TOPIC},{k % 3},{k},{QUOTES[k % 3]}\n" for k in range(9)))
    consumer = tmp_path / "consumer-1.csv"
    with consumer.open("w", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(CONSUMER_COLUMNS)
        for k in range(8):  # the last record never processed
            out.writerow(["typed", "consumer-1", TOPIC, k % 3, k // 3, k, 0, 0, QUOTES[k % 3], "g"])
    report = analyze([producer], [consumer], [], session=spark)
    assert report.identity == Identity.CONTENT
    assert (report.classes["lost"], report.classes["unexpected"], report.totals["distinct_consumed"]) == (1, 0, 8)
    assert report.totals["typed"] == 0  # each is a send's copy, not a record typed by hand
    assert "typed by hand" not in report.verdict
