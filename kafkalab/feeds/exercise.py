"""A lab's break-fix exercise as the console plays it: the attendee's changes, the hints they took, their
answers to an incident's question, the graded checks' grades and their progress (kept across sessions).

The lab source holds one :class:`Exercise` per lab with a ``[fix]`` or an ``[incident]``; every method may be
called from the console's thread workers, so the state is changed under a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from kafkalab.clients.options import OptionsConflict
from kafkalab.errors import KafkalabError
from kafkalab.feeds.frames import ExerciseView, HintOffer, IncidentView
from kafkalab.labs import progress
from kafkalab.labs.change_line import ChangeLine, kept_words, names, read_change_line
from kafkalab.labs.fix import Change, ChangeKind, actions_of
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import AttemptHistory
from kafkalab.labs.graded import apply_changes
from kafkalab.labs.graded_check import CheckStatus
from kafkalab.labs.model import Lab
from kafkalab.labs.reveal import revealed
from kafkalab.labs.settings_check import check_changes


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
        self._check = CheckStatus()  # the graded check's: the one state every view of it reads
        self._lock = threading.Lock()

    def _save(self) -> None:
        progress.save(self.shipped.id, self.progress, self.path)

    # ---- changes -------------------------------------------------------------------------------------
    def read(self, text: str) -> ChangeLine:
        """A prompt line: changes to keep, or ``-NAME`` kept ones to take back; KafkalabError (one line) when it
        cannot be read or a change is not allowed."""
        if self.fix is None:
            raise KafkalabError(f"lab {self.shipped.id} has no fix exercise: its changes are not graded")
        line = read_change_line(self.shipped.cluster.brokers, text)
        self.fix.check(line.keep)
        check_changes(self.shipped, line.keep)  # a broker or topic setting Kafka would not take, refused now
        return line

    def parse(self, text: str) -> list[Change]:
        """A line of changes to keep, read and checked as :meth:`read` does."""
        return list(self.read(text).keep)

    def apply(self, line: ChangeLine) -> str:
        """Keep or take back what ``line`` asks; says what it did, for the prompt's toast."""
        if line.take_back:
            gone, kept = self.take_back(line.take_back)
            return (f"took back {', '.join(c.text for c in gone)}; your changes now: "
                    f"{', '.join(c.text for c in kept) or 'none (the lab as shipped)'}")
        self.add(list(line.keep))
        return f"kept {kept_words(line.keep)}: f checks your fix, g runs the demonstration with it"

    def add(self, new: list[Change]) -> list[Change]:
        """Keep ``new`` (a change to a name already changed replaces it; actions add up); KafkalabError when
        the lab with them is not valid. Returns the changes now kept."""
        with self._lock:
            kept = [c for c in self.changes
                    if c.kind == ChangeKind.ACTION or all(c.name != n.name for n in new)]
            kept += [n for n in new if n not in kept]
            self._keep(kept)
            return list(kept)

    def take_back(self, targets: Iterable[str]) -> tuple[list[Change], list[Change]]:
        """Forget the kept changes each target names (:func:`~kafkalab.labs.change_line.names`); KafkalabError,
        nothing forgotten, when one names none or what is left is not valid. Returns (forgotten, still kept)."""
        brokers = self.shipped.cluster.brokers
        with self._lock:
            gone: list[Change] = []
            for target in targets:
                named = [c for c in self.changes if names(target, c, brokers)]
                if not named:
                    yours = ", ".join(c.text for c in self.changes) or "none yet"
                    raise KafkalabError(f"-{target}: none of your changes is {target} (yours: {yours})")
                gone += named
            kept = [c for c in self.changes if c not in gone]
            self._keep(kept)
            return gone, list(kept)

    def _keep(self, kept: list[Change]) -> None:
        """``kept`` as the changes, once the lab with them is valid (called under the lock)."""
        try:
            apply_changes(self.shipped, kept)  # a bad value (rf=9 on 3 brokers) is refused here, not at the run
        except OptionsConflict as exc:  # valid alone, not together: together on one line, or one taken back
            raise KafkalabError(f"{exc}; settings that only work together go on one line, e.g. "
                                "producer.idempotent=true producer.max-inflight=5, and -NAME takes one back") from None
        self.changes = kept

    def demo_lab(self) -> Lab:
        """What a plain run (g) runs: the lab as shipped, its faults and expectations, with the changes."""
        return replace(apply_changes(self.shipped, self.changes), actions=actions_of(self.changes),
                       changes=tuple(c.text for c in self.changes))

    # ---- hints ---------------------------------------------------------------------------------------
    def next_hint(self) -> HintOffer | None:
        """The next hint's offer; none once every hint is taken, or after giving up (the solution is shown: a
        hint would cost points for less than it)."""
        if self.fix is None or self.progress.given_up or self.progress.hints_taken >= len(self.fix.hints):
            return None
        hint = self.fix.hints[self.progress.hints_taken]
        waited = self.clock() - self.progress.first_seen
        return HintOffer(self.progress.hints_taken + 1, hint.cost, max(0.0, hint.after_s - waited))

    def take_hint(self) -> str:
        with self._lock:
            offer = self.next_hint()
            if offer is None:
                raise KafkalabError("no hint after giving up: the solution is in the Lab tab (l)"
                                    if self.progress.given_up else
                                    "no more hints: every hint of this lab is shown in the Lab tab (l)")
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
        return FixAttempt(self.shipped, self.changes, who, history=self.history())

    def reference(self, who: str) -> FixAttempt:
        """The reference solution's graded run, after giving up."""
        return FixAttempt.reference(self.shipped, who, self.history())

    def history(self) -> AttemptHistory:
        with self._lock:
            return self.progress.history()

    def time_on_task(self) -> float:
        return self.clock() - self.progress.first_seen

    def give_up(self) -> str:
        """Recorded; the cause and the reference solution, in words."""
        with self._lock:
            self.progress.given_up = True
            self._save()
        return self.revealed_text()

    def revealed_text(self) -> str:
        """The cause, the cure and the reference solution, as the give-up modal shows them."""
        shown = revealed(self.shipped, self.progress)
        parts = [f"The cause: {shown.cause}"] + ([f"The cure: {shown.cure}"] if shown.cure else [])
        if shown.solution:
            parts.append("The reference solution: " + ", ".join(c.text for c in shown.solution)
                         + ". It now runs graded, under the same faults: watch it pass in Results.")
        return "\n\n".join(parts)

    @property
    def check(self) -> CheckStatus:
        with self._lock:
            return self._check

    def set_check(self, status: CheckStatus) -> None:
        """The graded check's new status; a grade (fixed, not fixed, not graded) is counted in progress."""
        with self._lock:
            self._check = status
            if status.grade is not None:
                self.progress.graded(status.grade)
                self._save()

    # ---- the view --------------------------------------------------------------------------------------
    def view(self) -> ExerciseView:
        p = self.progress
        shown = revealed(self.shipped, p)
        incident = None
        if self.incident is not None:
            incident = IncidentView(self.incident.ticket, self.incident.question, self.incident.choices,
                                    p.revealed, shown.cause, p.wrong_answers, shown.cure)
        fix = self.fix
        if fix is None:
            return ExerciseView(False, incident=incident, given_up=p.given_up, check=self.check,
                                solved=shown.walkthrough)
        return ExerciseView(
            True, task=fix.task, allow=fix.allow, changes=tuple(c.text for c in self.changes),
            hints_taken=tuple(h.text for h in fix.hints[:p.hints_taken]), hints_total=len(fix.hints),
            next_hint=self.next_hint(), best_score=p.best_score, fixed=p.fixed, given_up=p.given_up,
            runs=fix.runs, check=self.check,
            solution=tuple(c.text for c in shown.solution), incident=incident, solved=shown.walkthrough)
