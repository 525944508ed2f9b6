"""`kafkalab labs`, `kafkalab run LAB`, `kafkalab clean`: the lab catalog, headless runs, old runs removed."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from kafkalab.child_python import python_module
from kafkalab.cli.client_args import add_client_args, client_argv, with_clients
from kafkalab.cli.common import add_net_proxies_arg, add_version_arg, net_proxies_argv, on_platform, with_net_proxies
from kafkalab.cli.console_cmd import cmd_console, console_args
from kafkalab.cli.fix_cmds import add_change_args, answer, changed_lab, give_up, show_lab
from kafkalab.cli.tables import Column, Fit, print_fitted
from kafkalab.cluster.spec import MODES
from kafkalab.errors import KafkalabError
from kafkalab.labs import progress
from kafkalab.labs.expectations import __doc__ as METRICS_DOC
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.measured import num
from kafkalab.labs.results import Outcome
from kafkalab.labs.run import PortChoice
from kafkalab.labs.runner import HeadlessRun, catalog_rows, write_json
from kafkalab.labs.session import Interrupted, RunResult
from kafkalab.labs.settings_check import checked_distribution
from kafkalab.paths import RUNS_DIR

RECORD_SIZE = (160, 48)
RECORD_SPEED = 4


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    labs = subparsers.add_parser("labs", help="list the lab catalog")
    labs.add_argument("--json", action="store_true", help="print the catalog as JSON")
    labs.add_argument("--show", metavar="LAB", help="print one lab's instructions and why it works every time "
                      "(an incident's ticket until you name its cause; a fix exercise's task)")
    labs.add_argument("--answer", nargs=2, metavar=("LAB", "N"), default=None,
                      help="name an incident's root cause: choice N of those `--show LAB` lists")
    labs.add_argument("--give-up", metavar="LAB", default=None,
                      help="see an incident's cause and a fix exercise's solution (your progress says so)")
    labs.add_argument("--check", metavar="FILE", type=Path, help="validate a lab file and say what is wrong")
    labs.add_argument("--metrics", action="store_true", help="list the metric names expectations can use")
    labs.set_defaults(func=cmd_labs)

    run = subparsers.add_parser("run", help="run a lab: cluster, clients, faults, analysis, expectations")
    run.add_argument("lab", help="a lab id, catalog number or .toml path (kafkalab labs lists them)")
    run.add_argument("--headless", action="store_true", help="no console, even on a terminal")
    run.add_argument("--mode", choices=MODES, default=None,
                     help="metadata mode: zookeeper or kraft (default: the lab's own; `kafkalab labs --show`)")
    add_version_arg(run)
    add_net_proxies_arg(run)
    run.add_argument("--json", metavar="OUT", type=Path, help="write the result(s) as JSON to OUT")
    run.add_argument("--repeat", type=int, default=1, metavar="N", help="run N times (each on a fresh cluster)")
    run.add_argument("--seed", type=int, default=None, metavar="S", help="seed for values and random targets")
    run.add_argument("--runs-dir", type=Path, default=RUNS_DIR,
                     help=f"where run directories go (default ./{RUNS_DIR})")
    run.add_argument("--free-ports", action="store_true",
                     help="use free ports for every node (default: the usual ports, free ones where taken)")
    run.add_argument("--record", metavar="FILE.cast", type=Path, default=None,
                     help="after the run, render its replay into an asciicast v2 file (no terminal needed)")
    add_change_args(run)  # a plain run with changes: headless, nothing graded
    add_client_args(run)
    run.set_defaults(func=cmd_run)

    clean = subparsers.add_parser("clean", help="remove old lab runs")
    clean.add_argument("--runs-dir", type=Path, default=RUNS_DIR)
    clean.add_argument("--keep", type=int, default=0, metavar="N", help="keep the N newest runs of each lab")
    clean.add_argument("--older-than", type=float, default=0.0, metavar="HOURS", help="only runs older than this")
    clean.set_defaults(func=cmd_clean)


def cmd_labs(args: argparse.Namespace) -> int:
    console = Console()
    if args.metrics:
        print(METRICS_DOC)
        return 0
    if args.check:
        lab = load_lab(args.check)
        print(f"{args.check}: lab {lab.id} is valid ({len(lab.faults)} faults, {len(lab.expectations)} expectations)")
        return 0
    if args.show:
        show_lab(console, load_lab(find_lab(args.show)))
        return 0
    if args.answer:
        return answer(console, load_lab(find_lab(args.answer[0])), args.answer[1])
    if args.give_up:
        return give_up(console, load_lab(find_lab(args.give_up)))
    rows = catalog_rows()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    cells = []
    for r in rows:
        title, teaches = r["title"], r["teaches"]
        # no spoiler: what an incident teaches names its cause and often its cure, so it waits for the fix
        if "incident" in r["offers"] and not progress.load(r["id"]).solved("fix" in r["offers"]):
            title, teaches = "(an incident: its ticket in --show)", "named once you solve it or give up"
        offers = f"\n[dim]offers {', '.join(r['offers'])}[/]" if r["offers"] else ""  # under the id: 80 columns fit
        # the title above what it teaches, in one prose column: two would leave no room for "runs on" at 80
        cells.append([str(r["number"]), r["id"] + offers, "\n".join(r["runs_on"]),
                      f"[bold]{escape(title)}[/]\n[dim]→[/] {escape(teaches)}"])
    # ids and platforms whole (they are what `run` takes), the prose wrapped between words
    print_fitted(console, [Column("#", justify="right"), Column("id"), Column("runs on"),
                           Column("lesson: what it teaches", Fit.WRAP)], cells, title="kafkalab labs")
    console.print("run one: kafkalab run ID [--mode kraft] [--kafka-version 4.4.0] [--headless]; "
                  "read one, and how to run it on each: kafkalab labs --show ID", highlight=False)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if args.repeat < 1:
        raise KafkalabError(f"--repeat {args.repeat}: give 1 or more")
    if args.record is not None and (args.record.suffix != ".cast" or args.repeat != 1):
        raise KafkalabError(f"--record {args.record}: give one run (no --repeat) and a file name ending in .cast")
    path = find_lab(args.lab)
    lab = on_platform(load_lab(path), args)  # refused here, before anything starts, when it does not validate
    lab = with_net_proxies(lab, args)
    lab = with_clients(lab, args)  # and a command that cannot run
    lab, changes = changed_lab(args, lab)  # so are the changes' bad values
    checked_distribution(lab)  # and when its Kafka is not fetched, or the lab's own settings do not hold on it
    headless = args.headless or bool(changes)  # the console opens a lab as shipped; changes run headless
    if not headless and sys.stdout.isatty() and args.repeat == 1 and not args.json and args.record is None:
        return cmd_console(console_args([str(path), *(["--mode", args.mode] if args.mode else []),
                                         *(["--kafka-version", args.kafka_version] if args.kafka_version else []),
                                         *(["--free-ports"] if args.free_ports else []),
                                         *net_proxies_argv(args), *client_argv(args)]))
    console = Console()
    if changes:
        console.print(f"changed: {', '.join(c.text for c in changes)}", highlight=False)
    results: list[RunResult] = []
    for i in range(args.repeat):
        ports = PortChoice.picked(lab) if args.free_ports else None
        if args.repeat > 1:
            console.print(f"[bold]run {i + 1} of {args.repeat}[/]")
        seed = None if args.seed is None else args.seed + i
        runner = HeadlessRun(lab, args.runs_dir, console, seed=seed, ports=ports)
        try:
            result = runner.run()
        except Interrupted as stop:  # the run stopped and wrote its files: --json tells the same story
            if args.json:
                write_json(args.json, [*results, *([stop.result] if stop.result is not None else [])])
            where = f" in {stop.result.run_dir}" if stop.result is not None else ""
            console.print(f"stopped ({stop}): the run's files so far are kept{where}", highlight=False)
            return 130
        finally:
            runner.close()
        results.append(result)
        if args.json:  # written before anything is printed: a closed stdout loses the screen, not the file
            write_json(args.json, results)
        print_result(console, result)
    if args.record is not None:
        render_recording(console, results[-1].run_dir, args.record)
    if any(r.outcome == Outcome.ERROR for r in results):
        return 2 if len(results) == 1 else 1
    return 0 if all(r.passed for r in results) else 1


def print_result(console: Console, result: RunResult) -> None:
    """A headless run's expectations and checks, fitted to the terminal (numbers whole, the words wrapped)."""
    rows = [[escape((f"check at {num(e.at)}s: " if e.at is not None else "") + e.text), num(e.actual),
             "[green]held[/]" if e.held else "[red]did not hold[/]"]  # num: 1234567 whole, not 1.23457e+06
            for e in [*result.expectations, *result.checks]]
    print_fitted(console, [Column("expectation", Fit.WRAP), Column("actual", justify="right"), Column("")], rows,
                 title=f"{escape(result.lab_id)}: {result.outcome}")
    if result.verdict:
        console.print(f"verdict: {result.verdict}", highlight=False)
    for failure in result.failures:
        console.print(f"[red]not shown:[/] {failure}", highlight=False)
    console.print(f"run files: {result.run_dir} ({result.duration_s:.0f}s)", highlight=False)


def render_recording(console: Console, run_dir: Path, cast: Path, speed: float = RECORD_SPEED) -> None:
    """The run's replay, played to its end in a pty of a fixed size, written as a cast."""
    from kafkalab.cast import read_cast, record_headless

    argv = [*python_module("kafkalab"), "replay", str(run_dir), "--speed", f"{speed:g}", "--exit-at-end"]
    with console.status(f"rendering the run's replay into {cast} ({RECORD_SIZE[0]}x{RECORD_SIZE[1]}, "
                        f"{speed:g}x) ..."):
        code = record_headless(argv, cast, *RECORD_SIZE)
    if code != 0:
        raise KafkalabError(f"the replay of {run_dir} ended with exit code {code}: {cast} may be incomplete; "
                            f"try `kafkalab replay {run_dir}`")
    _header, events = read_cast(cast)
    length = events[-1][0] if events else 0.0
    console.print(f"recording written: {cast} ({length:.0f}s; play it: asciinema play {cast})", highlight=False)


def cmd_clean(args: argparse.Namespace) -> int:
    root: Path = args.runs_dir
    if not root.is_dir():
        print(f"no runs in {root}")
        return 0
    from kafkalab.cluster.supervision import running_state_dirs

    busy = {p.resolve() for p in running_state_dirs()}
    runs = sorted((p for p in root.iterdir() if p.is_dir() and ((p / "lab.toml").exists() or (p / "cluster").is_dir())),
                  key=lambda p: p.stat().st_mtime, reverse=True)
    by_lab: dict[str, list[Path]] = {}
    for run in runs:
        by_lab.setdefault(run.name.rsplit("-", 3)[0], []).append(run)
    removed = 0
    cutoff = time.time() - args.older_than * 3600
    for lab_runs in by_lab.values():
        for run in lab_runs[args.keep:]:
            if args.older_than and run.stat().st_mtime > cutoff:
                continue
            if (run / "cluster").resolve() in busy:
                continue  # a run still going on
            shutil.rmtree(run, ignore_errors=True)
            removed += 1
    print(f"removed {removed} runs from {root}")
    return 0
