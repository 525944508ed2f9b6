"""A console whose terminal closes (SIGHUP: tmux kill-server, a dropped ssh session, a closed laptop lid) ends,
whatever it is doing, and says so in the console log.

Raising KeyboardInterrupt from the signal handler, as Ctrl-C, was not enough once the screen was up: Textual's
output thread dies on its first write to the closed terminal (EIO), its queue fills, and the next write blocks
the event loop for good (a console was found behind the port-clash question 22 minutes after its terminal had
gone). So while the app runs, the hangup ends every process the console started (the run stopped, its files
written, as on quit) in a thread of its own and then ends this process, with nothing of Textual's to wait for;
before the app runs, it ends the command as Ctrl-C would; after it, the cleanup under way finishes.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from kafkalab.cli.common import silence_output
from kafkalab.paths import state_root

CONSOLE_LOG = "console.log"
HANGUP_EXIT = 128 + signal.SIGHUP  # a shell's code for a command ended by SIGHUP
HANGUP = "SIGHUP (the terminal closed)"


class Hangup(KeyboardInterrupt):
    """The terminal closed before the console's screen was up: the command ends as on Ctrl-C."""


def console_log_path() -> Path:
    """One log for every console on this machine (a few lines each): when each started, how each ended."""
    return state_root() / CONSOLE_LOG


def note(text: str) -> None:
    """A line in the console log; a log that cannot be written is no reason to fail the console."""
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}: {text}\n"
    with contextlib.suppress(OSError):
        console_log_path().parent.mkdir(parents=True, exist_ok=True)
        with open(console_log_path(), "a", encoding="utf-8") as log:
            log.write(line)


def terminal_name() -> str:
    try:
        return os.ttyname(sys.stdin.fileno())
    except (OSError, ValueError):
        return "no terminal"


class HangupWatch:
    """SIGHUP's handler for one console, from before its app runs until the command returns."""

    def __init__(self) -> None:
        self.close_app: Callable[[], None] | None = None  # while the app runs: ends what the console started
        self.closing = False  # the app has returned: the cleanup after it is under way
        self.heard = False

    def on_hangup(self, _signum: int, _frame: FrameType | None) -> None:
        silence_output()  # what is left to print has no reader
        first, self.heard = not self.heard, True
        if self.closing:
            if first:
                note(f"{HANGUP} while the console closed: finishing that")
        elif self.close_app is not None:
            if first:
                note(f"{HANGUP}: ending what the console started, as on quit, then the console")
                threading.Thread(target=self._end, args=(self.close_app,), name="kafkalab-hangup").start()
        else:  # nothing of Textual's runs yet: no thread to stop, no screen to restore
            note(f"{HANGUP} before the console's screen was up: exiting")
            raise Hangup

    @staticmethod
    def _end(close_app: Callable[[], None]) -> None:
        try:
            close_app()
        finally:
            note("console exited: its terminal closed")
            os._exit(HANGUP_EXIT)  # Textual's threads may be stuck on the dead terminal: none can be joined


@contextlib.contextmanager
def hangup_watch() -> Iterator[HangupWatch]:
    """SIGHUP ends the console in every state for the block; the log says when it started and how it ended."""
    watch = HangupWatch()
    note(f"console started on {terminal_name()}: kafkalab {shlex.join(sys.argv[1:])}")
    previous = signal.signal(signal.SIGHUP, watch.on_hangup)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGHUP, previous)
        note("console exited" + (": its terminal closed" if watch.heard else ""))
