"""One graded fix attempt, as the console and `kafkalab fix` both make it: the graded lab, the seeds of its
runs, and the grade once they ran (written as grade.json in the last run's directory)."""

from __future__ import annotations

from collections.abc import Sequence

from kafkalab.labs.fix import Change, FixExercise
from kafkalab.labs.grade import Grade, grade
from kafkalab.labs.graded import fix_of, graded_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.results import RunResult


class FixAttempt:
    """``lab`` as shipped (in the mode it runs in), the attendee's ``changes``: refused at once (KafkalabError,
    one line) when the lab has no fix exercise or a change is not allowed, before anything starts."""

    def __init__(self, lab: Lab, changes: Sequence[Change], who: str, *, hints_taken: int = 0,
                 given_up: bool = False, runs: int | None = None, first_seed: int | None = None) -> None:
        self.fix: FixExercise = fix_of(lab)
        self.changes = list(changes)
        self.lab = graded_lab(lab, self.changes)
        self.lab_id = lab.id
        self.who = who
        self.hints_taken = hints_taken
        self.given_up = given_up
        count = self.fix.runs if runs is None else runs
        first = self.fix.seed if first_seed is None else first_seed
        self.seeds = [first + k for k in range(count)]

    def grade(self, results: Sequence[RunResult], time_on_task_s: float | None = None) -> Grade:
        """The grade of the attempt's runs, written as grade.json beside the last one's files."""
        g = grade(self.fix, self.lab_id, self.changes, results, self.who, self.hints_taken, self.given_up)
        g.mode, g.kafka_version = self.lab.cluster.mode, self.lab.cluster.kafka_version
        g.time_on_task_s = None if time_on_task_s is None else round(time_on_task_s, 1)
        if results:
            g.write(results[-1].run_dir)
        return g

    @classmethod
    def solution(cls, lab: Lab, who: str, hints_taken: int = 0) -> FixAttempt:
        """The reference solution, run when the attendee gives up: they see it work (graded, score 0)."""
        return cls(lab, fix_of(lab).solution, who, hints_taken=hints_taken, given_up=True)
