"""A lab's break-fix exercise as the console plays it: the attendee's changes, the hints they took, their
answers to an incident's question, the graded checks' grades and their progress (kept across sessions).

The lab source holds one :class:`Exercise` per lab with a ``[fix]`` or an ``[incident]``; every method may be
called from the console's thread workers, so the state is changed under a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kafkalab.clients.options import OptionsError
from kafkalab.errors import KafkalabError
from kafkalab.feeds.frames import ExerciseView, HintOffer, IncidentView
from kafkalab.labs import progress
from kafkalab.labs.fix import Change, ChangeKind, actions_of, change_from_text
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import Grade
from kafkalab.labs.graded import apply_changes
from kafkalab.labs.model import Lab


def minutes(seconds: float) -> str:
    """1:20 for 80 s: how long until the next hint."""
    whole = max(0, int(seconds + 0.999))
    return f"{whole // 60}:{whole % 60:02d}"


class Exercise:
    """``lab`` as shipped (its fix and incident), the attendee's changes to it, their progress.

    ``progress_path``: where progress is kept (default: the state root's progress.json); ``clock``: wall time,
    for the hints' delays (from when the task was first shown, which progress keeps)."""

    def __init__(self, lab: Lab, progress_path: Path | None = None, clock: Callable[[], float] = time.time) -> None:
        if lab.fix is None and lab.incident is None:
            raise ValueError(f"lab {lab.id} has neither a [fix] nor an [incident]")
        self.shipped = lab
        self.fix = lab.fix
        self.incident = lab.incident
        self.path = progress_path
        self.clock = clock
        self.progress = progress.load(lab.id, progress_path)
        self.changes: list[Change] = []
        self.grade: Grade | None = None  # the last graded check's
        self.grading = ""  # "graded run 1 of 2" while a check runs
        self.failed = ""  # why the last graded check ended without a grade ("" when it did not fail)
        self._lock = threading.Lock()

    def _save(self) -> None:
        progress.save(self.shipped.id, self.progress, self.path)

    # ---- changes -------------------------------------------------------------------------------------
    def parse(self, text: str) -> list[Change]:
        """A prompt line as changes; KafkalabError (one line) when it cannot be read or is not allowed."""
        if self.fix is None:
            raise KafkalabError(f"lab {self.shipped.id} has no fix exercise: its changes are not graded")
        changes = change_from_text(self.shipped.cluster.brokers, text)
        self.fix.check(changes)
        return changes

    def add(self, new: list[Change]) -> list[Change]:
        """Keep ``new`` (a change to a name already changed replaces it; actions add up); KafkalabError when
        the lab with them is not valid. Returns the changes now kept."""
        with self._lock:
            kept = [c for c in self.changes
                    if c.kind == ChangeKind.ACTION or all(c.name != n.name for n in new)]
            kept += [n for n in new if n not in kept]
            try:
                apply_changes(self.shipped, kept)  # a bad value (rf=9 on 3 brokers) is refused here, not at the run
            except OptionsError as exc:  # the clients' settings do not go together (yet)
                raise KafkalabError(f"{exc}; settings that only work together go on one line, "
                                    "e.g. producer.idempotent=true producer.max-inflight=5") from None
            self.changes = kept
            return list(kept)

    def demo_lab(self) -> Lab:
        """What a plain run (g) runs: the lab as shipped, its faults and expectations, with the changes."""
        return replace(apply_changes(self.shipped, self.changes), actions=actions_of(self.changes))

    # ---- hints ---------------------------------------------------------------------------------------
    def next_hint(self) -> HintOffer | None:
        if self.fix is None or self.progress.hints_taken >= len(self.fix.hints):
            return None
        hint = self.fix.hints[self.progress.hints_taken]
        waited = self.clock() - self.progress.first_seen
        return HintOffer(self.progress.hints_taken + 1, hint.cost, max(0.0, hint.after_s - waited))

    def take_hint(self) -> str:
        with self._lock:
            offer = self.next_hint()
            if offer is None:
                raise KafkalabError("no more hints: every hint of this lab is shown in the Lab tab (l)")
            if not offer.ready:
                raise KafkalabError(f"hint {offer.number} is offered in {minutes(offer.ready_in_s)}")
            assert self.fix is not None
            self.progress.hints_taken += 1
            self._save()
            return self.fix.hints[offer.number - 1].text

    # ---- the incident ------------------------------------------------------------------------------
    def answer(self, choice: int) -> bool:
        if self.incident is None:
            raise KafkalabError(f"lab {self.shipped.id} is not an incident: there is no question to answer")
        with self._lock:
            right = self.incident.is_right(choice)
            self.progress.answered(right)
            self._save()
            return right

    # ---- graded checks -------------------------------------------------------------------------------
    def attempt(self, who: str) -> FixAttempt:
        return FixAttempt(self.shipped, self.changes, who, hints_taken=self.hints_taken())

    def solution(self, who: str) -> FixAttempt:
        return FixAttempt.solution(self.shipped, who, self.hints_taken())

    def hints_taken(self) -> int:
        return self.progress.hints_taken

    def time_on_task(self) -> float:
        return self.clock() - self.progress.first_seen

    def give_up(self) -> str:
        """Recorded; the cause and the reference solution, in words."""
        with self._lock:
            self.progress.given_up = True
            self._save()
        return self.revealed_text()

    def revealed_text(self) -> str:
        parts = []
        if self.incident is not None:
            parts.append(f"The cause: {self.incident.explanation.strip()}")
        if self.fix is not None and self.fix.solution:
            parts.append("The reference solution: " + ", ".join(c.text for c in self.fix.solution)
                         + ". It now runs graded, under the same faults: watch it pass in Results.")
        return "\n\n".join(parts)

    def record(self, grade: Grade) -> None:
        """A graded check's grade: shown in Results, counted in progress (a given-up run scores nothing)."""
        with self._lock:
            self.grade = grade
            self.progress.graded(grade)
            self._save()

    # ---- the view --------------------------------------------------------------------------------------
    def view(self) -> ExerciseView:
        p = self.progress
        incident = None
        if self.incident is not None:
            incident = IncidentView(self.incident.ticket, self.incident.question, self.incident.choices,
                                    p.revealed, self.incident.explanation if p.revealed else "", p.wrong_answers)
        fix = self.fix
        if fix is None:
            return ExerciseView(False, incident=incident, given_up=p.given_up, failed=self.failed)
        return ExerciseView(
            True, task=fix.task, allow=fix.allow, changes=tuple(c.text for c in self.changes),
            hints_taken=tuple(h.text for h in fix.hints[:p.hints_taken]), hints_total=len(fix.hints),
            next_hint=self.next_hint(), best_score=p.best_score, fixed=p.fixed, given_up=p.given_up,
            runs=fix.runs, grading=self.grading, failed=self.failed,
            solution=tuple(c.text for c in fix.solution) if p.fixed or p.given_up else (), incident=incident)
