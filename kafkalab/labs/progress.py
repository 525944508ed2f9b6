"""An attendee's progress through the break-fix labs, kept on their machine: which incidents they diagnosed
(or gave up on), which fixes they solved, and how many hints they took. It decides what `labs --show` and
the Lab tab reveal: an incident's ticket until it is diagnosed, its cause afterwards, its cure and the lab's
walkthrough once it is fixed or given up.

Stored as JSON in ``$KAFKALAB_STATE/progress.json``; a file that cannot be read counts as no progress.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.labs.grade import AttemptHistory, Grade, GradeOutcome
from kafkalab.paths import state_root


@dataclass
class LabProgress:
    diagnosed: bool = False  # the incident's root cause named right
    fixed: bool = False  # a graded fix attempt passed
    given_up: bool = False  # the solution was shown
    hints_taken: int = 0
    wrong_answers: int = 0
    best_score: int = 0
    not_graded: int = 0  # graded checks that judged nothing (a run ended early): not tries, still counted
    first_seen: float = field(default_factory=time.time)

    @property
    def revealed(self) -> bool:
        """The cause may be shown: diagnosed, fixed or given up."""
        return self.diagnosed or self.fixed or self.given_up

    def solved(self, has_fix: bool) -> bool:
        """The cure, the walkthrough and the solution may be shown: fixed or given up. Naming the cause is not
        fixing it: the cure waits for the fix, unless the lab has no fix exercise (the diagnosis is all of it)."""
        return self.fixed or self.given_up or (self.diagnosed and not has_fix)

    def answered(self, right: bool) -> None:
        """An incident's question answered: right, diagnosed; wrong, counted."""
        if right:
            self.diagnosed = True
        else:
            self.wrong_answers += 1

    def history(self) -> AttemptHistory:
        """What the next grade carries of what the attendee did."""
        return AttemptHistory(self.hints_taken, self.given_up, self.not_graded)

    def graded(self, grade: Grade) -> None:
        """A graded attempt counted: its hints, a check that judged nothing, a pass of one's own (the
        reference solution's run is none)."""
        self.hints_taken = max(self.hints_taken, grade.hints_taken)
        if grade.outcome == GradeOutcome.NOT_GRADED:
            self.not_graded += 1
        if grade.passed:
            self.fixed = True
            self.best_score = max(self.best_score, grade.score or 0)


def progress_path() -> Path:
    return state_root() / "progress.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(lab_id: str, path: Path | None = None) -> LabProgress:
    raw = _read(path or progress_path()).get(lab_id)
    if not isinstance(raw, dict):
        return LabProgress()
    known = {k: v for k, v in raw.items() if k in LabProgress.__dataclass_fields__}
    try:
        return LabProgress(**known)
    except TypeError:
        return LabProgress()


def save(lab_id: str, progress: LabProgress, path: Path | None = None) -> None:
    path = path or progress_path()
    data = _read(path)
    data[lab_id] = asdict(progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)  # never a half-written file: progress is the attendee's work
