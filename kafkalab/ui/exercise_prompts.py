"""What the exercise keys ask and say (a hint's cost, the incident's question, the answer's toast): kept out of
the app, which only shows them."""

from __future__ import annotations

from kafkalab.feeds.exercise import minutes
from kafkalab.feeds.frames import ExerciseView, HintOffer, IncidentView
from kafkalab.feeds.source import Choice, Question
from kafkalab.ui.modals import ChoiceScreen, ConfirmScreen


def hint_offer(exercise: ExerciseView | None) -> tuple[HintOffer | None, str]:
    """The hint that can be taken now, or why none can: (offer, "") or (None, why)."""
    offer = exercise.next_hint if exercise is not None else None
    if offer is None:
        return None, "no more hints: those you took are in the Lab tab (l)"
    if not offer.ready:
        return None, f"hint {offer.number} is offered in {minutes(offer.ready_in_s)} (it costs {offer.cost} points)"
    return offer, ""


def hint_question(offer: HintOffer) -> ConfirmScreen:
    """A hint's cost, asked first."""
    return ConfirmScreen(f"Take hint {offer.number}? It costs {offer.cost} points.",
                         f"A passing grade then scores {offer.cost} points less; the hint stays in the Lab tab (l).")


def incident_question(incident: IncidentView) -> ChoiceScreen:
    """The incident's question, a key per choice (1-based on screen, 0-based as the source takes it)."""
    choices = tuple(Choice(str(i), str(i), str(i - 1)) for i in range(1, len(incident.choices) + 1))
    detail = "\n".join(f"{i}. {text}" for i, text in enumerate(incident.choices, start=1))
    return ChoiceScreen(Question(incident.question, detail, (*choices, Choice("escape", "not now", "cancel"))))


def answer_said(right: bool) -> tuple[str, str]:
    """The toast after an answer: (title, text); never the cause twice, never the cause itself."""
    if right:
        return "diagnosed", "that is the cause: the Lab tab explains it"
    return "not the cause", "look again at what the ticket says, and at the run"
