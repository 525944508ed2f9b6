"""Captions of the keys a person presses, drawn by the console itself (`console --record --show-keys`), as
screencast tools show them: the viewer of a recording sees which key did what."""

from __future__ import annotations

import time

from textual import events
from textual.app import ComposeResult
from textual.widgets import Static

from kafkalab.ui.app import LabConsole

SHOWN_S = 2.0  # a key's caption stays this long after the last key
KEPT = 6  # keys shown at once, the newest last
NAMES = {"space": "␣", "enter": "⏎", "escape": "esc", "left": "←", "right": "→", "up": "↑", "down": "↓",
         "question_mark": "?"}


def caption_of(event: events.Key) -> str:
    if event.key in NAMES:
        return NAMES[event.key]
    if event.character and event.character.isprintable() and len(event.key) == 1:
        return event.character
    return event.key.replace("ctrl+", "Ctrl-").replace("shift+", "Shift-")


class KeyCaption(Static):
    DEFAULT_CSS = """
    KeyCaption {
        layer: _toastrack;
        dock: bottom;
        offset-y: -2;
        width: auto;
        height: 1;
        padding: 0 1;
        background: $accent;
        color: $text;
        text-style: bold;
        display: none;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="key-caption")
        self.keys: list[str] = []
        self._last = 0.0

    def on_mount(self) -> None:
        self.set_interval(0.5, self._expire)

    def press(self, key: str) -> None:
        self.keys = [*self.keys, key][-KEPT:]
        self._last = time.monotonic()
        self.update("⌨  " + "  ".join(self.keys))
        self.display = True

    def _expire(self) -> None:
        if self.display and time.monotonic() - self._last > SHOWN_S:
            self.keys = []
            self.display = False


class CaptionedConsole(LabConsole):
    """The console with a caption of every key pressed (seen before any widget or binding acts on it)."""

    caption: KeyCaption | None = None

    def compose(self) -> ComposeResult:
        yield from super().compose()
        self.caption = KeyCaption()
        yield self.caption

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded and self.caption is not None:
            self.caption.press(caption_of(event))
        await super().on_event(event)
