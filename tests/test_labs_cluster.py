"""Labs end to end on a real cluster, through the real `kafkalab run` command.

Each run starts its own cluster (fresh state, free ports) in a temporary runs dir; the tests check the
run's expectations, its files, and that no JVM or consumer process outlives it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

pytestmark = pytest.mark.cluster


def kafkalab(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="120")
    return subprocess.Popen([sys.executable, "-m", "kafkalab", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def leftovers(runs: Path) -> list[str]:
    """Processes whose command line names the runs dir (nodes carry their state dir in a -D marker)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if str(runs) in cmd and proc.pid != os.getpid():
            found.append(f"{proc.pid}: {cmd[:120]}")
    return found


def run_headless(lab: str, tmp_path: Path, timeout: float) -> tuple[dict[str, Any], str]:
    """`kafkalab run LAB --headless --free-ports` to its end: its result.json (it must exit 0) and output;
    no process of the run may be left behind."""
    runs = tmp_path / "runs"
    proc = kafkalab("run", lab, "--headless", "--free-ports", "--runs-dir", str(runs),
                    "--json", str(tmp_path / "result.json"), cwd=tmp_path)
    out = finish(proc, timeout)
    assert proc.returncode == 0, out[-4000:]
    assert leftovers(runs) == []
    return json.loads((tmp_path / "result.json").read_text()), out


def finish(proc: subprocess.Popen[str], timeout: float) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"kafkalab run did not end within {timeout}s:\n{out[-3000:]}")
    return out


def test_setup_check_runs_and_passes(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = kafkalab("run", "setup-check", "--headless", "--free-ports", "--runs-dir", str(runs),
                    "--json", str(tmp_path / "result.json"), "--seed", "7", cwd=tmp_path)
    out = finish(proc, 300)
    assert proc.returncode == 0, out[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["passed"] and result["seed"] == 7
    assert {e["text"] for e in result["expectations"]} >= {"acknowledged == 100", "lost == 0"}
    run_dir = Path(result["run_dir"])
    for name in ("producer.csv", "consumer-1.csv", "audit.csv", "report.json", "timeline.json", "lab.toml"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "cluster" / "broker-1" / "logs" / "server.log").is_file()
    assert not (run_dir / "cluster" / "broker-1" / "data").exists()
    kinds = {e["kind"] for e in json.loads((run_dir / "timeline.json").read_text())["events"]}
    assert {"phase", "node", "consumer-assigned"} <= kinds
    assert leftovers(runs) == []


FAILING_LAB = """\
[lab]
id = "kill-then-expect-loss"
title = "A leader killed under acks=all: the expectation of loss does not hold"
teaches = "exit code 1 names the expectation"
why = "acks=all with three replicas loses nothing, so lost > 0 cannot hold"
instructions = "run it"
drain = 10

[[topic]]
name = "test-topic"
partitions = 3
replication_factor = 3

[producer]
"producer.num-records-per-roll" = 3000
"producer.wait-after-send" = 1

[consumers]
"consumer.auto-offset-reset" = "earliest"

[[consumer]]
local_id = 1

[[fault]]
at = "progress 30%"
do = "kill"
on = "leader test-topic/0"

[[fault]]
at = "leader-change test-topic/0"
do = "start"
on = "same"
timeout = 40

[expect]
lost = "> 0"
"timeline.leader_changes" = "> 0"
"""


def test_failed_expectation_exits_1_and_names_it(tmp_path: Path) -> None:
    lab = tmp_path / "kill-then-expect-loss.toml"
    lab.write_text(textwrap.dedent(FAILING_LAB))
    runs = tmp_path / "runs"
    proc = kafkalab("run", str(lab), "--headless", "--free-ports", "--runs-dir", str(runs),
                    "--json", str(tmp_path / "r.json"), cwd=tmp_path)
    out = finish(proc, 300)
    assert proc.returncode == 1, out[-3000:]
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["outcome"] == "failed"
    assert [f["state"] for f in result["faults"]] == ["fired", "fired"]
    assert result["failures"] == ["0 acknowledged records were never processed (expected more than 0)"]
    assert "not shown: 0 acknowledged records were never processed (expected more than 0)" in " ".join(out.split())
    assert leftovers(runs) == []


def wait_until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_ctrl_c_stops_cleanly_and_keeps_files(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    proc = kafkalab("run", "acks-0", "--headless", "--free-ports", "--runs-dir", str(runs), cwd=tmp_path)
    assert proc.stdout is not None
    deadline = time.monotonic() + 180
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "phase" in line and "running" in line:
            break
        if time.monotonic() > deadline:
            break
    # the producer (its own process) has begun its log: under load it can take seconds after "running"
    logged = wait_until(lambda: any(runs.glob("*/producer.csv*")), 60)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT)
    out = "".join(seen) + finish(proc, 120)
    assert logged, "the producer began no log within 60 s of the run's start: " + out[-3000:]
    assert proc.returncode == 130, out[-3000:]
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]  # beside it: the runs dir's spark.log
    result = json.loads((run_dir / "result.json").read_text())
    assert result["outcome"] == "stopped"
    assert (run_dir / "timeline.json").is_file()
    assert list(run_dir.glob("producer.csv*")), "the producer's log so far is kept"
    assert leftovers(runs) == []


def test_typed_records_are_named_in_the_verdict_not_as_anomalies(tmp_path: Path) -> None:
    result, out = run_headless("consumer-groups-typed", tmp_path, 400)
    assert result["metrics"]["typed"] == 6 and result["metrics"]["unexpected"] == 0
    assert result["verdict"] == ("no anomaly: every acknowledged record was processed, once and in order; "
                                 "6 records typed by hand (no message id): received, not part of the "
                                 "producer's audit")
    assert f"verdict: {result['verdict']}" in " ".join(out.split())
