"""Logs given as URIs and globs, checked and read through the session's Hadoop FileSystem (local mode:
the same FileSystem classes a cluster's driver uses), and the bad input they can be."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

from kafkalab.analysis import WarmSession, analyze
from kafkalab.analysis.hadoop_fs import is_uri
from kafkalab.errors import KafkalabError
from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS
from tests.analysis_fixtures import spark_fixture  # noqa: F401 - the shared `spark` fixture
from tests.analysis_scenarios import FATES, Scenario, Send, write_scenario
from tests.test_analysis_spark import write_log

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1800)]  # a fresh JVM's first jobs, on a loaded machine


def uri(path: Path) -> str:
    return f"file://{path}"


def test_what_counts_as_a_uri() -> None:
    assert is_uri("file:///runs/p.csv") and is_uri("hdfs://nn:8020/runs/p.csv") and is_uri("s3a://bucket/p*.csv")
    assert not is_uri("runs/p.csv") and not is_uri("/runs/p.csv") and not is_uri("C.csv")


def test_globbed_uris_give_the_report_of_the_paths(spark, tmp_path: Path) -> None:
    sends = [Send("p1", "t1", i % 2, fate) for i, fate in enumerate(sorted(FATES) * 2)]
    written = write_scenario(Scenario(sends, foreign_rows=1, garbage_in_consumer=2, garbage_in_producer=1), tmp_path)
    by_path = analyze(written.producer_logs, written.consumer_logs, written.audit_logs, session=spark).to_json()
    by_uri = analyze([uri(tmp_path) + "/producer-*.csv"], [uri(tmp_path) + "/consumer-{c1,c2,d1}.csv"],
                     [uri(written.audit_logs[0])], session=spark).to_json()
    for key in ("run", "lost", "duplicated", "reordered", "totals", "per_partition", "samples", "verdict"):
        assert by_uri[key] == by_path[key], key
    files = {Path(f["path"]).name: f for f in by_uri["inputs"]["files"]}
    given = [*written.producer_logs, *written.consumer_logs, *written.audit_logs]
    assert sorted(files) == sorted(p.name for p in given)
    assert all(f["path"].startswith("file:/") for f in files.values())
    # the malformed-line finder reads a URI's file through the FileSystem too
    for path, lines in written.garbage_lines.items():
        assert files[path.name]["malformed_lines"] == lines
    assert by_uri["inputs"]["malformed"] == by_path["inputs"]["malformed"] == 3


def test_a_missing_uri_is_refused(spark, tmp_path: Path) -> None:
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"^producer log file://.*/nope.csv does not exist; give the URI"):
        analyze([uri(tmp_path / "nope.csv")], [consumer], session=spark)


def test_a_uri_with_a_wrong_header_is_refused(spark, tmp_path: Path) -> None:
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"producer log file:/.*/c.csv does not start with the producer header"):
        analyze([uri(consumer)], [consumer], session=spark)


def test_an_empty_glob_an_empty_file_and_a_directory_are_refused(spark, tmp_path: Path) -> None:
    producer = write_log(tmp_path / "p.csv", PRODUCER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"consumer log glob file://.*/consumer-\*.csv matches no file"):
        analyze([producer], [uri(tmp_path) + "/consumer-*.csv"], session=spark)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(KafkalabError, match=r"consumer log file:/.*/empty.csv is empty"):
        analyze([producer], [uri(tmp_path / "empty.csv")], session=spark)
    with pytest.raises(KafkalabError, match=r"is a directory; give its files, e.g. 'file://.*/\*.csv'"):
        analyze([producer], [uri(tmp_path)], session=spark)


def test_a_scheme_without_a_file_system_is_one_clear_error(spark, tmp_path: Path) -> None:
    producer = write_log(tmp_path / "p.csv", PRODUCER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"cannot read consumer log nosuch://x/c.csv: .*No FileSystem for scheme"
                                            r".*spark.jars.packages") as caught:
        analyze([producer], ["nosuch://x/c.csv"], session=spark)
    assert "\n" not in str(caught.value)


def test_a_file_given_as_path_and_as_uri_is_refused(spark, tmp_path: Path) -> None:
    producer = write_log(tmp_path / "p.csv", PRODUCER_COLUMNS, [])
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    with pytest.raises(KafkalabError, match=r"given twice"):
        analyze([producer], [consumer, uri(consumer)], session=spark)


def test_a_bad_local_path_fails_before_spark_starts(tmp_path: Path) -> None:
    class NoSpark(WarmSession):
        def get(self, timeout: float | None = None, on_wait: object = None) -> NoReturn:
            raise AssertionError("Spark was started")

    with pytest.raises(KafkalabError, match=r"consumer log .*missing.csv does not exist"):
        analyze(["hdfs://nn/runs/p.csv"], [tmp_path / "missing.csv"], session=NoSpark())


def test_cli_uri_error_is_one_line_and_exit_2_with_spark_off_the_terminal(tmp_path: Path) -> None:
    consumer = write_log(tmp_path / "c.csv", CONSUMER_COLUMNS, [])
    proc = subprocess.run(
        [sys.executable, "-m", "kafkalab", "diff", "--producer", uri(tmp_path) + "/producer-*.csv",
         "--consumer", str(consumer), "--spark-master", "local[1]"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr  # the driver JVM's output went to its log
    assert proc.stderr.startswith("kafkalab: error: producer log glob file://") and "matches no file" in proc.stderr


@pytest.mark.parametrize("bad", ["spark.executor.memory", "=4g", "spark.executor.memory="])
def test_cli_spark_conf_of_the_wrong_form_is_refused(bad: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalab.cli import main

    assert main(["diff", "--producer", str(tmp_path / "p.csv"), "--consumer", str(tmp_path / "c.csv"),
                 "--spark-conf", "spark.sql.shuffle.partitions=8", "--spark-conf", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kafkalab: error: --spark-conf {bad!r} is not name=value") and err.count("\n") == 1
