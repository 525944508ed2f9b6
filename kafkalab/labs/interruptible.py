"""Blocking work a run can be stopped during: a Spark job, a read of every partition, a wait for leaders run in a
thread of their own, so a stop acts at the run's next tick instead of when the call returns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def in_thread(work: Callable[[], T], sleep: Callable[[float], None], tick_s: float, name: str,
              grace_s: float = 0.0) -> T:
    """``work()`` in a thread of its own, waited for with the run's ``sleep``: a stop acts at the next tick,
    not when a blocking call (a Spark job, a read of every partition, a wait for leaders) returns. On a stop
    the work gets ``grace_s`` to end (a cancelled Spark job: about a second), so it writes nothing after the
    run's end; work left behind after that is the daemon thread's, and ends with what it waits on."""
    done: list[T] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            done.append(work())
        except BaseException as exc:  # raised in the run's thread below
            failed.append(exc)

    thread = threading.Thread(target=target, name=f"kafkalab-{name}", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            sleep(tick_s)
    except BaseException:
        thread.join(grace_s)
        raise
    if failed:
        raise failed[0]
    return done[0]
