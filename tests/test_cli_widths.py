"""The command line's tables at 80 and 100 columns, through the real `kafkalab` command (COLUMNS set, as a terminal
of that width does): no line wider than the terminal, and no name or number cut to "…"."""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from rich.console import Console

from kafkalab.analysis.report import Report
from kafkalab.cli import build_parser
from kafkalab.cli.diff_cmd import report_tables
from kafkalab.cli.fix_cmds import print_grade
from kafkalab.cli.lab_cmds import print_result
from kafkalab.cluster import Cluster
from kafkalab.cluster.process import marked_processes
from kafkalab.labs import catalog, load_lab
from kafkalab.labs.grade import Grade, GradeOutcome, GradeRow
from kafkalab.labs.results import ExpectationResult, Outcome, RunResult
from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS
from tests.conftest import TEST_STATE_ROOT
from tests.helpers import wait_until

WIDTHS = (80, 100)
TOPIC = "orders-ledger-topic"  # longer than the 'test…' the issue saw cut
CUT = re.compile(r"\S…")  # an ellipsis glued to a word: a name or number cut (a list's " …" says "and more")


def kafkalab(width: int, *args: str, timeout: float = 600) -> str:
    result = subprocess.run([sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True,
                            timeout=timeout, env={**os.environ, "COLUMNS": str(width)})
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def assert_fits(out: str, width: int) -> None:
    wide = [line for line in out.splitlines() if len(line) > width]
    assert not wide, f"{len(wide)} lines wider than {width}:\n" + "\n".join(wide)
    assert not CUT.search(out), out


def cells(out: str) -> set[str]:
    """Every cell of the tables: runs of text two or more spaces (or a box's vertical lines) apart."""
    return {cell for line in out.splitlines() for cell in re.split(r"\s{2,}", re.sub("[│┃]", "  ", line).strip())
            if cell}


# ---- kafkalab diff ---------------------------------------------------------------------------------------
def write_run(run: Path, records: int = 15_000, partitions: int = 6) -> None:
    """A run's payload logs written by hand: 7 acknowledged records never consumed, 3 of them not in the topic."""
    def log(name: str, columns: tuple[str, ...], rows: list[tuple[object, ...]]) -> None:
        with (run / name).open("w", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows(rows)

    run.mkdir(parents=True)
    offsets = [seq // partitions for seq in range(records)]
    log("producer-1.csv", PRODUCER_COLUMNS, [(f"r1:producer-1:{s}", s, TOPIC, s % partitions, offsets[s], f"k{s}",
                                             "acked", "", 1_700_000_000_000 + s, f"v{s}") for s in range(records)])
    log("consumer-1.csv", CONSUMER_COLUMNS, [(f"r1:producer-1:{s}", "consumer-1", TOPIC, s % partitions, offsets[s],
                                             f"k{s}", 0, 1_700_000_000_000 + s, f"v{s}", "g")
                                            for s in range(records - 7)])
    log("audit-1.csv", CONSUMER_COLUMNS, [(f"r1:producer-1:{s}", "audit", TOPIC, s % partitions, offsets[s], f"k{s}",
                                          0, 1_700_000_000_000 + s, f"v{s}", "") for s in range(records - 3)])


@pytest.mark.spark
def test_diff_fits_80_and_100_columns(tmp_path: Path) -> None:
    """The real command at 80 columns; at 100, its report printed as cmd_diff prints it (one Spark job, not two:
    the job does not depend on the width)."""
    run = tmp_path / "run"
    write_run(run)
    first = kafkalab(WIDTHS[0], "diff", "--producer", str(run / "producer-1.csv"), "--consumer",
                     str(run / "consumer-1.csv"), "--audit", str(run / "audit-1.csv"), "--json", str(run / "r.json"))
    report = Report.from_json(json.loads((run / "r.json").read_text()))
    for width in WIDTHS:
        if width == WIDTHS[0]:
            out = first.split("report written to")[0]
        else:
            buffer = io.StringIO()
            report.print(Console(width=width, file=buffer, highlight=False), report_tables(report, width))
            out = buffer.getvalue()
        assert_fits(out, width)
        assert f"run r1 · topic {TOPIC}" in out  # the topic once, above the table
        found = cells(out)
        assert {"15,000", "14,993", "7", "3", "4"} <= found, out  # the totals whole
        assert {"sent", "acked", "lost", "dupl."} <= found
        assert "3 acknowledged records never reached the log" in out


# ---- kafkalab labs, grades, the grade card ---------------------------------------------------------------
@pytest.mark.parametrize("width", WIDTHS)
def test_labs_fits(width: int) -> None:
    out = kafkalab(width, "labs")
    assert_fits(out, width)
    found = cells(out)
    assert {load_lab(path).id for path in catalog()} <= found  # every id whole, as `run` takes it


def a_grade(who: str, lab: str, passed: bool) -> Grade:
    row = GradeRow("acknowledged records lost by the brokers == 0", passed, 0 if passed else 1_234_567, 0,
                   2 if passed else 0, 2)
    return Grade(lab_id=lab, who=who, changes=["producer.acks=all"], rows=[row], rules=[], hints_taken=1,
                 hint_cost=10, score=90 if passed else 0,
                 outcome=GradeOutcome.FIXED if passed else GradeOutcome.NOT_FIXED, runs=["r1", "r2"], seeds=[1, 2],
                 duration_s=4000.0, time_on_task_s=12_345.0, given_up=False, finished_at=1_700_000_000.0)


@pytest.mark.parametrize("width", WIDTHS)
def test_grades_fits(tmp_path: Path, width: int) -> None:
    labs = ["orders-stall-during-maintenance", "consumer-receives-nothing", "min-isr-rf3"]
    for i, lab in enumerate(labs):
        folder = tmp_path / f"laptop-{i}"
        folder.mkdir()
        a_grade(f"Ada Augusta King, Countess of Lovelace {i}", lab, i % 2 == 0).write(folder)
    out = kafkalab(width, "grades", str(tmp_path))
    assert_fits(out, width)
    assert set(labs) <= cells(out) and "1h06m40s" not in out  # ids whole
    assert "12345" not in out and "PASS" in out and "FAIL" in out


@pytest.mark.parametrize("width", WIDTHS)
def test_grade_card_fits(width: int) -> None:
    console = Console(width=width, record=True, force_terminal=False)
    print_grade(console, a_grade("Ada Augusta King, Countess of Lovelace", "orders-stall-during-maintenance", False))
    out = console.export_text()
    assert_fits(out, width)
    assert {"FAIL", "1234567", "0/2 runs"} <= cells(out), out


# ---- kafkalab cluster status -----------------------------------------------------------------------------
@pytest.mark.cluster
def test_cluster_status_fits_80_and_100_columns() -> None:
    """Two brokers, a topic on both, broker 2 killed: every partition under-replicated, each node's detail said."""
    state = TEST_STATE_ROOT / "cli-widths"
    target = ["--state-dir", str(state)]
    try:
        kafkalab(100, "cluster", "up", "--detach", "--brokers", "2", "--free-ports", *target)
        kafkalab(100, "topic", "create", TOPIC, "--partitions", "3", "--replication-factor", "2", *target)
        kafkalab(100, "broker", "kill", "2", "--wait", *target)

        def shrunk() -> list[dict[str, object]] | None:  # the controller notices the kill a few seconds later
            status = json.loads(kafkalab(100, "cluster", "status", "--json", *target))
            statuses = {p["status"] for p in status["snapshot"]["partitions"]}
            return status["nodes"] if statuses == {"under-replicated"} else None

        nodes = wait_until(shrunk, 90, interval=1.0, what="every partition under-replicated")
        for width in WIDTHS:
            out = kafkalab(width, "cluster", "status", *target)
            assert_fits(out, width)
            found = cells(out)
            assert f"topic {TOPIC}" in out and "under-replicated" in found, out
            for node in nodes:  # each name whole at the start of its row, its port whole
                assert any(cell.split()[0] == node["name"] for cell in found) and str(node["port"]) in found, out
            assert "ready in" in out and "killed" in out, out  # the detail column's words, not "re…"
    finally:
        subprocess.run([sys.executable, "-m", "kafkalab", "cluster", "down", *target], capture_output=True,
                       timeout=120)
    assert not marked_processes(state)


# ---- kafkalab group describe ----------------------------------------------------------------------------
@pytest.mark.cluster
def test_group_describe_fits_80_and_100_columns(cluster: Cluster, topic_factory: Callable[..., str]) -> None:
    """Two plain consumers (a client id, a 36-character UUID: member ids of 46) holding 3 partitions each,
    offsets committed: kafka-consumer-groups.sh's layout took about 150 columns."""
    topic = topic_factory(partitions=6)
    group = f"{topic}-g"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(1200):
        producer.produce(topic, key=f"k{i}", value=f"v{i}")
    assert producer.flush(30) == 0
    members: list[Consumer] = []
    try:
        for _ in range(2):
            consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": "plain-app",
                                 "auto.offset.reset": "earliest", "enable.auto.commit": False})
            consumer.subscribe([topic])
            members.append(consumer)

        def settled() -> dict[str, object] | None:  # both members in, each partition held, offsets committed
            for consumer in members:
                consumer.consume(100, 0.2)
                with contextlib.suppress(KafkaException):  # nothing read yet to commit
                    consumer.commit(asynchronous=False)
            asked = subprocess.run([sys.executable, "-m", "kafkalab", "group", "describe", group, "--json",
                                    "--bootstrap", cluster.bootstrap], capture_output=True, text=True, timeout=60)
            if asked.returncode != 0:  # the group does not exist before its first member joins
                return None
            desc = json.loads(asked.stdout)
            committed = [p for p in desc["partitions"] if p["current_offset"] is not None]
            held = {p["consumer_id"] for p in committed}
            return desc if desc["state"] == "Stable" and len(held) == 2 and len(committed) == 6 else None

        desc = wait_until(settled, 90, interval=0.5, what="two members holding and committing every partition")
        ids = {p["consumer_id"] for p in desc["partitions"]}  # type: ignore[attr-defined]
        for width in WIDTHS:
            out = kafkalab(width, "group", "describe", group, "--bootstrap", cluster.bootstrap)
            assert_fits(out, width)
            assert f"topic {topic}" in out and f"GROUP {group}" in out
            found = cells(out)
            for p in desc["partitions"]:  # type: ignore[index]
                row = f"{p['partition']}  {p['current_offset']}  {p['log_end_offset']}  {p['lag']}"
                assert any(re.sub(r"\s+", "  ", line.strip()).startswith(row) for line in out.splitlines()), out
                assert p["consumer_id"].split("-")[2] in found, out  # the UUID's first 8 characters, said above
            assert "plain-app" in found and "MEMBER: the first 8 characters" in out

            out = kafkalab(width, "group", "describe", group, "--members", "--bootstrap", cluster.bootstrap)
            assert_fits(out, width)
            assert ids <= cells(out), out  # whole member ids
            assert f"{topic}:0,1,2" in cells(out) and "#PARTITIONS" in out
    finally:
        for consumer in members:
            consumer.close()


# ---- the table a headless run prints at its end ----------------------------------------------------------
@pytest.mark.parametrize("width", WIDTHS)
def test_run_result_fits(width: int, tmp_path: Path) -> None:
    """Its numbers whole (Rich's default table with `:g` showed 1234567 as 1.23457e+06), the words wrapped."""
    words = ("acknowledged records that no consumer in the group ever received, although the audit consumer "
             "found them in the topic after the run")
    result = RunResult("orders-stall-during-maintenance", tmp_path, Outcome.FAILED,
                       expectations=[ExpectationResult(words, False, 1234567, 0),
                                     ExpectationResult("records lost == 0", True, 0, 0)],
                       checks=[ExpectationResult("under-replicated partitions >= 1", True, 6, 1, at=12.5)])
    console = Console(width=width, record=True, force_terminal=False)
    print_result(console, result)
    out = console.export_text()
    assert_fits(out, width)
    assert {"1234567", "did not hold", "held", "6"} <= cells(out), out
    assert "orders-stall-during-maintenance: " in out and "check at 12.5s: under-replicated" in " ".join(out.split())


def _parsers(parser: argparse.ArgumentParser, path: str = "kafkalab") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_commands_help_prints_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kafkalab tail --help` died on a `%` in a help text: every command's help must format, and fit."""
    monkeypatch.setenv("COLUMNS", "80")
    seen = 0
    for path, parser in _parsers(build_parser()):
        text = parser.format_help()
        assert all(len(line) <= 80 for line in text.splitlines()), f"{path} --help is wider than 80 columns"
        seen += 1
    assert seen > 30  # kafkalab, its commands and their subcommands
