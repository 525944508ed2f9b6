"""One librdkafka call in a child process of its own, so that its crash costs the call, not the console.

librdkafka takes its whole process down now and then (assertions, segfaults while brokers die): the console
never loads it. A call that needs a client (a control word sent, a topic audited) runs
``python -m MODULE``, whose ``__main__`` is :func:`serve_one`, and waits for its answer with a bound.

Protocol: the parent writes the request as one JSON line on the child's stdin and keeps stdin open; stdin
closed means the parent is gone, and the child exits. The child writes JSON lines on stdout:
``{"progress": [...]}`` any number of times, then ``{"ok": answer}`` or ``{"error": "one line"}`` (a
KafkalabError's message, raised again in the parent as one). Its stderr (librdkafka's last words, a
traceback) is kept for the message when it dies without an answer. The child runs in a session of its own:
the terminal's Ctrl-C and hangup reach the parent, which ends the child.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from kafkalab.child_python import python_module
from kafkalab.errors import KafkalabError

START_GRACE_S = 20.0  # beyond the call's own bound: the interpreter's start and imports on a loaded laptop
PARENT_POLL_S = 0.5  # the child looks at its parent this often (a stdin held open elsewhere hides its death)
EXIT_ORPHANED = 4

Progress = Callable[[Any], None]


def call_in_child(module: str, request: dict[str, Any], what: str, wait_s: float,
                  progress: Progress | None = None) -> Any:
    """``python -m module`` answering ``request``; raises KafkalabError with the child's own one line on its
    failure, or naming how it ended (a signal, no answer in ``wait_s`` and a start grace: then it is killed).
    ``what`` names the call in those lines ("the audit of t"). ``progress`` gets each progress report."""
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    try:
        proc = subprocess.Popen(python_module(module), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    except OSError as exc:
        raise KafkalabError(f"cannot start the process for {what}: {exc}") from None
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    stderr: deque[str | None] = deque(maxlen=20)
    readers = [threading.Thread(target=_lines, args=(proc.stdout, lines.put), daemon=True),
               threading.Thread(target=_lines, args=(proc.stderr, stderr.append), daemon=True)]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + wait_s + START_GRACE_S
    try:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise KafkalabError(f"{what} gave no answer in {wait_s + START_GRACE_S:.0f}s: its process "
                                    "was ended; check the brokers and retry") from None
            if line is None:  # stdout closed: the child ended without an answer
                raise KafkalabError(f"{what} failed: its process {_ended(proc, stderr, readers[1])}")
            try:
                report = json.loads(line)
            except ValueError:
                continue  # not ours (serve_one keeps stray prints off this pipe; a library may still write)
            if "progress" in report:
                if progress is not None:
                    progress(report["progress"])
            elif "error" in report:
                raise KafkalabError(str(report["error"]))
            elif "ok" in report:
                return report["ok"]
    except OSError as exc:  # the request could not be written: it died at once
        raise KafkalabError(f"{what} failed: its process {_ended(proc, stderr, readers[1])} ({exc})") from None
    finally:
        _end(proc)


def _lines(stream: IO[str], put: Callable[[Any], None]) -> None:
    try:
        for line in stream:
            put(line.rstrip("\n"))
    except (OSError, ValueError):  # closed under the reader by _end
        pass
    put(None)


def _ended(proc: subprocess.Popen[str], stderr: deque[str | None], reader: threading.Thread) -> str:
    """How the child ended, in a few words, with its last line on stderr when it left one."""
    try:
        code = proc.wait(5)
    except subprocess.TimeoutExpired:
        return "closed its output and hung"
    reader.join(1)
    last = next((line.strip() for line in reversed(stderr) if line and line.strip()), "")
    how = f"died of {signal.Signals(-code).name} (librdkafka)" if code < 0 else f"ended (exit {code})"
    return f"{how}: {last[:200]}" if last else how


def _end(proc: subprocess.Popen[str]) -> None:
    """Kill the child unless it has exited, reap it and close its pipes: none outlives its call."""
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


# ---- the child's side ------------------------------------------------------------------------------------

def serve_one(answer: Callable[[dict[str, Any], Callable[[Any], None]], Any]) -> None:
    """The child's ``__main__``: ``answer(request, progress)`` for the request on stdin, its JSON on stdout.

    A KafkalabError is answered as its message; any other exception ends the process with its traceback on
    stderr, which the parent quotes. The child exits when its parent goes away."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # nothing but answers on the pipe: a stray print goes to stderr
    sys.stdout = sys.stderr
    request_line = sys.stdin.readline()
    if not request_line:
        return
    lock = threading.Lock()

    def send(report: dict[str, Any]) -> None:
        with lock:
            answers.write(json.dumps(report) + "\n")
            answers.flush()

    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    try:
        result = answer(json.loads(request_line), lambda done: send({"progress": done}))
    except KafkalabError as exc:
        send({"error": str(exc)})
    else:
        send({"ok": result})
    answers.close()


def _exit_when_orphaned(parent: int) -> None:
    """Exit when stdin closes or the parent is gone (the parent's end of stdin may be held open elsewhere)."""
    closed = threading.Event()

    def watch_stdin() -> None:
        try:
            while sys.stdin.readline():
                pass
        except (OSError, ValueError):
            pass
        closed.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    while not closed.wait(PARENT_POLL_S):
        if os.getppid() != parent:
            break
    os._exit(EXIT_ORPHANED)
