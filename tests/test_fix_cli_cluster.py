"""`kafkalab fix` through the real command on real clusters: acks-0's grader passes the fix and fails the lab as
shipped (the two checks every grader needs), one graded run each to keep it short."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

KAFKALAB = os.environ.get("KAFKALAB", str(Path(sys.executable).with_name("kafkalab")))

pytestmark = pytest.mark.cluster


def fix(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    """One graded run of acks-0; the result and the grade it wrote (found in the runs dir, as `grades` would)."""
    runs = tmp_path / "runs"
    env = {**os.environ, "KAFKALAB_STATE": str(tmp_path / "state"), "COLUMNS": "200"}
    out = tmp_path / "grade-out.json"
    done = subprocess.run([KAFKALAB, "fix", "acks-0", *args, "--runs", "1", "--free-ports", "--runs-dir", str(runs),
                           "--who", "tester", "--json", str(out)], capture_output=True, text=True, timeout=420,
                          env=env)
    written = sorted(runs.rglob("grade.json"))
    assert len(written) == 1, done.stdout + done.stderr
    grade = json.loads(written[0].read_text())
    assert json.loads(out.read_text()) == grade  # --json writes the same grade
    assert grade["outcome"] != "not graded", f"a graded run ended early: {run_errors(runs)}\n{done.stdout}{done.stderr}"
    check = subprocess.run([KAFKALAB, "grades", "--check", str(runs)], capture_output=True, text=True, timeout=60,
                           env=env)
    assert check.returncode == 0, check.stdout + check.stderr  # the grade is what its runs' files say
    return done, grade


def run_errors(runs: Path) -> list[str]:
    """What each graded run's result.json says ended it (so a failure here names the cause)."""
    return [json.loads(p.read_text()).get("error", "") for p in sorted(runs.rglob("result.json"))]


def test_the_fix_passes(tmp_path: Path) -> None:
    done, grade = fix(tmp_path, "-D", "producer.acks=all")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = grade["rows"]
    assert isinstance(rows, list) and rows and all(r["passed"] for r in rows), rows
    assert grade["passed"] and grade["score"] == 100 and grade["who"] == "tester"
    assert grade["changes"] == ["producer.acks=all"]
    assert "FIXED" in done.stdout and "grade written:" in done.stdout


def test_the_lab_as_shipped_fails(tmp_path: Path) -> None:
    done, grade = fix(tmp_path, "--shipped")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {r["text"]: r for r in grade["rows"]}  # type: ignore[attr-defined]
    assert not rows["lost == 0"]["passed"] and rows["lost == 0"]["seen"] > 0, rows
    assert not grade["passed"] and grade["score"] == 0
    assert "NOT FIXED YET" in done.stdout
