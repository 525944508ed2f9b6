"""The child side of a client process (``consumer_loop``, ``producer_loop``).

Protocol: the parent writes one JSON line (the spec) on stdin, then control words, one per line; stdin
closed means the parent is gone. The child reports JSON lines on stdout: ``{"t": "stats", ...}`` every
``stats_every`` seconds and ``{"t": "event", ...}`` for what belongs on the lab's timeline.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from kafkalab.clients.stats import ClientState

EXIT_CRASH = 3  # the client crashed on purpose (a `crash` control record or word)
EXIT_FAILED = 2  # the client failed (its error was reported as an event)
EXIT_ORPHANED = 4  # the parent went away and the loop did not end in time
# an orphan's loop gets this long to end (a consumer's clean close, a producer's purge) before the process
# exits anyway: with its parent gone the cluster usually is too, and librdkafka's close can wait forever
ORPHAN_END_S = 2.0
PARENT_POLL_S = 0.5  # how often the parent's pid is looked at (a stdin held open elsewhere hides its death)

Sink = Callable[[dict[str, Any]], None]


class ChildLoop(Protocol):
    """A client's loop as ``serve`` runs it."""

    state: ClientState

    def run(self) -> int: ...

    def report_stats(self) -> None: ...

    def fail(self, exc: BaseException) -> None: ...


L = TypeVar("L", bound=ChildLoop)


def event_item(kind: str, detail: str = "", partitions: Sequence[int] = ()) -> dict[str, Any]:
    return {"t": "event", "ts": time.time(), "kind": kind, "detail": detail, "partitions": sorted(partitions)}


def json_sink() -> Sink:
    """Writes reports to stdout, one JSON line each, from any thread."""
    lock = threading.Lock()
    out = sys.stdout

    def sink(item: dict[str, Any]) -> None:
        line = json.dumps(item, separators=(",", ":")) + "\n"
        with lock:
            out.write(line)
            out.flush()

    return sink


def serve(make_loop: Callable[[dict[str, Any], Sink], L], words: Mapping[str, Callable[[L], None]],
          orphaned: str, stats_every: float, interrupted: str = "stop") -> int:
    """Run a client loop in this process: read the spec, obey control words (Ctrl-C and SIGHUP act as the word
    ``interrupted``: the parent is stopping its run), report stats until the loop ends. Returns the exit status.

    When stdin closes or the parent's pid changes (it died, even by SIGKILL: the child is re-parented), the
    parent is gone: the word ``orphaned`` is obeyed, and the process ends after ``ORPHAN_END_S`` whatever the
    loop is doing. A parent-pid poll, not PR_SET_PDEATHSIG: that fires when the parent *thread* that spawned
    the child ends (a lab's run thread), and Linux only.
    """
    parent = os.getppid()
    # Ignored until the loop exists: Ctrl-C (and SIGHUP, the terminal closing) reach the whole process group,
    # and the parent stops its run in order, this client with it.
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    sink = json_sink()
    loop = make_loop(json.loads(sys.stdin.readline()), sink)

    orphan_once = threading.Lock()

    def orphan() -> None:
        if not orphan_once.acquire(blocking=False):
            return
        deadline = threading.Timer(ORPHAN_END_S, os._exit, args=(EXIT_ORPHANED,))
        deadline.daemon = True
        deadline.start()
        words[orphaned](loop)

    def watch_stdin() -> None:
        for line in sys.stdin:
            action = words.get(line.strip())
            if action is not None:
                action(loop)
        orphan()

    def watch_parent() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        orphan()

    def report() -> None:
        while not loop.state.ended:
            loop.report_stats()
            time.sleep(stats_every)

    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: words[interrupted](loop))
    threading.Thread(target=watch_stdin, daemon=True).start()
    threading.Thread(target=watch_parent, daemon=True).start()
    threading.Thread(target=report, daemon=True).start()
    try:
        code = loop.run()
    except Exception as exc:
        loop.fail(exc)
        code = EXIT_FAILED
    loop.report_stats()
    return code
