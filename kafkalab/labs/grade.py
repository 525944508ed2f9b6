"""A graded fix attempt: one row per expectation over every seeded run, the rules that name what mattered,
the score, and the grade.json a room's grades are collected from (`kafkalab grades`)."""

from __future__ import annotations

import getpass
import json
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.labs.expectations import OPS
from kafkalab.labs.fix import Change, FixExercise
from kafkalab.labs.results import FaultStatus, Outcome, RunResult, num
from kafkalab.paths import state_root

GRADE_FILE = "grade.json"
FAULTS_ROW = "the lab's faults all fired"
ACTIONS_ROW = "your actions all fired"


@dataclass(frozen=True)
class GradeRow:
    """One thing that must hold: PASS when it held in every graded run; ``seen`` is the value of the first run
    where it did not (else of the last run), ``wanted`` what it was held against."""

    text: str
    passed: bool
    seen: float | None
    wanted: float | None
    runs_held: int = 0
    runs: int = 0

    @property
    def seen_text(self) -> str:
        return num(self.seen)

    @property
    def wanted_text(self) -> str:
        if self.wanted is None:
            return "-"
        words = self.text.split()
        # an expectation's row reads "lost == 0"; the faults' and actions' rows are sentences: "== N" for them
        op = words[1] if len(words) > 2 and words[1] in OPS else "=="
        return f"{op} {num(self.wanted)}"


@dataclass
class Grade:
    lab_id: str
    who: str
    changes: list[str]
    rows: list[GradeRow]
    rules: list[str]
    hints_taken: int
    hint_cost: int
    score: int
    passed: bool
    runs: list[str] = field(default_factory=list)  # the run dirs, in order
    seeds: list[int] = field(default_factory=list)
    duration_s: float = 0.0  # of the graded runs
    time_on_task_s: float | None = None  # from the task shown to the grade (the console)
    given_up: bool = False
    ended_early: list[str] = field(default_factory=list)  # "graded run 2 ended early: why": nothing judged there
    mode: str = ""
    kafka_version: str = ""
    finished_at: float = field(default_factory=time.time)

    @property
    def verdict(self) -> str:
        if self.given_up:
            return "given up: the reference solution was run"
        if self.passed:
            runs = "the graded run" if len(self.runs) == 1 else f"all {len(self.runs)} graded runs"
            return f"FIXED: every check held in {runs} under the same faults"
        if self.ended_early:  # the cluster or the machine failed the run, not the attendee's fix: say so
            return (f"NOT GRADED: {self.ended_early[0]}"
                    + (f" (and {len(self.ended_early) - 1} more)" if len(self.ended_early) > 1 else "")
                    + "; check again")
        failing = [r.text for r in self.rows if not r.passed]
        return f"NOT FIXED YET: {', '.join(failing[:3])} did not hold"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Grade:
        d = {k: v for k, v in d.items() if k != "verdict"}
        d["rows"] = [GradeRow(**r) for r in d.get("rows", [])]
        return cls(**d)

    def write(self, run_dir: Path) -> Path:
        path = Path(run_dir) / GRADE_FILE
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n", encoding="utf-8")
        return path


def read_grade(path: Path) -> Grade:
    try:
        return Grade.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise KafkalabError(f"{path} is not a kafkalab grade file ({exc}): give folders of grade.json files") from None


def grade(fix: FixExercise, lab_id: str, changes: Sequence[Change], results: Sequence[RunResult], who: str,
          hints_taken: int = 0, given_up: bool = False) -> Grade:
    """The grade of ``results``, the graded runs of ``changes``: a row per expectation of the fix (held in
    every run), a row for the lab's faults and one for the attendee's actions, then the score."""
    rows = [_row(text, [_held(r, text) for r in results]) for text in _texts(results, fix)]
    ended_early = []
    for n, r in enumerate(results, start=1):
        if r.outcome in (Outcome.ERROR, Outcome.STOPPED):
            rows.append(GradeRow(f"run {n} ran to its end", False, None, None, 0, 1))
            ended_early.append(f"graded run {n} ended early: {r.error or r.outcome}")
    passed = bool(results) and all(row.passed for row in rows) and not given_up
    hint_cost = sum(h.cost for h in fix.hints[:hints_taken])
    score = max(0, fix.max_score - hint_cost) if passed else 0
    return Grade(
        lab_id=lab_id, who=who, changes=[c.text for c in changes], rows=rows,
        rules=fix.rules_for(changes, passed), hints_taken=hints_taken, hint_cost=hint_cost, score=score,
        passed=passed, runs=[str(r.run_dir) for r in results], seeds=[r.seed for r in results],
        duration_s=round(sum(r.duration_s for r in results), 1), given_up=given_up, ended_early=ended_early,
    )


def _texts(results: Sequence[RunResult], fix: FixExercise) -> list[str]:
    texts = [e.text for e in fix.expectations]
    texts.append(FAULTS_ROW)
    if any(_action_rows(r) for r in results):
        texts.append(ACTIONS_ROW)
    return texts


def _action_rows(result: RunResult) -> list[FaultStatus]:
    return [f for f in result.faults if f.attendee]


def _held(result: RunResult, text: str) -> tuple[bool, float | None, float | None]:
    if text == FAULTS_ROW:
        lab_faults = [f for f in result.faults if not f.attendee]
        wrong = sum(f.went_wrong for f in lab_faults)
        return wrong == 0, float(len(lab_faults) - wrong), float(len(lab_faults))
    if text == ACTIONS_ROW:
        actions = _action_rows(result)
        wrong = sum(f.went_wrong for f in actions)
        return wrong == 0, float(len(actions) - wrong), float(len(actions))
    for e in result.expectations:
        if e.text == text:
            return e.held, e.actual, e.wanted
    return False, None, None  # the run ended before it was judged


def _row(text: str, per_run: list[tuple[bool, float | None, float | None]]) -> GradeRow:
    held = sum(h for h, _, _ in per_run)
    first_bad = next((x for x in per_run if not x[0]), None)
    _, seen, wanted = first_bad or (per_run[-1] if per_run else (False, None, None))
    return GradeRow(text, bool(per_run) and held == len(per_run), seen, wanted, held, len(per_run))


# ---- who the attendee is ---------------------------------------------------------------------------
def config_path() -> Path:
    return state_root() / "config.json"


def who_am_i(given: str | None = None) -> str:
    """``--who``, else the name set once in kafkalab's config (``kafkalab grades --set-name``), else login@host."""
    if given:
        return given
    try:
        name = json.loads(config_path().read_text(encoding="utf-8")).get("name")
        if isinstance(name, str) and name:
            return name
    except (OSError, ValueError):
        pass
    try:
        login = getpass.getuser()
    except (KeyError, OSError):
        login = os.environ.get("USER", "someone")
    return f"{login}@{socket.gethostname()}"


def set_name(name: str) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data["name"] = name
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path
