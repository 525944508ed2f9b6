"""`kafkalab fix LAB`, `kafkalab grades DIR...`: break-fix headless. A fix is graded by running the lab with the
attendee's changes under the same faults, once per seed, each run on a fresh cluster; the grade card says what
held. A room's grade.json files are collected into one class table.

Also what `kafkalab labs` shows of a fix exercise or an incident (the task, never the solution; the ticket,
never the cause until it is named), and the diagnosis an attendee gives (`labs --answer`, `labs --give-up`).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape

from kafkalab.cli.client_args import add_client_args, with_clients
from kafkalab.cli.common import add_net_proxies_arg, add_version_arg, on_platform, with_net_proxies
from kafkalab.cli.tables import Column, Fit, print_fitted
from kafkalab.cluster.spec import MODES
from kafkalab.errors import KafkalabError
from kafkalab.labs import progress
from kafkalab.labs.fix import Change, ChangeKind, FixExercise, Incident, parse_changes
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import (
    GRADE_FILE,
    AttemptHistory,
    Grade,
    GradeOutcome,
    read_grade,
    set_name,
    who_am_i,
)
from kafkalab.labs.grade_consistency import contradictions
from kafkalab.labs.graded import apply_changes, fix_of
from kafkalab.labs.graded_check import CheckStatus, GradedCheck
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.measured import num
from kafkalab.labs.model import Lab, platform_name
from kafkalab.labs.results import RunResult
from kafkalab.labs.reveal import Revealed, revealed
from kafkalab.labs.run import PortChoice
from kafkalab.labs.run_consistency import RESULT_FILE, run_dir_contradictions
from kafkalab.labs.runner import HeadlessRun
from kafkalab.labs.settings_check import check_changes, checked_distribution
from kafkalab.paths import RUNS_DIR

MAX_RUNS = 10  # as a lab's own [fix] runs may ask


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    fix = subparsers.add_parser(
        "fix", help="grade a fix: the lab with your changes, under the same faults, once per seed",
        description="Grade a fix of a lab that has a [fix] table (`kafkalab labs` marks them): the lab runs with "
                    "your changes under the same faults, on a fresh cluster per run, and every check must hold in "
                    "every run. Exit 0 when it passes, 1 when it does not, 2 for bad input.")
    fix.add_argument("lab", help="a lab id, catalog number or .toml path")
    add_change_args(fix, actions=True)
    add_client_args(fix)
    which = fix.add_mutually_exclusive_group()
    which.add_argument("--solution", action="store_true",
                       help="grade the lab's reference solution instead (an instructor's check: must pass)")
    which.add_argument("--wrong", type=int, metavar="K", default=None,
                       help="grade the lab's K-th [[fix.wrong]] (the grader's self-check: must fail)")
    which.add_argument("--shipped", action="store_true",
                       help="grade the lab as shipped, with no change (the grader's self-check: must fail)")
    fix.add_argument("--runs", type=int, default=None, metavar="N",
                     help="graded runs, each with the next seed (default: the lab's [fix] runs)")
    fix.add_argument("--seed", type=int, default=None, metavar="S",
                     help="the first run's seed (default: the lab's [fix] seed)")
    fix.add_argument("--who", default=None, metavar="NAME",
                     help="whose grade it is (default: the name set with `kafkalab grades --set-name`, else "
                          "login@host)")
    fix.add_argument("--hints", type=int, default=None, metavar="N",
                     help="hints taken, each costing its points (default: the hints your progress records)")
    fix.add_argument("--json", metavar="OUT", type=Path, help="write the grade as JSON to OUT")
    fix.add_argument("--mode", choices=MODES, default=None, help="metadata mode (default: the lab's own)")
    add_version_arg(fix)
    add_net_proxies_arg(fix)
    fix.add_argument("--runs-dir", type=Path, default=RUNS_DIR,
                     help=f"where run directories go (default ./{RUNS_DIR})")
    fix.add_argument("--free-ports", action="store_true", help="use free ports for every node")
    fix.set_defaults(func=cmd_fix)

    grades = subparsers.add_parser(
        "grades", help="collect a room's grade.json files into a class table",
        description="Every grade.json under the folders (any layout), one row per attendee and lab: the best "
                    "attempt, how many tries were graded, how many judged nothing (not graded: never a try), "
                    "whether they gave up, and the hints they took.")
    grades.add_argument("dirs", nargs="*", type=Path, metavar="DIR",
                        help=f"folders to search, recursively (default ./{RUNS_DIR}, where your own runs go)")
    grades.add_argument("--csv", action="store_true", help="write CSV to stdout instead of the table")
    grades.add_argument("--check", action="store_true",
                        help="check every grade against its runs, and every run's result, timeline, report and "
                             "logs against each other (exit 1 on any contradiction) instead of the table")
    grades.add_argument("--set-name", metavar="NAME", default=None,
                        help="store NAME as who you are in kafkalab's config (used by `kafkalab fix`) and exit")
    grades.set_defaults(func=cmd_grades)


def add_change_args(parser: argparse.ArgumentParser, actions: bool = False) -> None:
    """-D, --topic, --broker-config (and --action, for a graded fix): the changes a lab runs with."""
    parser.add_argument("-D", dest="settings", action="append", default=[], metavar="NAME=VALUE",
                        help="a producer.* or consumer.* setting, e.g. -D producer.acks=all (repeatable)")
    parser.add_argument("--topic", dest="topics", action="append", default=[], metavar='"NAME rf=N min.isr=N"',
                        help="a topic's replication factor and configs, e.g. --topic \"test-topic rf=3 min.isr=2\"")
    parser.add_argument("--broker-config", dest="brokers", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for every broker, e.g. --broker-config unclean.leader.election.enable=true")
    if actions:
        parser.add_argument("--action", dest="actions", action="append", default=[], metavar='"WHEN -> DO topic T k=v"',
                            help="a live action fired once WHEN holds, e.g. "
                                 "--action \"brokers >= 3 -> replicate topic test-topic rf=3\"")


def changes_of(args: argparse.Namespace, lab: Lab) -> list[Change]:
    """The changes the options give; KafkalabError (one line) on the first bad one, a broker or topic setting
    that the lab's Kafka would not take included."""
    changes = parse_changes(lab.cluster.brokers, args.settings, args.topics, args.brokers,
                            getattr(args, "actions", ()))
    check_changes(lab, changes)
    return changes


def changed_lab(args: argparse.Namespace, lab: Lab) -> tuple[Lab, list[Change]]:
    """A plain run's lab with the options' changes applied (no allow-list: only bad values are refused)."""
    changes = changes_of(args, lab)
    return apply_changes(lab, changes), changes


# ---- kafkalab fix --------------------------------------------------------------------------------------
def attempt_of(args: argparse.Namespace) -> FixAttempt:
    """Everything checked before the first cluster starts: the lab, its fix, the changes, the counts."""
    lab = with_clients(with_net_proxies(on_platform(load_lab(find_lab(args.lab)), args), args), args)
    fix = fix_of(lab)
    given = changes_of(args, lab)
    which = ("--solution" if args.solution else "--shipped" if args.shipped
             else "--wrong" if args.wrong is not None else "")
    if which and given:
        raise KafkalabError(f"{which} grades the lab's own changes: give it without -D, --topic, --broker-config "
                            "or --action")
    if args.solution:
        changes: Sequence[Change] = fix.solution
    elif args.wrong is not None:
        if not fix.wrong:
            raise KafkalabError(f"lab {lab.id} has no [[fix.wrong]]: --wrong grades one of a lab's wrong fixes")
        if not 1 <= args.wrong <= len(fix.wrong):
            raise KafkalabError(f"--wrong {args.wrong}: lab {lab.id} has wrong fixes 1..{len(fix.wrong)}")
        changes = fix.wrong[args.wrong - 1]
    elif args.shipped:
        changes = []
    elif missing := [role for role in fix.code if not any(r.startswith(role) for r in lab.foreign_roles)]:
        raise KafkalabError(f"lab {lab.id}'s fix is a code change: give your {missing[0]} with --{missing[0]}-cmd CMD "
                            "(it runs under the same faults; `kafkalab labs --show` says what it must do)")
    elif not given and not lab.foreign_roles:
        raise KafkalabError("give your fix: -D NAME=VALUE, --topic \"NAME rf=N\", --broker-config NAME=VALUE, "
                            "--action \"WHEN -> DO ...\", or your own client: --producer-cmd/--consumer-cmd CMD "
                            "(--shipped grades the lab with no change)")
    else:
        changes = given
    if args.runs is not None and not 1 <= args.runs <= MAX_RUNS:
        raise KafkalabError(f"--runs {args.runs}: give 1..{MAX_RUNS}")
    history = progress.load(lab.id).history() if own_attempt(args) else AttemptHistory()
    hints = history.hints_taken if args.hints is None else args.hints
    if not 0 <= hints <= len(fix.hints):
        raise KafkalabError(f"--hints {hints}: lab {lab.id} has {len(fix.hints)} hints: give 0..{len(fix.hints)}")
    attempt = FixAttempt(lab, changes, who_am_i(args.who), history=replace(history, hints_taken=hints),
                         solution=args.solution, runs=args.runs, first_seed=args.seed)
    checked_distribution(attempt.lab)  # its Kafka fetched, and the lab's own settings valid on it
    return attempt


def own_attempt(args: argparse.Namespace) -> bool:
    """The attendee's own fix (counted in their progress), not one of the lab's own changes graded."""
    return not (args.solution or args.shipped or args.wrong is not None)


def cmd_fix(args: argparse.Namespace) -> int:
    attempt = attempt_of(args)
    console = Console()
    what = ", ".join(c.text for c in attempt.changes) or "no change (the lab as shipped)"
    console.print(f"[bold]grading[/] {attempt.lab_id} for {attempt.who}: {what}; {len(attempt.seeds)} run(s), "
                  f"seeds {', '.join(map(str, attempt.seeds))}", highlight=False)

    def run_one(lab: Lab, seed: int) -> RunResult:
        ports = PortChoice.picked(lab) if args.free_ports else None
        result = HeadlessRun(lab, args.runs_dir, console, seed=seed, ports=ports).run()
        console.print(f"run with seed {seed}: {result.outcome}, files: {result.run_dir} ({result.duration_s:.0f}s)",
                      highlight=False)
        if result.error:  # a run that could not go on (a broker your change kept from starting...): say why
            console.print(f"[red]ended early:[/] {result.error}", highlight=False)
        return result

    def say(status: CheckStatus) -> None:
        if status.running:
            console.print(f"[bold]{status.text}[/] (seed {attempt.seeds[status.run - 1]})", highlight=False)

    check = GradedCheck(attempt, run_one, say)
    try:
        status = check.run()
    except KeyboardInterrupt:
        console.print("stopped: no grade; the runs' files so far are kept", highlight=False)
        return 130
    g = status.grade
    if g is None:  # no run dir to hold a grade: why, and what to do
        console.print(f"[bold yellow]NOT GRADED:[/] {status.reason}. Nothing was judged; check again.",
                      highlight=False)
        return 1
    print_grade(console, g)
    console.print(f"grade written: {Path(g.runs[-1]) / GRADE_FILE}", highlight=False)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(_json(g), encoding="utf-8")
        console.print(f"grade as JSON: {args.json}", highlight=False)
    if own_attempt(args):
        _record(attempt, g)
    return 0 if g.all_held else 1  # --solution: the reference solution shown to pass (never scored)


def _json(g: Grade) -> str:
    return json.dumps(g.as_dict(), indent=2) + "\n"


def _record(attempt: FixAttempt, g: Grade) -> None:
    """An attendee's own attempt goes into their progress: solved, the best score, the hints counted."""
    p = progress.load(attempt.lab_id)
    p.graded(g)
    progress.save(attempt.lab_id, p)


def print_grade(console: Console, g: Grade) -> None:
    """The grade card: a row per check (PASS/FAIL, seen, wanted, runs it held in), the rules, score, verdict;
    a NOT GRADED one only why and what to do."""
    style = "green" if g.passed else "yellow" if not g.graded else "red"
    if g.graded:
        rows = [[f"[{row.mark.colour}]{row.mark}[/]", escape(row.text), escape(row.seen_text),
                 escape(row.wanted_text), f"{row.runs_held}/{row.runs} runs"] for row in g.rows]
        print_fitted(console, [Column(""), Column("check", Fit.WRAP), Column("seen", justify="right"),
                               Column("wanted", Fit.WRAP), Column("held in", justify="right")], rows,
                     title=f"{escape(g.lab_id)}: grade of {escape(g.who)}")
    if g.loss:
        console.print(f"lost in the last graded run: {g.loss}", highlight=False)
    if g.changes:
        console.print(f"changes: {', '.join(g.changes)}", highlight=False)
    for says in g.rules:
        console.print(f"- {says}", highlight=False)
    if g.graded:
        console.print(f"score: {g.score_text} {g.score_notes}".rstrip(), highlight=False)
    console.print(f"[bold {style}]{escape(g.verdict)}[/]", highlight=False)
    if g.todo:
        console.print(g.todo, highlight=False)


# ---- kafkalab grades -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClassRow:
    """One attendee's attempts at one lab: the best graded one, how many were tries (graded: fixed or not),
    how many judged nothing (not graded: never tries), whether they gave up, the most hints taken."""

    best: Grade
    tries: int
    not_graded: int
    given_up: bool
    hints: int
    path: Path

    @property
    def solved(self) -> str:
        if self.best.passed:
            return "PASS after giving up" if self.best.given_up else "PASS"
        if self.best.outcome == GradeOutcome.SOLUTION:
            return "given up"
        return "not graded" if not self.best.graded else "FAIL"

    @property
    def score(self) -> str:
        return "-" if self.best.score is None else str(self.best.score)


def _rank(g: Grade) -> tuple[bool, int, bool, bool, float]:
    # a pass beats anything, a higher score a lower, any judged attempt one that judged nothing; then the last
    return g.passed, g.score or 0, g.graded, g.outcome == GradeOutcome.NOT_FIXED, g.finished_at


def find_grades(dirs: Iterable[Path], say_empty: bool = True) -> tuple[list[tuple[Path, Grade]], int]:
    """Every readable grade under ``dirs`` (each once), and how many folders held none; one line on stderr per
    folder without grades (unless not ``say_empty``: `--check` reads runs there too) and per grade file that
    cannot be read."""
    found: dict[Path, Grade] = {}
    empty = 0
    for folder in dirs:
        if not folder.is_dir():
            print(f"kafkalab: {folder}: no such folder", file=sys.stderr)
            empty += 1
            continue
        paths = sorted(folder.rglob(GRADE_FILE))
        if not paths:
            if say_empty:
                print(f"kafkalab: {folder}: no {GRADE_FILE} in it", file=sys.stderr)
            empty += 1
        for path in paths:
            key = path.resolve()
            if key in found:
                continue
            try:
                found[key] = read_grade(path)
            except KafkalabError as exc:
                print(f"kafkalab: skipped: {exc}", file=sys.stderr)
    return list(found.items()), empty


def class_rows(grades: Sequence[tuple[Path, Grade]]) -> list[ClassRow]:
    """The best attempt per (who, lab), by who then lab."""
    by: dict[tuple[str, str], list[tuple[Path, Grade]]] = {}
    for path, g in grades:
        by.setdefault((g.who, g.lab_id), []).append((path, g))
    rows = []
    for key in sorted(by):
        attempts = [g for _p, g in by[key]]
        path, best = max(by[key], key=lambda pg: _rank(pg[1]))
        rows.append(ClassRow(
            best, tries=sum(g.outcome in (GradeOutcome.FIXED, GradeOutcome.NOT_FIXED) for g in attempts),
            not_graded=sum(not g.graded for g in attempts), given_up=any(g.given_up for g in attempts),
            hints=max(g.hints_taken for g in attempts), path=path))
    return rows


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def time_text(g: Grade) -> str:
    runs = f"{duration(g.duration_s)} runs"
    return runs if g.time_on_task_s is None else f"{runs}, {duration(g.time_on_task_s)} on task"


CSV_HEADER = ("who", "lab", "solved", "score", "tries", "not_graded", "given_up", "hints_taken", "runs_s",
              "time_on_task_s", "finished_at", "grade_file")


def cmd_grades(args: argparse.Namespace) -> int:
    if args.set_name is not None:
        name = args.set_name.strip()
        if not name:
            raise KafkalabError("--set-name: give a name, e.g. --set-name \"Ada L.\"")
        path = set_name(name)
        print(f"you are {name} on your grades from now on (kept in {path})")
        return 0
    if not args.dirs:  # an attendee's own grades: where `kafkalab fix` and the console put their runs
        if not RUNS_DIR.is_dir():
            raise KafkalabError(f"no ./{RUNS_DIR} here: give the folders to collect grade.json files from, e.g. "
                                "kafkalab grades ./handed-in")
        args.dirs = [RUNS_DIR]
    grades, _empty = find_grades(args.dirs, say_empty=not args.check)
    if args.check:  # run dirs without a grade are checked too
        return check_grades(grades, args.dirs)
    if not grades:
        raise KafkalabError(f"no {GRADE_FILE} in {', '.join(map(str, args.dirs))}: `kafkalab fix` writes one in "
                            "its last run's folder")
    rows = class_rows(grades)
    if args.csv:
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(CSV_HEADER)
        for r in rows:
            g = r.best
            out.writerow((g.who, g.lab_id, r.solved, "" if g.score is None else g.score, r.tries, r.not_graded,
                          "yes" if r.given_up else "no", r.hints, num(g.duration_s),
                          "" if g.time_on_task_s is None else num(g.time_on_task_s),
                          datetime.fromtimestamp(g.finished_at).isoformat(timespec="seconds"), str(r.path)))
        return 0
    cells = []
    for r in rows:
        g = r.best
        style = "green" if g.passed and not r.given_up else "yellow" if g.passed or r.given_up or not g.graded \
            else "red"
        cells.append([escape(g.who), g.lab_id, f"[{style}]{r.solved}[/]", r.score, str(r.tries),
                      str(r.not_graded), "yes" if r.given_up else "no", str(r.hints), time_text(g)])
    # a name may wrap between its words, a lab id and the numbers never
    print_fitted(Console(), [Column("who", Fit.WRAP), Column("lab"), Column("solved", Fit.WRAP),
                             Column("score", justify="right"), Column("tries", justify="right"),
                             Column("not graded", Fit.WRAP, justify="right"), Column("gave up"),
                             Column("hints", justify="right"), Column("time", Fit.WRAP)], cells,
                 title=f"kafkalab grades: {len(rows)} attendee-lab pairs, {len(grades)} attempts")
    return 0


def check_grades(grades: Sequence[tuple[Path, Grade]], dirs: Sequence[Path]) -> int:
    """`grades --check`: every grade against its runs' files, and every run under ``dirs`` that no grade names
    against its own files; a line per contradiction, exit 1 on any."""
    graded = {Path(run).resolve() for _path, g in grades for run in g.runs}
    found = {p.parent.resolve(): p.parent for d in dirs if d.is_dir() for p in d.rglob(RESULT_FILE)}
    runs = [found[key] for key in sorted(found.keys() - graded)]
    if not grades and not runs:
        raise KafkalabError(f"no {GRADE_FILE} and no run's {RESULT_FILE} in {', '.join(map(str, dirs))}: give the "
                            "folders of runs (kafkalab-runs) or of the grades collected")
    problems = [(path, problem) for path, g in grades for problem in contradictions(g)]
    problems += [(run, problem) for run in runs for problem in run_dir_contradictions(run)]
    for path, problem in problems:
        print(f"{path}: {problem}")
    print(f"{len(grades)} grade(s) checked against their runs, {len(runs)} run(s) without a grade against their "
          "own files: " + (f"{len(problems)} contradiction(s)" if problems else "every one consistent"))
    return 1 if problems else 0


# ---- what `kafkalab labs` shows and records of a fix exercise or an incident ----------------------------
def show_fix(console: Console, lab: Lab, fix: FixExercise) -> None:
    """The task, what may be changed and when hints come: never the solution or the rules."""
    console.print("\n[bold]Fix it[/]")
    console.print(Markdown(fix.task))
    console.print(f"you may change: {', '.join(fix.allow)} (never the workload's size: how many records, how fast, "
                  "to which topic)", highlight=False)
    console.print(f"graded: {fix.runs} run(s) under the same faults, every check must hold in each", highlight=False)
    for i, hint in enumerate(fix.hints, start=1):
        console.print(f"hint {i}: offered after {duration(hint.after_s)}, costs {hint.cost} points", highlight=False)
    console.print(f"grade a fix: kafkalab fix {lab.id} -D NAME=VALUE | --topic \"T rf=N\" | --broker-config NAME=VALUE",
                  highlight=False)


def show_incident(console: Console, lab: Lab, incident: Incident, shown: Revealed) -> None:
    """The ticket and the question; the cause once named, the cure once solved."""
    console.print(f"[bold]Incident[/] ({lab.id})\n")
    console.print(Markdown(incident.ticket))
    console.print(f"\n[bold]{incident.question}[/]", highlight=False)
    for i, choice in enumerate(incident.choices, start=1):
        mark = "  <- the cause" if shown.cause and incident.is_right(i - 1) else ""
        console.print(f"  {i}. {choice}{mark}", highlight=False)
    if shown.cause:
        show_answer(console, shown)
    else:
        console.print(f"\nanswer: kafkalab labs --answer {lab.id} N; give up: kafkalab labs --give-up {lab.id}",
                      highlight=False)


def show_answer(console: Console, shown: Revealed) -> None:
    """The cause, then the cure (Markdown, as the ticket): as much of them as the attendee's progress reveals."""
    for head, text in (("The cause", shown.cause), ("The cure", shown.cure)):
        if text:
            console.print(f"\n[bold]{head}[/]", highlight=False)
            console.print(Markdown(text))


def show_lab(console: Console, lab: Lab) -> None:
    """`labs --show`: an incident's ticket, its cause once named, its walkthrough once solved (a fix exercise's
    title names its lesson: its walkthrough is shown); then the fix's task, before and after the diagnosis."""
    shown = revealed(lab, progress.load(lab.id))
    if lab.incident is None or shown.walkthrough:
        console.print(f"[bold]{lab.title}[/] ({lab.id})\n")
        console.print(Markdown(lab.instructions))
        console.print(f"\n[bold]Why it works every time:[/] {lab.why_deterministic}", highlight=False)
    if lab.incident is not None:
        if shown.walkthrough:
            console.print()
        show_incident(console, lab, lab.incident, shown)
    if lab.fix is not None:
        show_fix(console, lab, lab.fix)
    show_platforms(console, lab)


def show_platforms(console: Console, lab: Lab) -> None:
    """Every mode and Kafka version the lab runs on, each with the command that runs it there (a line of its
    own: at 80 columns a command beside its platform would wrap inside the command)."""
    own = (lab.cluster.mode, lab.cluster.kafka_version)
    console.print("\n[bold]Runs on[/] (kafkalab console and kafkalab fix take the same options):", highlight=False)
    for mode, version in sorted(lab.cluster.platforms(), key=lambda p: p != own):
        plain = " [dim](a plain run's)[/]" if (mode, version) == own else ""
        console.print(f"  {platform_name(mode, version)}{plain}\n      [bold]{lab.run_command(mode, version)}[/]",
                      highlight=False)


def incident_of(lab: Lab) -> Incident:
    if lab.incident is None:
        raise KafkalabError(f"lab {lab.id} is no incident: `kafkalab labs` marks the labs that are")
    return lab.incident


def answer(console: Console, lab: Lab, choice: str) -> int:
    """`labs --answer LAB N`: right, the cause revealed (0); wrong, one line and counted (1)."""
    incident = incident_of(lab)
    if not choice.isdigit() or not 1 <= int(choice) <= len(incident.choices):
        raise KafkalabError(f"--answer {lab.id} {choice}: give a choice 1..{len(incident.choices)} "
                            f"(kafkalab labs --show {lab.id} lists them)")
    p = progress.load(lab.id)
    right = incident.is_right(int(choice) - 1)
    p.answered(right)
    progress.save(lab.id, p)
    if right:  # the cause explained, never the cure: that is what the fix exercise asks for next
        console.print(f"[bold green]right:[/] choice {choice} is the cause", highlight=False)
        show_answer(console, revealed(lab, p))
        if lab.fix is not None:
            show_fix(console, lab, lab.fix)
        return 0
    console.print(f"{choice}. {incident.choices[int(choice) - 1]}: not the cause", highlight=False)
    return 1


def give_up(console: Console, lab: Lab) -> int:
    """`labs --give-up LAB`: the cause, the cure and the reference solution shown, progress says so."""
    if lab.incident is None and lab.fix is None:
        raise KafkalabError(f"lab {lab.id} has no incident and no fix exercise: nothing to give up")
    p = progress.load(lab.id)
    p.given_up = True
    progress.save(lab.id, p)
    shown = revealed(lab, p)
    show_answer(console, shown)
    if lab.fix is not None:
        console.print("\n[bold]The solution:[/] " + "; ".join(_as_option(c) for c in shown.solution),
                      highlight=False)
        console.print(f"see it graded: kafkalab fix {lab.id} --solution", highlight=False)
    return 0


def _as_option(change: Change) -> str:
    """A change as the command line gives it."""
    match change.kind:
        case ChangeKind.SETTING:
            return f"-D {change.text}"
        case ChangeKind.BROKER:
            return f"--broker-config {change.name.removeprefix('broker.')}={change.value}"
        case ChangeKind.TOPIC:
            short = {"replication_factor": "rf", "min.insync.replicas": "min.isr"}.get(change.topic_key,
                                                                                     change.topic_key)
            return f"--topic \"{change.topic} {short}={change.value}\""
        case ChangeKind.ACTION:
            return f"--action \"{change.value}\""
