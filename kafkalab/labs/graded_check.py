"""The graded check: one loop, shared by the console and `kafkalab fix`, that runs an attempt's seeds one after
the other and grades them, and the one status every view of it reads.

The status is a value (:class:`CheckStatus`): idle, running run k of n, graded (with its grade), not graded
(with why, and a grade.json that says so when a run dir exists), stopped. The top bar, the Lab tab, Results,
the grade card, `kafkalab fix`'s output and grade.json all read it, so they cannot disagree.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from kafkalab.errors import KafkalabError
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import AttemptHistory, Grade, GradeOutcome
from kafkalab.labs.model import Lab
from kafkalab.labs.results import Outcome, RunResult


class CheckPhase(StrEnum):
    IDLE = "idle"  # no check since the last run or reset
    RUNNING = "running"
    GRADED = "graded"
    NOT_GRADED = "not graded"  # a run ended early or could not start: nothing judged
    STOPPED = "stopped"  # stopped by the attendee: no grade


@dataclass(frozen=True)
class CheckStatus:
    phase: CheckPhase = CheckPhase.IDLE
    run: int = 0  # RUNNING: the run under way, 1-based
    runs: int = 0
    grade: Grade | None = None  # GRADED, and NOT_GRADED once a run dir holds its grade.json
    why: str = ""  # NOT_GRADED: why nothing was judged

    @property
    def running(self) -> bool:
        return self.phase == CheckPhase.RUNNING

    @property
    def over(self) -> bool:
        """The check ended: graded, not graded or stopped."""
        return self.phase in (CheckPhase.GRADED, CheckPhase.NOT_GRADED, CheckPhase.STOPPED)

    @property
    def text(self) -> str:
        """The status in a few words (the top bar, the Lab tab)."""
        match self.phase:
            case CheckPhase.RUNNING:
                return f"graded run {self.run} of {self.runs}"
            case CheckPhase.GRADED:
                g = self.grade
                assert g is not None
                return f"graded: {g.outcome}" + (f", {g.score_text}" if g.score is not None else "")
            case CheckPhase.NOT_GRADED:
                return "not graded"
            case CheckPhase.STOPPED:
                return "check stopped: no grade"
        return ""

    @property
    def reason(self) -> str:
        """NOT_GRADED: why, in a sentence; "" otherwise."""
        if self.phase != CheckPhase.NOT_GRADED:
            return ""
        return self.why or (self.grade.verdict if self.grade is not None else "")

    @classmethod
    def of_grade(cls, grade: Grade) -> CheckStatus:
        if grade.outcome == GradeOutcome.NOT_GRADED:
            return cls(CheckPhase.NOT_GRADED, grade=grade, why=grade.verdict)
        return cls(CheckPhase.GRADED, grade=grade)


RunOne = Callable[[Lab, int], RunResult]  # runs the graded lab with a seed, to its end


class GradedCheck:
    """Runs ``attempt``'s seeds through ``run_one``, then grades them; every status goes to ``on_status``.

    A run that ends early ends the check at once: nothing more would be judged. ``history``, asked just
    before the grade, brings the hints taken while the runs went; ``time_on_task`` the console's clock."""

    def __init__(self, attempt: FixAttempt, run_one: RunOne, on_status: Callable[[CheckStatus], None], *,
                 history: Callable[[], AttemptHistory] | None = None,
                 time_on_task: Callable[[], float | None] = lambda: None) -> None:
        self.attempt = attempt
        self.run_one = run_one
        self.on_status = on_status
        self.history = history
        self.time_on_task = time_on_task
        self._stopped = threading.Event()

    def stop(self) -> None:
        """Stop before the next run (the caller stops the run under way): no grade."""
        self._stopped.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def run(self) -> CheckStatus:
        """The check to its end: its last status (graded, not graded, or stopped)."""
        seeds = self.attempt.seeds
        results: list[RunResult] = []
        for k, seed in enumerate(seeds, start=1):
            if self.stopped:
                return self._say(CheckStatus(CheckPhase.STOPPED))
            self._say(CheckStatus(CheckPhase.RUNNING, k, len(seeds)))
            try:
                result = self.run_one(self.attempt.lab, seed)
            except KafkalabError as exc:  # a run that cannot start (its ports, its Kafka): nothing to judge
                return self._say(CheckStatus(CheckPhase.NOT_GRADED, why=f"graded run {k} could not start: {exc}"))
            if self.stopped or result.outcome == Outcome.STOPPED:  # stopped by the attendee (x, Ctrl-C)
                return self._say(CheckStatus(CheckPhase.STOPPED))
            results.append(result)
            if result.outcome == Outcome.ERROR:
                break
        if self.history is not None:  # a hint taken while the runs went costs too
            self.attempt.history = self.history()
        return self._say(CheckStatus.of_grade(self.attempt.grade(results, self.time_on_task())))

    def _say(self, status: CheckStatus) -> CheckStatus:
        self.on_status(status)
        return status
