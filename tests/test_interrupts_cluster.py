"""Interrupts on a real cluster, through the real `kafkalab run setup-check --headless` as a subprocess (issue 33,
items 0-3): a signal sent to its process group at a phase's line, then the exit code, result.json, --json
out.json and report.json read, and every process the command started looked for by pid.

Four runs of setup-check, three of them cut short: 86 s in all on 2 cores (a loaded machine: more).
Run under the cluster lock: ``flock /tmp/kafkalab-cluster.lock .venv/bin/pytest tests/test_interrupts_cluster.py``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench_interrupts import PHASES, Interrupt, interrupt_run

pytestmark = pytest.mark.cluster

EXIT_BOUND_S = 5.0  # the goal is 2 s (benchmarks/bench_interrupts.py); CI machines vary


def nothing_left(trial: Interrupt) -> None:
    assert not trial.left_after_3s, f"processes left by pid: {trial.left_after_3s}"


def test_ctrl_c_during_the_cluster_start_stops_at_once_and_starts_no_client(tmp_path: Path) -> None:
    trial = interrupt_run("cluster start", tmp_path)
    assert trial.marker_seen, trial.output
    assert trial.exit_code == 130
    assert trial.exit_s is not None and trial.exit_s < EXIT_BOUND_S
    after = trial.output[next(i for i, line in enumerate(trial.output) if PHASES["cluster start"] in line):]
    assert not any("consumer-1 started" in line or "creating topic" in line for line in after), after
    assert not any("crashed" in line for line in after), after  # a clean stop reads as one
    assert trial.result_outcome == "stopped" and trial.json_outcome == "stopped"
    nothing_left(trial)


def test_sighup_while_the_clients_run_writes_the_runs_files(tmp_path: Path) -> None:
    trial = interrupt_run("clients", tmp_path, signum=signal.SIGHUP)
    assert trial.marker_seen, trial.output
    assert trial.exit_code == 130
    assert trial.exit_s is not None and trial.exit_s < EXIT_BOUND_S
    assert trial.result_outcome == "stopped" and trial.json_outcome == "stopped"
    run_dir = max(tmp_path.glob("setup-check-*"))
    assert (run_dir / "timeline.json").exists()
    assert not any("consumer-crashed" in line for line in trial.output), trial.output
    nothing_left(trial)


def test_ctrl_c_during_the_analysis_every_file_says_stopped(tmp_path: Path) -> None:
    trial = interrupt_run("analysis", tmp_path)
    assert trial.marker_seen, trial.output
    assert trial.exit_code == 130
    assert trial.exit_s is not None and trial.exit_s < EXIT_BOUND_S
    assert trial.result_outcome == "stopped" and trial.json_outcome == "stopped"
    assert not trial.report_json
    assert any(line.startswith("stopped (Ctrl-C)") for line in trial.output), trial.output
    nothing_left(trial)  # the Spark JVM included


def test_a_reader_that_stops_early_neither_ends_the_run_nor_hangs_it(tmp_path: Path) -> None:
    """`kafkalab run setup-check --headless | head -15`: the run goes on to its result, then exits quietly."""
    argv = [sys.executable, "-m", "kafkalab", "run", "setup-check", "--headless", "--free-ports", "--runs-dir",
            str(tmp_path)]
    command = " ".join(argv) + " 2>" + str(tmp_path / "stderr.txt") + " | head -15"
    proc = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=600)
    assert len(proc.stdout.splitlines()) == 15
    result = json.loads(next(tmp_path.glob("setup-check-*/result.json")).read_text())
    assert result["outcome"] == "passed", result
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()
