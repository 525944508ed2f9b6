"""How soon the report is on screen after a lab's run: from the drain finished (the run's next phase,
auditing or analyzing, begins) to the verdict visible.

    .venv/bin/python benchmarks/bench_report_latency.py [--runs 5] [--parts console,cli]

- console: the real console (LabConsole on a LabSource, headless under Pilot) with its warm Spark session,
  runs started with `g` one after another: a 15k-record lab and a 100k-record run. Goal <= 3 s. After each
  run, in the same session, Spark's own floor: its least job, and the least job comparing the run's logs.
- cli: `kafkalab run LAB --headless` as a subprocess, its lines timestamped as they arrive (from the
  "phase auditing" line to the "verdict:" line). Goal <= 8 s.

The labs are the catalog's setup-check with 15,000 and 100,000 records (no faults: the latency measured
does not depend on them, and a short run leaves more of the budget for repeats). The console's runs reuse
the cluster the first run kept, as `g` does for an instructor; each `kafkalab run` starts its own on free
ports. The machine's load average is recorded with the results (benchmarks/results/
report_latency_console.json, report_latency_cli.json): other work on the machine slows every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.benchutil import floor_job_s, summary, write_results
from kafkalab.analysis import WarmSession
from kafkalab.analysis.warmup import IDLE_ROUNDS
from kafkalab.feeds.lab_source import LabSource
from kafkalab.labs import LabSession, load_lab
from kafkalab.labs.loader import find_lab
from kafkalab.labs.results import Phase, PhaseChanged, RunFinished, SessionEvent
from kafkalab.labs.run import PortChoice
from kafkalab.ui.app import LabConsole

CONSOLE_GOAL_S = 3.0
CLI_GOAL_S = 8.0
SIZES = {"15k": 15_000, "100k": 100_000}
AFTER_DRAIN = (Phase.AUDITING, Phase.ANALYZING)
KAFKALAB = Path(sys.executable).with_name("kafkalab")


def lab_file(records: int, where: Path) -> Path:
    """setup-check with ``records`` records (and its expectations counting them)."""
    text = find_lab("setup-check").read_text(encoding="utf-8")
    text = re.sub(r"= 100\n", f"= {records}\n", text)
    path = where / f"{records}" / "setup-check.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def phase_split(run_dir: Path, latency: float) -> dict[str, float]:
    """Where the latency went, from the run's recording.jsonl: audit (what of it was left after the drain),
    analysis (Spark, and the expectations judged), teardown (clients closed, the watch stopped) and the rest
    (the result reaching the screen)."""
    from kafkalab.labs.recording import read_recording

    lines = list(read_recording(run_dir))
    at = {line["phase"]: line["ts"] for line in lines if line["kind"] == "phase"}
    begun = at.get("auditing", at.get("analyzing"))
    ended = at.get("done", at.get("error"))
    if begun is None or ended is None or "analyzing" not in at:
        return {}
    teardown = next((line["ts"] for line in lines if line["kind"] == "message"
                     and line["ts"] >= at["analyzing"] and str(line.get("message", "")).startswith("stopping")), ended)
    return {"audit_s": round(at["analyzing"] - begun, 2), "analysis_s": round(teardown - at["analyzing"], 2),
            "teardown_s": round(ended - teardown, 2), "to_screen_s": round(latency - (ended - begun), 2)}


def spark_floor(spark: WarmSession, run_dir: Path) -> dict[str, float]:
    """In the same warm session, right after the run: the least Spark job there is (one row counted) and the
    least job comparing this run's logs, which say how much of the analysis is Spark's own fixed cost."""
    session = spark.get()
    started = time.monotonic()
    session.range(1).count()
    least = time.monotonic() - started
    floor = floor_job_s(session, [run_dir / "producer.csv"], sorted(run_dir.glob("consumer*.csv")))
    return {"spark_least_job_s": round(least, 2), "spark_floor_job_s": round(floor, 2)}


class DrainWatch:
    """Notes when the drain finished: the first phase after draining."""

    def __init__(self) -> None:
        self.at: float | None = None
        self.done = threading.Event()

    def __call__(self, event: SessionEvent) -> None:
        match event:
            case PhaseChanged(phase=phase) if phase in AFTER_DRAIN and self.at is None:
                self.at = time.monotonic()
            case RunFinished():
                self.done.set()


async def console_runs(labs: dict[str, Path], runs: int, runs_root: Path,
                       splits: dict[str, list[dict[str, float]]]) -> dict[str, list[float]]:
    """Every lab's runs in one console, one after another, as an instructor does (the next lab's records set
    with the console's setting change): drain finished -> the verdict in the results pane. A run that ends
    without a report (its cluster would not start...) is said and not counted."""
    out: dict[str, list[float]] = {}
    spark = WarmSession(warmup_rounds=IDLE_ROUNDS)  # as `kafkalab console` makes it
    first = load_lab(next(iter(labs.values())))
    ports = PortChoice.picked(first)
    session = LabSession(first, runs_root, spark=spark, zk_port=ports.zk_port, broker_ports=list(ports.broker_ports))
    source = LabSource(session, spark)
    app = LabConsole(source, [1, 2, 3], poll_s=None)
    async with app.run_test(size=(160, 48)) as pilot:
        while not spark.ready:  # the console's warm session, as an instructor has it after a minute
            await asyncio.sleep(0.5)
        for name in labs:
            source.change_setting("producer.num-records-per-roll", str(SIZES[name]))
            for i in range(runs):
                latency = await _one_run(app, pilot, session)
                if latency is not None and session.result is not None:
                    out.setdefault(name, []).append(latency)
                    split = phase_split(session.result.run_dir, latency)
                    splits.setdefault(name, []).append({**split, **spark_floor(spark, session.result.run_dir)})
                    print(f"console {name} run {i + 1}: {latency:.2f}s {splits[name][-1]}", flush=True)
                else:
                    result = session.result
                    print(f"console {name} run {i + 1}: no report ({result.error if result else 'no result'})",
                          flush=True)
        await pilot.press("ctrl+q")  # the console's quit stops the session and its Spark
        while session.running:
            await asyncio.sleep(0.2)
    return out


async def _one_run(app: LabConsole, pilot: Any, session: LabSession) -> float | None:
    """Press g; seconds from the drain finished to the verdict on screen, None if no report came."""
    watch = DrainWatch()
    session.add_listener(watch)
    await pilot.press("g")
    try:
        while not (watch.at is not None and _verdict_shown(app)):
            if watch.done.is_set() and (session.result is None or not session.result.verdict):
                return None
            await asyncio.sleep(0.02)
        return time.monotonic() - watch.at
    finally:
        session.remove_listener(watch)
        while session.running:
            await asyncio.sleep(0.2)


def _verdict_shown(app: LabConsole) -> bool:
    from textual.widgets import Static

    report = app.run_frame.report
    return report is not None and report.verdict[:30] in str(app.query_one("#verdict", Static).render())


def cli_runs(path: Path, runs: int, runs_root: Path,
             splits: list[dict[str, float]]) -> tuple[list[float], list[float]]:
    """`kafkalab run` as a person types it: (drain -> verdict printed, whole command) per run."""
    latencies, totals = [], []
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "400"}  # unbuffered lines, none wrapped
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
            elif line.startswith("run files:") and len(latencies) > i:
                splits.append(phase_split(Path(line.split()[2]), latencies[-1]))
        proc.wait()
        totals.append(time.monotonic() - started)
        shown = f"{latencies[-1]:.2f}s" if len(latencies) > i else "no verdict"
        print(f"cli run {i + 1}: {shown}, whole command {totals[-1]:.0f}s", flush=True)
    return latencies, totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--parts", default="console,cli")
    parser.add_argument("--sizes", default=",".join(SIZES), help="the console's run sizes (15k,100k)")
    args = parser.parse_args()
    for part in args.parts.split(","):
        results: dict[str, Any] = {"runs_asked": args.runs,
                                   "load_average_before": [round(x, 1) for x in os.getloadavg()]}
        with tempfile.TemporaryDirectory(prefix="kafkalab-bench-latency-") as tmp:
            root = Path(tmp)
            labs = {name: lab_file(SIZES[name], root / "labs") for name in args.sizes.split(",")}
            if part == "console":
                splits: dict[str, list[dict[str, float]]] = {}
                console = asyncio.run(console_runs(labs, args.runs, root / "runs", splits))
                results["console"] = {name: {**summary(v), "goal_s": CONSOLE_GOAL_S, "split": splits.get(name, []),
                                             "met": bool(v) and statistics.median(v) <= CONSOLE_GOAL_S}
                                      for name, v in console.items()}
            else:
                cli_splits: list[dict[str, float]] = []
                latencies, totals = cli_runs(lab_file(SIZES["15k"], root / "labs"), args.runs, root / "runs",
                                             cli_splits)
                results["cli_15k"] = {**summary(latencies), "goal_s": CLI_GOAL_S, "whole_command_s": summary(totals),
                                      "split": cli_splits,
                                      "met": bool(latencies) and statistics.median(latencies) <= CLI_GOAL_S}
        results["load_average_after"] = [round(x, 1) for x in os.getloadavg()]
        named = part if part == "cli" or args.sizes == ",".join(SIZES) else f"{part}_{args.sizes.replace(',', '_')}"
        path = write_results(f"report_latency_{named}", results)
        print(f"results: {path}", flush=True)


if __name__ == "__main__":
    main()
