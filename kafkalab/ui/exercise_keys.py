"""The console's exercise keys: `h` a hint, `d` the incident's diagnosis, `f` the graded check, `G` give up, and
the graded check's one way onto the screen. LabConsole mixes them in; :class:`ConsoleHost` names what of the
console they use."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rich.markdown import Markdown
from textual.notifications import SeverityLevel

from kafkalab.feeds.frames import RunFrame
from kafkalab.feeds.source import Source
from kafkalab.ui.check_view import CheckChanged, check_toast, check_word
from kafkalab.ui.exercise_prompts import answer_said, hint_offer, hint_question, incident_question
from kafkalab.ui.lab import inline_markdown
from kafkalab.ui.modals import ConfirmScreen, TextScreen
from kafkalab.ui.toasts import ToastKind


class ConsoleHost(Protocol):
    """What the exercise keys use of the console."""

    run_frame: RunFrame
    source: Source

    def notify(self, message: str, *, title: str = ..., severity: SeverityLevel = ..., timeout: float | None = ...,
               markup: bool = ..., kind: ToastKind = ...) -> None: ...

    def in_thread(self, what: str, call: Callable[[], object], done: str = ..., toast: bool = ...,
                  refused: str = ..., then: Callable[[Any], None] | None = ...) -> None: ...

    def push_screen(self, screen: Any, callback: Any = ...) -> Any: ...

    def action_show_tab(self, name: str) -> None: ...

    def set_action(self, message: str) -> None: ...

    def update_topbar(self) -> None: ...

    def refresh_bindings(self) -> None: ...


class ExerciseKeys:
    """The exercise's key actions and the graded check's message handler, mixed into the console."""

    def action_take_hint(self: ConsoleHost) -> None:
        """The next hint's cost is shown first; taken, it is counted and shown in the Lab tab."""
        offer, why = hint_offer(self.run_frame.exercise)
        if offer is None:
            self.notify(why, severity="warning", timeout=4)
            return

        def shown(text: str) -> None:
            self.action_show_tab("lab")
            self.notify(inline_markdown(text).plain, title=f"hint {offer.number} (-{offer.cost} points)", timeout=15,
                        kind=ToastKind.EXERCISE)

        self.push_screen(hint_question(offer),
                         lambda yes: self.in_thread("hint", self.source.take_hint, then=shown) if yes else None)

    def action_answer_incident(self: ConsoleHost) -> None:
        incident = self.run_frame.exercise.incident if self.run_frame.exercise is not None else None
        if incident is None:
            return

        def answered(right: bool) -> None:
            title, text = answer_said(right)
            if right:
                self.action_show_tab("lab")
            self.notify(text, title=title, severity="information" if right else "warning", timeout=8,
                        kind=ToastKind.EXERCISE)

        def answer(choice: str | None) -> None:
            if choice is not None and choice.isdigit():
                self.in_thread("answer", lambda: self.source.answer_incident(int(choice)), then=answered)

        self.push_screen(incident_question(incident), answer)

    def action_check_fix(self: ConsoleHost) -> None:
        self.set_action("starting the graded check ...")
        self.in_thread("graded check", self.source.check_fix)

    def on_check_changed(self: ConsoleHost, message: CheckChanged) -> None:
        """The graded check's one way onto the screen: its toast, the top bar, Results once it is over."""
        toast = check_toast(message.previous, message.now)
        if toast is not None:
            self.notify(toast.text, title=toast.title, severity=toast.severity, timeout=10, kind=ToastKind.RUN)
        if message.now.over:
            self.action_show_tab("results")
            self.set_action(check_word(message.now))
        self.update_topbar()
        self.refresh_bindings()

    def action_give_up(self: ConsoleHost) -> None:
        def shown(text: str) -> None:
            self.action_show_tab("lab")
            fixable = self.run_frame.exercise is not None and self.run_frame.exercise.fixable
            self.push_screen(TextScreen("the cause and the solution" if fixable else "the cause", Markdown(text)))
            if fixable:  # given up first, then this
                self.in_thread("solution check", self.source.check_solution)

        def answer(yes: bool | None) -> None:
            if yes:
                self.in_thread("give up", self.source.give_up, then=shown)

        self.push_screen(ConfirmScreen("Give up and see the solution?",
                                       "The cause and the reference solution are shown, then the solution runs "
                                       "graded under the same faults (shown, not scored)."), answer)
