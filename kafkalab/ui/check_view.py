"""The graded check on screen: the one message that carries its status to the console, and what the console
says of each status (a toast, the top bar's word). The status itself is computed once, in the core
(:class:`~kafkalab.labs.graded_check.CheckStatus`); nothing here judges, it only words what was judged."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message
from textual.notifications import SeverityLevel

from kafkalab.labs.graded_check import CheckPhase, CheckStatus


class CheckChanged(Message):
    """The graded check's status changed (posted once per change, handled in one place by the app)."""

    def __init__(self, previous: CheckStatus, now: CheckStatus) -> None:
        super().__init__()
        self.previous = previous
        self.now = now


@dataclass(frozen=True)
class CheckToast:
    title: str
    text: str
    severity: SeverityLevel


def check_toast(previous: CheckStatus, now: CheckStatus) -> CheckToast | None:
    """What a toast says as the check reaches ``now``: its start, its grade, why it judged nothing, or its stop.
    A check that was not graded shows no score, no rows and no rules: only why and what to do."""
    match now.phase:
        case CheckPhase.RUNNING if previous.phase != CheckPhase.RUNNING:
            return CheckToast("graded check", f"{now.runs} graded runs under the same faults: the grade appears in "
                                              "Results when they end; x stops the check", "information")
        case CheckPhase.GRADED:
            g = now.grade
            assert g is not None
            return CheckToast(f"graded: {g.score_text}", g.verdict, "information" if g.passed else "warning")
        case CheckPhase.NOT_GRADED:
            todo = now.grade.todo if now.grade is not None else "your fix was not judged: check it again (f)"
            return CheckToast("not graded", f"{now.reason}\n{todo[0].upper()}{todo[1:]}.", "warning")
        case CheckPhase.STOPPED:
            return CheckToast("check stopped", "no grade: f checks again", "information")
    return None


def check_word(status: CheckStatus) -> str:
    """The top bar's word once a check is over: where its grade is, or why there is none."""
    match status.phase:
        case CheckPhase.GRADED:
            g = status.grade
            assert g is not None
            if g.score is None:
                return "the solution's grade in Results (v)"
            return "grade in Results (v); f checks again"
        case CheckPhase.NOT_GRADED:
            return "not graded: nothing was judged; f checks again"
        case CheckPhase.STOPPED:
            return "check stopped, no grade: f checks again"
    return ""
