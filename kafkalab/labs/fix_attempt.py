"""One graded fix attempt, as the console and `kafkalab fix` both make it: the graded lab, the seeds of its
runs, and the grade once they ran (written as grade.json in the last run's directory)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from kafkalab.labs.fix import Change, FixExercise
from kafkalab.labs.grade import NO_HISTORY, AttemptHistory, Grade, grade
from kafkalab.labs.graded import fix_of, graded_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.results import RunResult


class FixAttempt:
    """``lab`` as shipped (in the mode it runs in), the attendee's ``changes``: refused at once (KafkalabError,
    one line) when the lab has no fix exercise or a change is not allowed, before anything starts.

    ``history``: what the attendee did before (hints, a give-up, checks not graded), carried on the grade;
    ``solution``: the reference solution run on giving up (graded, never scored)."""

    def __init__(self, lab: Lab, changes: Sequence[Change], who: str, *, history: AttemptHistory = NO_HISTORY,
                 solution: bool = False, runs: int | None = None, first_seed: int | None = None) -> None:
        self.fix: FixExercise = fix_of(lab)
        self.changes = list(changes)
        self.lab = graded_lab(lab, self.changes)
        self.lab_id = lab.id
        self.who = who
        self.history = history
        self.solution = solution
        count = self.fix.runs if runs is None else runs
        first = self.fix.seed if first_seed is None else first_seed
        self.seeds = [first + k for k in range(count)]

    def grade(self, results: Sequence[RunResult], time_on_task_s: float | None = None) -> Grade:
        """The grade of the attempt's runs, written as grade.json beside the last one's files."""
        g = grade(self.fix, self.lab_id, self.changes, results, self.who, self.history, self.solution)
        g.mode, g.kafka_version = self.lab.cluster.mode, self.lab.cluster.kafka_version
        g.changes += list(self.lab.command_texts)  # a code fix: what was graded, as each run's result names it
        g.time_on_task_s = None if time_on_task_s is None else round(time_on_task_s, 1)
        if results:
            g.write(results[-1].run_dir)
        return g

    @classmethod
    def reference(cls, lab: Lab, who: str, history: AttemptHistory) -> FixAttempt:
        """The reference solution, run when the attendee gives up: they see it work (graded, not scored)."""
        return cls(lab, fix_of(lab).solution, who, history=replace(history, given_up=True), solution=True)
