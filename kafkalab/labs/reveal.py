"""What of a break-fix lab's answer the attendee may see now, decided once for the console's Lab tab and give-up
modal and for `kafkalab labs --show / --answer / --give-up`.

Three steps, each a fact of the attendee's progress: the task and the ticket always; the cause once it is
named right (or the lab is fixed or given up); the cure, the lab's walkthrough and the reference solution
once it is fixed or given up. Naming the cause is not fixing it: a diagnosis that revealed the cure would make
the fix free. (An incident without a fix exercise has nothing more to solve: its diagnosis reveals all.)
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalab.labs.fix import Change
from kafkalab.labs.model import Lab
from kafkalab.labs.progress import LabProgress


@dataclass(frozen=True)
class Revealed:
    cause: str = ""  # the cause in words ("" while it is the attendee's to find)
    cure: str = ""  # how it is fixed ("" until solved, or when the lab does not say)
    walkthrough: bool = False  # the lab's instructions may show: they name the cause and the fix
    solution: tuple[Change, ...] = ()  # the reference solution's changes, once solved


def revealed(lab: Lab, progress: LabProgress) -> Revealed:
    """What ``lab`` reveals to an attendee at ``progress``."""
    solved = progress.solved(lab.fix is not None)
    cause = ""
    if progress.revealed:  # an incident explains its cause; a fix exercise's cause is what the lab teaches
        cause = lab.incident.explanation.strip() if lab.incident is not None else sentence(lab.teaches)
    if not solved:
        return Revealed(cause)
    return Revealed(cause, lab.incident.cure.strip() if lab.incident is not None else "", True,
                    lab.fix.solution if lab.fix is not None else ())


def sentence(text: str) -> str:
    """``text`` as a sentence of its own: a capital first, a full stop last."""
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")
