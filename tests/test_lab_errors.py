"""A lab file's mistakes, through the real `kafkalab labs --check` and `kafkalab run`: each names the line it is on,
the field as the file writes it, and says what is wrong in words, in one line, exit 2. No cluster starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.labs import catalog

ERROR = "kafkalab: error: "


def shipped(lab_id: str) -> str:
    return next(p for p in catalog() if p.stem.endswith(lab_id)).read_text(encoding="utf-8")


def line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line holding ``needle``."""
    return next(no for no, line in enumerate(text.splitlines(), start=1) if needle in line)


def error_line(tmp_path: Path, lab_id: str, text: str, command: str) -> str:
    """The copy written as LAB_ID.toml (its id and name agree), checked by ``command``: its one error line."""
    path = tmp_path / f"{lab_id}.toml"
    path.write_text(text, encoding="utf-8")
    argv = ["labs", "--check", str(path)] if command == "check" else ["run", str(path), "--headless",
                                                                        "--runs-dir", str(tmp_path / "runs")]
    result = subprocess.run([sys.executable, "-m", "kafkalab", *argv], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "COLUMNS": "100"})
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), result.stderr
    assert not (tmp_path / "runs").exists()  # refused before a run dir, let alone a cluster
    return lines[0].removeprefix(ERROR)


def typo_in_producer() -> tuple[str, int, str, str]:
    """A second producer setting, misspelt, below the first: the error is at it, not at the first."""
    text = shipped("setup-check").replace('"producer.num-records-per-roll" = 100\n',
                                          '"producer.num-records-per-roll" = 100\n"producer.wait-after-sned" = 5\n')
    return text, line_of(text, "wait-after-sned"), 'producer."producer.wait-after-sned": unknown option', \
        "did you mean producer.wait-after-send?"


def typo_in_table_name() -> tuple[str, int, str, str]:
    """[[faults]] for [[fault]]: the line of the header, the table's name, what it should be."""
    text = shipped("setup-check").replace("[expect]", '[[faults]]\nat = "5s"\ndo = "kill broker 1"\n\n[expect]')
    return text, line_of(text, "[[faults]]"), "faults: unknown key", "did you mean fault?"


def brokers_as_text() -> tuple[str, int, str, str]:
    text = shipped("setup-check").replace("brokers = 3", 'brokers = "3"')
    return text, line_of(text, 'brokers = "3"'), 'cluster.brokers: must be a whole number, not the text "3"', ""


def typo_in_shared_consumer_setting() -> tuple[str, int, str, str]:
    """A [consumers] setting every consumer shares: the error is at [consumers], not at a [[consumer]]."""
    text = shipped("setup-check").replace('"consumer.auto-offset-reset"', '"consumer.auto-ofset-reset"')
    return text, line_of(text, "auto-ofset-reset"), 'consumers."consumer.auto-ofset-reset": unknown option', ""


def bad_value_in_second_consumer() -> tuple[str, int, str, str]:
    text = shipped("setup-check").replace("[[consumer]]\nlocal_id = 1\n",
                                          "[[consumer]]\nlocal_id = 1\n\n[[consumer]]\nlocal_id = 2\n"
                                          '"consumer.max-poll-recs" = "many"\n')
    return text, line_of(text, '"many"'), 'consumer[2]."consumer.max-poll-recs": ', "is not a whole number"


def flag_given_as_text() -> tuple[str, int, str, str]:
    text = shipped("setup-check").replace("partitions = 6", "partitions = true")
    return text, line_of(text, "partitions = true"), "topic[1].partitions: must be a whole number, not true", ""


def toml_syntax() -> tuple[str, int, str, str]:
    text = shipped("setup-check").replace("replication_factor = 3", "replication_factor = ")
    return text, line_of(text, "replication_factor = "), "not valid TOML: Invalid value", ""


CASES = [typo_in_producer, typo_in_table_name, brokers_as_text, typo_in_shared_consumer_setting,
         bad_value_in_second_consumer, flag_given_as_text, toml_syntax]


@pytest.mark.parametrize("command", ["check", "run"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_a_lab_file_mistake_names_its_line_and_field(tmp_path: Path, case, command: str) -> None:  # type: ignore[no-untyped-def]
    text, line, field_and_why, more = case()
    error = error_line(tmp_path, "setup-check", text, command)
    assert error.startswith(f"{tmp_path / 'setup-check.toml'}:{line}: {field_and_why}"), (line, error)
    assert more in error
    assert "is not a int" not in error and ": ." not in error and "producer.producer." not in error
