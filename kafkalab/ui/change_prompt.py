"""The change prompt (e): a line to change a setting, or in a fix lab any change the exercise takes.

The line goes to the source off the event loop. What it did closes the prompt (the caller shows it); a refusal
is shown under the line, which stays as typed, to be corrected. ↑ and ↓ bring back the lines typed before in this
console (one lab's), refused ones too: those are the ones worth correcting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Input

from kafkalab.clients.options import canonical_name
from kafkalab.feeds.players import is_player_line
from kafkalab.feeds.source import Source
from kafkalab.settings_text import name_value
from kafkalab.ui.modals import InputScreen

# lines of at most 58 columns: the dialog's width inside its border and padding
CHANGE_PROMPT = ("Your change for the next runs, one of:\n"
                 "  producer.acks=all  (a producer.* or consumer.* setting)\n"
                 "  enable.idempotence=true  (a setting by Kafka's name)\n"
                 "  topic test-topic rf=3 min.isr=2\n"
                 "  broker unclean.leader.election.enable=true\n"
                 "  action brokers >= 3 -> replicate topic test-topic rf=3\n"
                 "  -producer.acks  (takes a kept change back)\n"
                 "  clients java | consumer-cmd CMD  (who plays them)\n"
                 "Settings that only work together go on one line.")
SETTING_PROMPT = ("Change a producer or consumer setting for the next run:\n"
                  "  producer.acks=all  (kafkalab's name)\n"
                  "  enable.idempotence=true  (Kafka's name)\n"
                  "  clients java | producer-cmd CMD  (who plays them)")
EXAMPLE = "producer.acks=all"


class LineHistory:
    """The lines typed at the prompt, oldest first, each once (at its latest use)."""

    def __init__(self, limit: int = 200) -> None:
        self.lines: list[str] = []
        self.limit = limit

    def add(self, line: str) -> None:
        if line in self.lines:
            self.lines.remove(line)
        self.lines.append(line)
        del self.lines[:-self.limit]


class ChangePrompt(InputScreen):
    """``submit`` is given the line in a thread worker; it returns what it did, or raises why not (one line)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *InputScreen.BINDINGS,
        Binding("up", "recall(-1)", "Earlier line", id="input.earlier", show=False),
        Binding("down", "recall(1)", "Later line", id="input.later", show=False),
    ]
    KEYS = "enter keeps it · ↑ ↓ earlier lines · esc closes"

    def __init__(self, prompt: str, submit: Callable[[str], str], history: LineHistory) -> None:
        super().__init__(Text(prompt), EXAMPLE)
        self.submit = submit
        self.history = history
        self.at = len(history.lines)  # the line ↑ ↓ show: len(lines) is the one being typed
        self.draft = ""  # the line being typed, kept while ↑ shows earlier ones
        self.busy = False  # a line is with the source: enter again would send it twice

    def take(self, text: str) -> None:
        if self.busy:
            return
        self.busy = True
        self.history.add(text)
        self.at = len(self.history.lines)
        self.run_worker(lambda: self._submitted(text), name="change", group="change-prompt", thread=True,
                        exit_on_error=False)

    def _submitted(self, text: str) -> None:
        try:
            said = self.submit(text)
        except Exception as exc:  # a refusal, or any failure: said where the line is, never the end of the app
            self.app.call_from_thread(self._refused, str(exc) or type(exc).__name__)
        else:
            self.app.call_from_thread(self._done, said)

    def _done(self, said: str) -> None:
        self.busy = False
        if self.is_current:
            self.dismiss(said)
        elif self.is_attached:  # under an error a poll raised meanwhile: only the top screen can be dismissed
            self.say(said, "green")

    def _refused(self, why: str) -> None:
        self.busy = False
        if self.is_attached:  # not closed with esc meanwhile
            self.say(why, "bold red")

    def action_recall(self, step: int) -> None:
        """↑ (-1) or ↓ (+1) one line in the history; below its last, the line that was being typed."""
        at = min(max(self.at + step, 0), len(self.history.lines))
        if at == self.at:
            return
        line = self.query_one(Input)
        if self.at == len(self.history.lines):
            self.draft = line.value
        self.at = at
        line.value = self.history.lines[at] if at < len(self.history.lines) else self.draft
        line.cursor_position = len(line.value)


def exercise_change(source: Source, text: str) -> str:
    """A fix lab's `e` prompt: who plays the clients, or a change the exercise keeps."""
    return source.choose_players(text) if is_player_line(text) else source.add_change(text)


def set_setting(source: Source, text: str) -> str:
    """The plain `e` prompt's ``name=value`` set for the next run (by kafkalab's name or Kafka's), or who plays the
    clients; says what."""
    if is_player_line(text):
        return source.choose_players(text)
    written, value = name_value(text, "", EXAMPLE)
    name = canonical_name(written)
    source.change_setting(name, value)
    said_as = "" if name == written else f" ({written})"
    return f"{name}{said_as} = {value} for the next run"
