"""A node's log tail: follows new lines, stops following when scrolled up and counts what arrived."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Unpack

from textual.widgets import Log

from kafkalab.ui.widget_options import WidgetOptions

# "[2025-01-01 10:00:00,123] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)" -> the message
_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d (\d\d:\d\d:\d\d),\d+\] ")
_SUFFIX = re.compile(r" \([a-zA-Z0-9_.$]+\)$")
# a Java stack trace's frames ("\tat java.base/...", "\t... 12 more"): a pane a few rows high would show only them
_FRAME = re.compile(r"^\s+(at \S|\.\.\. \d+ more$)")


def shorten(line: str) -> str:
    """Drop the date and the logger class so a narrow pane shows the message."""
    line = _PREFIX.sub(r"\1 ", line)
    return _SUFFIX.sub("", line)


def glanceable(lines: Iterable[str]) -> list[str]:
    """The lines as a pane shows them: shortened, a stack trace's frames left to the log file (the exception's
    own line stays)."""
    return [shorten(ln) for ln in lines if not _FRAME.match(ln)]


class LogTail(Log):
    """``add`` appends lines; scrolled to the end it follows, scrolled up it stays and counts."""

    def __init__(self, max_lines: int = 300, **kwargs: Unpack[WidgetOptions]) -> None:
        super().__init__(max_lines=max_lines, auto_scroll=False, **kwargs)
        self.unseen = 0

    def add(self, lines: Iterable[str]) -> None:
        lines = glanceable(lines)
        if not lines:
            return
        following = self.is_vertical_scroll_end or self.max_scroll_y == 0
        pruned = self.max_lines is not None and self.line_count + len(lines) > self.max_lines
        self.write_lines(lines, scroll_end=following)
        if pruned:  # Log repaints the new lines at their rows before the pruning: the visible rows went stale
            self.refresh()
        if following:
            self.unseen = 0
        else:
            self.unseen += len(lines)
        self.border_subtitle = f"{self.unseen} new ↓" if self.unseen else ""

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if self.unseen and self.is_vertical_scroll_end:
            self.unseen = 0
            self.border_subtitle = ""
