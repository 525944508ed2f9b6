"""Every consumer group of a cluster described in a helper process, for a view that polls them.

librdkafka 2.16 takes its whole process down when a group's coordinator moves under an admin client's group
request: ``rd_kafka_admin_coord_response_parse`` fails an assertion (``eonce->refcnt > 0``) answering
DescribeConsumerGroups, and ListConsumerGroupOffsets segfaults in ``rd_kafka_cgrp_op`` (see
:mod:`kafkalab.admin.committed`). A console polls its groups while brokers are killed and restarted, just
when coordinators move, and died mid-run so. In a helper such a crash costs one answer: the next call starts
a new helper. The helper writes to a log file, so librdkafka's last words never reach the console's terminal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

from kafkalab.admin.client import Admin
from kafkalab.admin.groups import GroupDescription, Groups
from kafkalab.errors import KafkalabError

ANSWER_GRACE_S = 20.0  # beyond the describes' own wait: the helper's start, a loaded machine
EXIT_WAIT_S = 5.0  # from a helper's pipe closing to its exit code
HELPER_COMMAND = (sys.executable, "-m", "kafkalab.admin.group_helper")


def describe_every_group(groups: Groups, wait_s: float) -> tuple[GroupDescription, ...]:
    """List the groups, then describe each within ``wait_s`` in all; KafkalabError when the list fails."""
    listing = groups.list()
    deadline = time.monotonic() + wait_s
    return tuple(groups.describe(g.group_id, wait_s=max(0.2, deadline - time.monotonic())) for g in listing)


class Answerer:
    """The helper's side: one :class:`Groups` per cluster (a new one when the key changes), and a new one after
    an answer in which a group's coordinator did not answer. librdkafka's admin client can hold on to a
    coordinator that moved: once a killed coordinator was back, every DescribeConsumerGroups of that client
    said NOT_COORDINATOR for good, while a new client answered at once."""

    def __init__(self, make: Callable[[str, float], Groups] | None = None) -> None:
        self._make = make or (lambda bootstrap, timeout_s: Groups(Admin(bootstrap, timeout_s=timeout_s)))
        self._current: tuple[object, Groups] | None = None

    def answer(self, bootstrap: str, key: object, timeout_s: float, wait_s: float) -> tuple[bool, object]:
        """(True, every group described) or (False, the error's one line)."""
        if self._current is None or self._current[0] != key:
            self._current = (key, self._make(bootstrap, timeout_s))
        try:
            described = describe_every_group(self._current[1], wait_s)
        except KafkalabError as exc:
            self._current = None
            return False, str(exc)
        if not all(desc.reachable for desc in described):
            self._current = None
        return True, described


def serve() -> None:
    """The helper (``python -m kafkalab.admin.group_helper``, stderr to its log): requests on stdin, answers on
    stdout, until the console's end closes."""
    answers = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)  # nothing but answers on the pipe: a stray print goes to the log
    conn_in = Connection(os.dup(0), writable=False)
    answerer = Answerer()
    while True:
        try:
            request = conn_in.recv()
        except (EOFError, OSError):
            return
        answers.send(answerer.answer(*request))


class GroupHelper:
    """The console's end: :meth:`describe_all` asks the helper (started on first use, again after a crash)."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._to: Connection | None = None
        self._from: Connection | None = None
        self._lock = threading.Lock()

    def describe_all(self, bootstrap: str, key: object, timeout_s: float,
                     wait_s: float) -> tuple[GroupDescription, ...]:
        """Every group of the cluster at ``bootstrap`` (``key`` tells one cluster from the next on the same
        ports); KafkalabError when the cluster does not answer or the helper died answering."""
        with self._lock:
            to, back = self._connection()
            closed = False
            try:
                to.send((bootstrap, id(key), timeout_s, wait_s))
                answered = back.poll(wait_s + ANSWER_GRACE_S)
                if answered:
                    ok, answer = back.recv()
            except (EOFError, OSError):
                answered, closed = False, True
            if not answered:
                why = _why(self._end(exiting=closed))
                raise KafkalabError(f"the group helper process {why} describing the groups: the next poll starts a "
                                    f"new one (its log: {self.log_path})")
        if not ok:
            raise KafkalabError(answer)
        return answer

    def _connection(self) -> tuple[Connection, Connection]:
        if self._proc is None or self._proc.poll() is not None or self._to is None or self._from is None:
            self._end()
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "ab") as log:
                self._proc = subprocess.Popen(HELPER_COMMAND,
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                              start_new_session=True)
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._to = Connection(os.dup(self._proc.stdin.fileno()), readable=False)
            self._from = Connection(os.dup(self._proc.stdout.fileno()), writable=False)
            self._proc.stdin.close()
            self._proc.stdout.close()
        return self._to, self._from

    def _end(self, exiting: bool = False) -> int | None:
        """Kill the helper (if any) and forget it; its exit code, None if it was alive (no answer in time).

        ``exiting``: its pipe closed, so it is dying; the kernel closes a process's pipes before it reaps it,
        so wait a moment for the exit code (the signal that ended it) before calling it alive."""
        proc, self._proc = self._proc, None
        for conn in (self._to, self._from):
            if conn is not None:
                conn.close()
        self._to = self._from = None
        if proc is None:
            return None
        try:
            code = proc.wait(EXIT_WAIT_S) if exiting else proc.poll()
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            proc.kill()
        proc.wait(5)
        return code

    def close(self) -> None:
        with self._lock:
            self._end()


def _why(code: int | None) -> str:
    if code is None:
        return "gave no answer in time while"
    if code < 0:
        return f"died of {signal.Signals(-code).name} (librdkafka) while"
    return f"ended (exit {code}) while"


if __name__ == "__main__":
    serve()
