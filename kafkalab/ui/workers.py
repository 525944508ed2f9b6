"""Polling in thread workers: one per data source, re-armed only after the previous poll finished.

A poll that hangs (brokers down, admin timeouts) delays only its own next poll; polls never pile up,
and a poll that raises shows a dismissable error and is re-armed, it never ends the app.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from textual.app import App
from textual.timer import Timer

T = TypeVar("T")


@dataclass(eq=False)
class Poller(Generic[T]):
    """Calls ``fetch`` in a thread worker every ``interval`` seconds (after the last one finished),
    then ``apply`` on the event loop under ``batch_update``; ``on_error`` is told what raised."""

    app: App[Any]
    name: str
    fetch: Callable[[], T]
    apply: Callable[[T], None]
    interval: float
    on_error: Callable[[str, BaseException], None]
    polls: int = field(default=0, init=False)
    last_elapsed_s: float = field(default=0.0, init=False)
    _timer: Timer | None = field(default=None, init=False, repr=False)
    _busy: bool = field(default=False, init=False, repr=False)
    _stopped: bool = field(default=False, init=False, repr=False)

    def start(self) -> None:
        self._stopped = False
        self._arm(0.01)

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.stop()

    def poll_now(self) -> None:
        """Poll at once, unless a poll is under way (its result comes soon enough)."""
        if not self._busy and not self._stopped:
            if self._timer is not None:
                self._timer.stop()
            self._launch()

    def _arm(self, delay: float) -> None:
        if not self._stopped:
            self._timer = self.app.set_timer(delay, self._launch, name=f"poll-{self.name}")

    def _launch(self) -> None:
        if self._busy or self._stopped:
            return
        self._busy = True
        self.app.run_worker(self._work, name=f"poll-{self.name}", group=f"poll-{self.name}", thread=True,
                            exit_on_error=False)

    def _work(self) -> None:
        started = time.monotonic()
        try:
            result = self.fetch()
        except Exception as exc:
            self._post(self._failed, exc)
            return
        self.last_elapsed_s = time.monotonic() - started
        self._post(self._done, result)

    def _post(self, callback: Callable[..., None], arg: object) -> None:
        try:
            self.app.call_from_thread(callback, arg)
        except RuntimeError:  # the app is gone: nothing to show
            self._busy = False

    def _done(self, result: T) -> None:
        self._busy = False
        self.polls += 1
        if self._stopped:
            return
        try:
            with self.app.batch_update():
                self.apply(result)
        except Exception as exc:  # a render bug shows as an error, the console keeps going
            self.on_error(self.name, exc)
        finally:  # a steady cadence: the time the poll took counts toward the interval
            self._arm(max(0.05, self.interval - self.last_elapsed_s))

    def _failed(self, exc: BaseException) -> None:
        self._busy = False
        self._arm(self.interval)
        self.on_error(self.name, exc)
