"""Modal screens: confirmations of destructive actions, dismissable errors, the `?` key help, inputs."""

from __future__ import annotations

from typing import ClassVar

from rich.markdown import Markdown
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Key
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, Label, Static

from kafkalab.feeds.source import Question


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "answer(True)", "Yes", id="confirm.yes"),
                Binding("n,escape", "answer(False)", "No", id="confirm.no")]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__(classes="modal")
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="question")
            if self.detail:
                yield Static(self.detail, classes="detail")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class _TextDialog(ModalScreen[None]):
    """A title over text that scrolls, and how to close it; subclasses set the look and the keys."""

    DIALOG_CLASSES = "dialog"
    TITLE_STYLE = "bold"
    BODY_CLASSES = ""

    def __init__(self, title: str, body: str | Text | Markdown) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.body = body

    @property
    def body_text(self) -> str:
        """The body's words (a Markdown body's source)."""
        return self.body.markup if isinstance(self.body, Markdown) else str(self.body)

    def compose(self) -> ComposeResult:
        with Vertical(classes=self.DIALOG_CLASSES):
            yield Label(Text(self.title_text, style=self.TITLE_STYLE))
            with VerticalScroll(classes=self.BODY_CLASSES):
                yield Static(self.body)
            yield self.closer()

    def closer(self) -> Widget:
        return Static(Text("esc closes", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)


class ErrorScreen(_TextDialog):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter,space", "close", "Dismiss", id="error.dismiss")]
    DIALOG_CLASSES = "dialog error-dialog"
    TITLE_STYLE = "bold red"
    BODY_CLASSES = "error-body"

    def __init__(self, title: str, message: str) -> None:
        super().__init__(title, Text(message))  # shown as written, never read as markup
        self.message = message

    def closer(self) -> Widget:
        return Button("Dismiss (esc)", variant="primary", id="dismiss")

    def on_button_pressed(self, _event: Button.Pressed) -> None:
        self.dismiss(None)


class TextScreen(_TextDialog):
    """Read-only text (anomaly samples), closed with escape."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Close", id="text.close")]
    DIALOG_CLASSES = "dialog wide-dialog"


class HelpScreen(ModalScreen[None]):
    """The keys that work here, from the bindings themselves (ids, keys after the user keymap)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "Close", id="help.close")]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__(classes="modal")
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide-dialog"):
            yield Label(Text("Keys (change them in the keymap file by id)", style="bold"))
            table: DataTable[str] = DataTable(cursor_type="row", id="help-table")
            yield table
            yield Static(Text("esc closes · ctrl+p searches every action · ↑ ↓ PgUp PgDn Home End scroll the open tab",
                              style="dim"))

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("key", "action", "id")
        for row in self.rows:
            table.add_row(*row)
        table.focus()

    def action_close(self) -> None:
        self.dismiss(None)


class InputScreen(ModalScreen[str | None]):
    """One line of input, e.g. ``producer.acks=all`` or ``test-topic rf=3 min.isr=2``. An empty line is no
    answer: the prompt stays open and says so (esc is how to leave without one)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="input.cancel")]
    KEYS = "enter applies · esc cancels"
    NOTHING_TYPED = "nothing typed, so nothing changed: type a line, or esc to close"

    def __init__(self, prompt: str | Text, placeholder: str = "", value: str = "") -> None:
        """``prompt`` is plain text (a str is not read as markup: '[rf=N]' stays as typed)."""
        super().__init__(classes="modal")
        self.prompt = Text(prompt) if isinstance(prompt, str) else prompt
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.prompt)
            yield Input(value=self.value, placeholder=self.placeholder)
            said = Static(id="input-said")  # what became of the last line, when it was not taken
            said.display = False
            yield said
            yield Static(Text(self.KEYS, style="dim"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if text:
            self.take(text)
        else:
            self.say(self.NOTHING_TYPED, "yellow")

    def take(self, text: str) -> None:
        """A line typed: the answer."""
        self.dismiss(text)

    def say(self, text: str, style: str) -> None:
        """Under the line, which stays as typed: why it was not taken."""
        said = self.query_one("#input-said", Static)
        said.update(Text(text, style=style))
        said.display = True

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoiceScreen(ModalScreen[str]):
    """A source's question with a few ways out, each a button with its key."""

    def __init__(self, question: Question) -> None:
        super().__init__(classes="modal")
        self.question = question.title
        self.detail = question.detail
        self.choices = question.choices

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self.question, style="bold"), classes="question")
            yield Static(Text(self.detail), classes="detail")
            with Horizontal(classes="dialog-buttons"):
                for choice in self.choices:
                    label = choice.label if choice.label == choice.key else f"{choice.label} ({choice.key})"
                    yield Button(label, id=f"choice-{choice.answer}",
                                 variant="primary" if choice.answer != "quit" else "default")

    def on_mount(self) -> None:
        self.query_one(Button).focus()

    def on_key(self, event: Key) -> None:
        for choice in self.choices:
            if event.key == choice.key:
                event.stop()
                self.dismiss(choice.answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(str(event.button.id).removeprefix("choice-"))
