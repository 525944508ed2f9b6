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
from enum import StrEnum
from pathlib import Path
from typing import Any

from kafkalab.analysis.report import loss_split
from kafkalab.errors import KafkalabError
from kafkalab.labs.expectations import OPS
from kafkalab.labs.fix import Change, FixExercise
from kafkalab.labs.measured import Measured, Unmeasured, measured_from_json, num
from kafkalab.labs.results import FaultStatus, Outcome, RunResult
from kafkalab.labs.wording import unmet
from kafkalab.paths import state_root

GRADE_FILE = "grade.json"
FAULTS_ROW = "the lab's faults all fired"
ACTIONS_ROW = "your actions all fired"
COUNTED_ROWS = {FAULTS_ROW: "the lab's {n} faults fired", ACTIONS_ROW: "your {n} actions fired"}  # when they fail
# once the reference solution has been shown, a passing fix earns at most this share of the score: solving
# with the answer seen is worth something, never as much as solving without it (nor less than a hint costs)
GIVEN_UP_CAP_PERCENT = 50


class GradeOutcome(StrEnum):
    FIXED = "fixed"  # every check held in every graded run
    NOT_FIXED = "not fixed"  # a check did not hold
    NOT_GRADED = "not graded"  # a graded run ended early, or what the checks need was not observed: nothing judged
    SOLUTION = "solution"  # the reference solution, run graded on giving up: shown, never scored


class RowMark(StrEnum):
    """How a grade row reads on every card: a value not observed (a foreign client that does not report it)
    judges nothing, so it is neither a pass nor a fail."""

    PASS = "PASS"
    FAIL = "FAIL"
    NOT_JUDGED = "NOT JUDGED"

    @property
    def colour(self) -> str:
        """Its colour on every card, the console's and the command line's."""
        return {RowMark.PASS: "green", RowMark.FAIL: "red", RowMark.NOT_JUDGED: "yellow"}[self]


@dataclass(frozen=True)
class AttemptHistory:
    """What the attendee did before this attempt, carried on every grade: hints taken, whether they gave up
    (the solution was shown), how many checks before this one were not graded."""

    hints_taken: int = 0
    given_up: bool = False
    not_graded: int = 0


NO_HISTORY = AttemptHistory()  # a first attempt, or one of the lab's own changes graded (an instructor's)

@dataclass(frozen=True)
class GradeRow:
    """One thing that must hold: PASS when it held in every graded run; ``seen`` is the value of the first run
    where it did not (else of the last run), ``wanted`` what it was held against."""

    text: str
    passed: bool
    seen: Measured | None
    wanted: Measured | None
    runs_held: int = 0
    runs: int = 0

    @property
    def mark(self) -> RowMark:
        if self.passed:
            return RowMark.PASS
        return RowMark.NOT_JUDGED if self.seen == Unmeasured.NOT_OBSERVED else RowMark.FAIL

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

    @property
    def sentence(self) -> str:
        """What did not hold, as the verdict says it (the card's check column keeps the expression)."""
        if self.text in COUNTED_ROWS:
            return f"only {num(self.seen)} of {COUNTED_ROWS[self.text].format(n=num(self.wanted))}"
        return unmet(self.text, self.seen, self.wanted)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GradeRow:
        return cls(**{**d, "seen": measured_from_json(d.get("seen")), "wanted": measured_from_json(d.get("wanted"))})


@dataclass
class Grade:
    """A graded attempt. A NOT_GRADED one has no rows, rules or score: only why (``ended_early``)."""

    lab_id: str
    who: str
    changes: list[str]
    rows: list[GradeRow]
    rules: list[str]
    hints_taken: int
    hint_cost: int
    score: int | None  # None: not graded, or the reference solution (never scored)
    outcome: GradeOutcome
    max_score: int = 100
    runs: list[str] = field(default_factory=list)  # the run dirs, in order
    seeds: list[int] = field(default_factory=list)
    duration_s: float = 0.0  # of the graded runs
    time_on_task_s: float | None = None  # from the task shown to the grade (the console)
    given_up: bool = False  # the attendee had given up (seen the solution) by this attempt
    not_graded_before: int = 0  # checks of this exercise before this one that were not graded
    ended_early: list[str] = field(default_factory=list)  # NOT_GRADED: "graded run 2 ended early: why"
    unobserved: list[str] = field(default_factory=list)  # NOT_GRADED: the checks whose values were not observed
    lab_sha256: str = ""  # the lab file the runs ran, as each run's result.json records it
    loss: str = ""  # in the last graded run, what of "lost" the brokers lost and the consumers missed (an audit's)
    mode: str = ""
    kafka_version: str = ""
    finished_at: float = field(default_factory=time.time)

    @property
    def passed(self) -> bool:
        """The attendee's fix passed (the reference solution's run is no pass of theirs)."""
        return self.outcome == GradeOutcome.FIXED

    @property
    def graded(self) -> bool:
        return self.outcome != GradeOutcome.NOT_GRADED

    @property
    def all_held(self) -> bool:
        """Every check held in every run (a fix that passed, or the reference solution shown to work)."""
        return self.graded and bool(self.rows) and all(row.passed for row in self.rows)

    @property
    def capped(self) -> bool:
        """Its score is capped: a fix that passed after the solution was shown."""
        return self.passed and self.given_up

    @property
    def verdict(self) -> str:
        runs = "the graded run" if len(self.runs) == 1 else f"all {len(self.runs)} graded runs"
        match self.outcome:
            case GradeOutcome.NOT_GRADED:  # the cluster, the machine or the clients failed the run, not the fix
                why = self.not_graded_why
                more = f" (and {len(why) - 1} more)" if len(why) > 1 else ""
                return f"NOT GRADED: {why[0]}{more}. Nothing was judged."
            case GradeOutcome.SOLUTION:
                if all(r.passed for r in self.rows):
                    return f"THE REFERENCE SOLUTION: every check held in {runs}; it is shown, not scored"
                return "THE REFERENCE SOLUTION did not pass: the lab's grader is wrong, tell the instructor"
            case GradeOutcome.FIXED:
                after = " (after giving up)" if self.given_up else ""
                return f"FIXED{after}: every check held in {runs} under the same faults"
        failing = [r.sentence for r in self.rows if not r.passed]
        more = f"; and {len(failing) - 3} more on the card" if len(failing) > 3 else ""
        return f"NOT FIXED YET: {'; '.join(failing[:3])}{more}"

    @property
    def not_graded_why(self) -> list[str]:
        """Why nothing was judged, a sentence each (empty unless NOT_GRADED)."""
        if self.outcome != GradeOutcome.NOT_GRADED:
            return []
        why = list(self.ended_early)
        if self.unobserved:
            why.append(f"not observed in the graded runs: {', '.join(self.unobserved)}")
        return why or ["no graded run ran"]

    @property
    def score_text(self) -> str:
        """"90 / 100", or why there is no score."""
        if self.outcome == GradeOutcome.NOT_GRADED:
            return "no score: not graded"
        if self.score is None:
            return "not scored: the reference solution"
        return f"{self.score} / {self.max_score}"

    @property
    def score_notes(self) -> str:
        """What took points off the score, or capped it: "(1 hint(s) taken: -10 points; given up ...)"."""
        notes = []
        if self.hint_cost:
            notes.append(f"{self.hints_taken} hint(s) taken: -{self.hint_cost} points")
        if self.capped:
            notes.append(f"given up before this fix: a fix after the solution scores at most {cap(self.max_score)}")
        return f"({'; '.join(notes)})" if notes else ""

    @property
    def todo(self) -> str:
        """What to do next, in words the console and the command line both use."""
        match self.outcome:
            case GradeOutcome.NOT_GRADED if self.unobserved and not self.ended_early:
                return ("kafkalab could not observe what these checks need: if your own client played a role, "
                        "check with kafkalab's clients (clients python), or have it report them (docs: Your own "
                        "client in a lab)")
            case GradeOutcome.NOT_GRADED:
                return "your fix was not judged: check it again (f, or the same kafkalab fix command)"
            case GradeOutcome.NOT_FIXED:
                return "change something, then check again"
            case GradeOutcome.SOLUTION:
                return "now make the fix yourself and check it: it scores at most " \
                       f"{cap(self.max_score)} after giving up"
        return ""

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict
        d["passed"] = self.passed  # for readers of grade.json that know only pass or fail
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Grade:
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        raw = dict(d)
        if "outcome" not in raw:  # a grade.json from before outcomes: its given_up meant the solution's run
            raw["outcome"] = (GradeOutcome.SOLUTION if raw.get("given_up") else GradeOutcome.NOT_GRADED
                              if raw.get("ended_early") else GradeOutcome.FIXED if raw_passed(d) else
                              GradeOutcome.NOT_FIXED)
        raw["outcome"] = GradeOutcome(raw["outcome"])
        raw["rows"] = [GradeRow.from_dict(r) for r in raw.get("rows", [])]
        return cls(**raw)

    def write(self, run_dir: Path) -> Path:
        path = Path(run_dir) / GRADE_FILE
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n", encoding="utf-8")
        return path


def raw_passed(d: dict[str, Any]) -> bool:
    return bool(d.get("passed", False)) or (bool(d.get("rows")) and all(r.get("passed") for r in d["rows"]))


def cap(max_score: int) -> int:
    return max_score * GIVEN_UP_CAP_PERCENT // 100


def score_of(max_score: int, hint_cost: int, given_up: bool) -> int:
    """A passing fix's score: the hints' cost off the top, and never above the cap once the solution was seen."""
    score = max(0, max_score - hint_cost)
    return min(score, cap(max_score)) if given_up else score


def read_grade(path: Path) -> Grade:
    try:
        return Grade.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise KafkalabError(f"{path} is not a kafkalab grade file ({exc}): give folders of grade.json files") from None


def ended_early(results: Sequence[RunResult]) -> list[str]:
    """Why each graded run that did not run to its end did not: such a run judges nothing."""
    return [f"graded run {n} ended early: {r.error or r.outcome}" for n, r in enumerate(results, start=1)
            if r.outcome in (Outcome.ERROR, Outcome.STOPPED)]


def grade(fix: FixExercise, lab_id: str, changes: Sequence[Change], results: Sequence[RunResult], who: str,
          history: AttemptHistory = NO_HISTORY, solution: bool = False) -> Grade:
    """The grade of ``results``, the graded runs of ``changes``: a row per expectation of the fix (held in
    every run), a row for the lab's faults and one for the attendee's actions, then the score. When a run
    ended early, or none ran, nothing is judged: NOT_GRADED, without rows, rules or score."""
    hint_cost = sum(h.cost for h in fix.hints[:history.hints_taken])
    common: dict[str, Any] = dict(
        lab_id=lab_id, who=who, changes=[c.text for c in changes], hints_taken=history.hints_taken,
        hint_cost=hint_cost, max_score=fix.max_score, runs=[str(r.run_dir) for r in results],
        seeds=[r.seed for r in results], duration_s=round(sum(r.duration_s for r in results), 1),
        given_up=history.given_up, not_graded_before=history.not_graded,
        lab_sha256=results[0].lab_sha256 if results else "")
    early = ended_early(results)
    if early or not results:
        return Grade(rows=[], rules=[], score=None, outcome=GradeOutcome.NOT_GRADED,
                     ended_early=early or ["no graded run ran"], **common)
    rows = [_row(text, [_held(r, text) for r in results]) for text in _texts(results, fix)]
    unjudged = [row.text for row in rows if row.mark == RowMark.NOT_JUDGED]
    if unjudged and not any(row.mark == RowMark.FAIL for row in rows):  # what was seen failed nothing: no verdict
        return Grade(rows=[], rules=[], score=None, outcome=GradeOutcome.NOT_GRADED, unobserved=unjudged, **common)
    held = all(row.passed for row in rows)
    if solution:
        outcome, score = GradeOutcome.SOLUTION, None
    elif held:
        outcome, score = GradeOutcome.FIXED, score_of(fix.max_score, hint_cost, history.given_up)
    else:
        outcome, score = GradeOutcome.NOT_FIXED, 0
    return Grade(rows=rows, rules=fix.rules_for(changes, held), score=score, outcome=outcome,
                 loss=loss_split(_counts(results[-1])), **common)


def _counts(result: RunResult) -> dict[str, int | None]:
    """The report's classes as the run's metrics carry them (a class the run could not count is missing)."""
    return {k: int(v) for k, v in result.metrics.items() if isinstance(v, float | int)}


def _texts(results: Sequence[RunResult], fix: FixExercise) -> list[str]:
    texts = [e.text for e in fix.expectations]
    texts.append(FAULTS_ROW)
    if any(_action_rows(r) for r in results):
        texts.append(ACTIONS_ROW)
    return texts


def _action_rows(result: RunResult) -> list[FaultStatus]:
    return [f for f in result.faults if f.attendee]


Held = tuple[bool, Measured | None, Measured | None]


def fault_rows(result: RunResult, text: str) -> Held | None:
    """The faults' or the actions' row of one run: (all fired, how many fired, how many there were)."""
    if text not in (FAULTS_ROW, ACTIONS_ROW):
        return None
    faults = _action_rows(result) if text == ACTIONS_ROW else [f for f in result.faults if not f.attendee]
    wrong = sum(f.went_wrong for f in faults)
    return wrong == 0, float(len(faults) - wrong), float(len(faults))


def _held(result: RunResult, text: str) -> Held:
    if (faults := fault_rows(result, text)) is not None:
        return faults
    for e in result.expectations:
        if e.text == text:
            return e.held, e.actual, e.wanted
    return False, Unmeasured.NOT_OBSERVED, None  # the run did not judge it: nothing observed passes


def _row(text: str, per_run: list[Held]) -> GradeRow:
    held = sum(h for h, _, _ in per_run)
    bad = [x for x in per_run if not x[0]]
    # a failure seen outranks a value not observed: the row shows the first run that failed on what it saw
    first_bad = next((x for x in bad if x[1] != Unmeasured.NOT_OBSERVED), bad[0] if bad else None)
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
