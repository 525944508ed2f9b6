"""How soon the report is on screen after a lab's run: from the drain finished (the run's next phase,
auditing or analyzing, begins) to the verdict visible.

    .venv/bin/python benchmarks/bench_report_latency.py [--runs 5] [--parts console,cli]

- console: the real console (LabConsole on a LabSource, headless under Pilot) with its warm Spark session,
  runs started with `g` one after another: a 15k-record lab and a 100k-record run. Goal <= 3 s.
- cli: `kafkalab run LAB --headless` as a subprocess, its lines timestamped as they arrive (from the
  "phase auditing" line to the "verdict:" line). Goal <= 8 s.

The labs are the catalog's setup-check with 15,000 and 100,000 records (no faults: the latency measured
does not depend on them, and a short run leaves more of the budget for repeats). Each run has its own fresh
cluster on free ports. The machine's load average is recorded with the results (benchmarks/results/
report_latency.json): other work on the machine slows every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.benchutil import summary, write_results
from kafkalab.analysis import WarmSession
from kafkalab.labs import LabSession, load_lab
from kafkalab.labs.loader import find_lab
from kafkalab.ui.app import LabConsole
from kafkalab.ui.lab_source import LabSource

CONSOLE_GOAL_S = 3.0
CLI_GOAL_S = 8.0
SIZES = {"15k": 15_000, "100k": 100_000}
AFTER_DRAIN = ("auditing", "analyzing")
KAFKALAB = Path(sys.executable).with_name("kafkalab")


def lab_file(records: int, where: Path) -> Path:
    """setup-check with ``records`` records (and its expectations counting them)."""
    text = find_lab("setup-check").read_text(encoding="utf-8")
    text = re.sub(r"= 100\n", f"= {records}\n", text)
    path = where / f"{records}" / "setup-check.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


class DrainWatch:
    """Notes when the drain finished: the first phase after draining."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.done = threading.Event()

    def __call__(self, event: Any) -> None:
        if event.kind == "phase" and str(event.data) in AFTER_DRAIN and self.at is None:
            self.at = time.monotonic()
        elif event.kind == "result":
            self.done.set()


async def console_runs(labs: dict[str, Path], runs: int, runs_root: Path) -> dict[str, list[float]]:
    """Each lab's runs in one console: drain finished -> the verdict in the results pane."""
    out: dict[str, list[float]] = {}
    spark = WarmSession()
    for name, path in labs.items():
        session = LabSession(load_lab(path), runs_root, spark=spark, free_ports=True)
        app = LabConsole(LabSource(session, spark), [1, 2, 3], poll_s=None)
        async with app.run_test(size=(160, 48)) as pilot:
            while not spark.ready:  # the console's warm session, as an instructor has it after a minute
                await asyncio.sleep(0.5)
            for i in range(runs):
                watch = DrainWatch()
                session.add_listener(watch)
                await pilot.press("g")
                while watch.at is None or app.run_frame.report is None or not _verdict_shown(app):
                    await asyncio.sleep(0.02)
                latency = time.monotonic() - watch.at
                session.remove_listener(watch)
                out.setdefault(name, []).append(latency)
                print(f"console {name} run {i + 1}: {latency:.2f}s ({app.run_frame.report.verdict[:60]})",
                      flush=True)
                while session.running:
                    await asyncio.sleep(0.2)
            await pilot.press("ctrl+q")
        session.close()
    spark.stop()
    return out


def _verdict_shown(app: LabConsole) -> bool:
    from textual.widgets import Static

    report = app.run_frame.report
    return report is not None and report.verdict[:30] in str(app.query_one("#verdict", Static).render())


def cli_runs(path: Path, runs: int, runs_root: Path) -> tuple[list[float], list[float]]:
    """`kafkalab run` as a person types it: (drain -> verdict printed, whole command) per run."""
    latencies, totals = [], []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for i in range(runs):
        started = time.monotonic()
        drained = None
        proc = subprocess.Popen([str(KAFKALAB), "run", str(path), "--headless", "--free-ports", "--runs-dir",
                                 str(runs_root)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            words = line.split()
            if drained is None and len(words) >= 3 and words[1] == "phase" and words[2] in AFTER_DRAIN:
                drained = time.monotonic()
            elif line.startswith("verdict:") and drained is not None:
                latencies.append(time.monotonic() - drained)
        proc.wait()
        totals.append(time.monotonic() - started)
        shown = f"{latencies[-1]:.2f}s" if len(latencies) > i else "no verdict"
        print(f"cli run {i + 1}: {shown}, whole command {totals[-1]:.0f}s", flush=True)
    return latencies, totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--parts", default="console,cli")
    args = parser.parse_args()
    parts = args.parts.split(",")
    load_before = os.getloadavg()
    results: dict[str, Any] = {"runs_asked": args.runs, "load_average_before": [round(x, 1) for x in load_before]}
    with tempfile.TemporaryDirectory(prefix="kafkalab-bench-latency-") as tmp:
        root = Path(tmp)
        labs = {name: lab_file(n, root / "labs") for name, n in SIZES.items()}
        if "console" in parts:
            console = asyncio.run(console_runs(labs, args.runs, root / "console-runs"))
            results["console"] = {name: {**summary(v), "goal_s": CONSOLE_GOAL_S,
                                         "met": summary(v)["median"] is not None
                                         and summary(v)["median"] <= CONSOLE_GOAL_S}
                                  for name, v in console.items()}
        if "cli" in parts:
            latencies, totals = cli_runs(labs["15k"], args.runs, root / "cli-runs")
            results["cli_15k"] = {**summary(latencies), "goal_s": CLI_GOAL_S, "whole_command_s": summary(totals),
                                  "met": bool(latencies) and summary(latencies)["median"] <= CLI_GOAL_S}
    results["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
    path = write_results("report_latency", results)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
