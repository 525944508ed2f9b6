"""Interrupt latency: Ctrl-C (SIGINT to the command's process group, as a terminal sends it) to the exit of
`kafkalab run LAB --headless`, in each phase of a run, and whether any process the run started is left.

    flock /tmp/kafkalab-cluster.lock .venv/bin/python -m benchmarks.bench_interrupts --repeat 5

Each phase is entered as its line appears in the headless log (the cluster's start, the clients', the drain,
the early audit, the analysis), then SIGINT is sent after ``--delay`` seconds. Per phase: the median and worst
time to exit (goal: 2 s), the exit codes, what result.json and --json out.json say, and the processes left:
every descendant of the command seen while it ran, looked for by pid right after its exit and 3 s later.
Writes benchmarks/results/interrupts.json. :func:`interrupt_run` is also what
tests/test_interrupts_cluster.py runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.benchutil import summary, write_results

GOAL_S = 2.0
LAB = "setup-check"
# phase -> the headless log's line that says it began (setup-check's audit starts beside its drain)
PHASES = {
    "cluster start": "starting 3 brokers",
    "clients": "producer started",
    "drain": "draining 1 consumers",
    "audit": "reading every partition of test-topic back",
    "analysis": "analysing the payload logs with Spark",
}
DELAYS = {"drain": 0.0, "audit": 0.0}  # short phases: interrupted as they begin
DEFAULT_DELAY_S = 0.5


@dataclass
class Interrupt:
    """One run interrupted in one phase: what the command did and what it left."""

    phase: str
    marker_seen: bool
    exit_code: int | None
    exit_s: float | None  # SIGINT to the command's exit
    result_outcome: str | None  # result.json
    json_outcome: str | None  # --json out.json
    report_json: bool  # a report.json in the run dir
    left_at_exit: list[int] = field(default_factory=list)  # descendants alive when the command exited
    left_after_3s: list[int] = field(default_factory=list)
    output: list[str] = field(default_factory=list)


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def children_of(pids: set[int]) -> set[int]:
    """Every process whose parent is in ``pids`` (one /proc scan)."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid in pids:
                found.add(int(entry))
    return found


class Descendants:
    """Polls /proc for the command's descendants (by pid: nodes in sessions of their own included)."""

    def __init__(self, root: int) -> None:
        self.seen: set[int] = {root}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            self.seen |= children_of(self.seen)

    def stop(self) -> set[int]:
        self._stop.set()
        self._thread.join()
        self.seen |= children_of(self.seen)
        return self.seen


def interrupt_run(phase: str, runs_dir: Path, delay_s: float | None = None, lab: str = LAB,
                  signum: int = signal.SIGINT, timeout_s: float = 300.0) -> Interrupt:
    """Run ``lab`` headless, send ``signum`` to its process group once ``phase``'s line appeared (plus the
    delay), and see what it did and left."""
    marker = PHASES[phase]
    delay = DELAYS.get(phase, DEFAULT_DELAY_S) if delay_s is None else delay_s
    out_json = runs_dir / f"out-{time.monotonic_ns()}.json"
    argv = [sys.executable, "-m", "kafkalab", "run", lab, "--headless", "--free-ports", "--runs-dir",
            str(runs_dir), "--json", str(out_json)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=dict(os.environ, COLUMNS="120"))
    tracked = Descendants(proc.pid)
    assert proc.stdout is not None
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip())
            if marker in line:
                seen.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout_s
    while not seen.is_set() and proc.poll() is None and time.monotonic() < deadline:
        seen.wait(0.05)
    sent = None
    if seen.is_set() and proc.poll() is None:
        time.sleep(delay)
        sent = time.monotonic()
        os.killpg(proc.pid, signum)  # as a terminal's Ctrl-C: the whole foreground group
    try:
        code: int | None = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        code = None
    exited = time.monotonic()
    pids = tracked.stop() - {proc.pid}
    left = sorted(p for p in pids if alive(p))
    time.sleep(3.0)
    later = sorted(p for p in pids if alive(p))
    for pid in later:  # leave nothing for the next run, whatever the measurement said
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if code is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    reader.join(5)
    run_dirs = sorted((d for d in runs_dir.glob(f"{lab}-*") if d.is_dir()), key=lambda d: d.stat().st_mtime)
    run_dir = run_dirs[-1] if run_dirs else None
    result = run_dir / "result.json" if run_dir is not None else None
    return Interrupt(
        phase=phase, marker_seen=sent is not None, exit_code=code,
        exit_s=round(exited - sent, 3) if sent is not None and code is not None else None,
        result_outcome=json.loads(result.read_text())["outcome"] if result is not None and result.exists() else None,
        json_outcome=json.loads(out_json.read_text())["outcome"] if out_json.exists() else None,
        report_json=run_dir is not None and (run_dir / "report.json").exists(),
        left_at_exit=left, left_after_3s=later, output=lines,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per phase (default 5)")
    parser.add_argument("--phases", nargs="*", default=list(PHASES), choices=list(PHASES))
    args = parser.parse_args(argv)
    per_phase: dict[str, Any] = {}
    worst: tuple[float, str] = (0.0, "")
    with tempfile.TemporaryDirectory(prefix="bench-interrupts-") as tmp:
        for phase in args.phases:
            trials = []
            for i in range(args.repeat):
                trial = interrupt_run(phase, Path(tmp) / f"{phase.replace(' ', '-')}-{i}")
                trials.append(trial)
                print(f"{phase} #{i + 1}: exit {trial.exit_code} after {trial.exit_s} s; result.json "
                      f"{trial.result_outcome}, out.json {trial.json_outcome}, left {len(trial.left_at_exit)} "
                      f"at exit, {len(trial.left_after_3s)} 3 s later", flush=True)
            times = [t.exit_s for t in trials if t.exit_s is not None]
            if times and max(times) > worst[0]:
                worst = (max(times), phase)
            per_phase[phase] = {
                "exit_s": summary(times),
                "exit_codes": [t.exit_code for t in trials],
                "result_json": [t.result_outcome for t in trials],
                "out_json": [t.json_outcome for t in trials],
                "report_json_written": sum(t.report_json for t in trials),
                "left_at_exit": sum(len(t.left_at_exit) for t in trials),
                "left_after_3s": sum(len(t.left_after_3s) for t in trials),
                "trials": [{k: v for k, v in asdict(t).items() if k != "output"} for t in trials],
            }
    path = write_results("interrupts", {
        "lab": LAB, "goal_s": GOAL_S, "repeat": args.repeat, "signal": "SIGINT to the process group",
        "phases": per_phase, "worst": {"exit_s": worst[0], "phase": worst[1]},
    })
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
