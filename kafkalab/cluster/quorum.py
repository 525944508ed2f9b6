"""The KRaft quorum: active controller, epoch, high watermark, voters and observers (DescribeQuorum, KIP-836).

librdkafka has no DescribeQuorum call, so one helper JVM per cluster (QuorumWatch.java, run from the Kafka
jars as a single-file source program) holds Kafka's Java Admin client and answers JSON lines over a pipe.
Starting a JVM takes seconds; a question over the pipe takes milliseconds. Every wait here is bounded.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.cluster.cause_line import without_packages
from kafkalab.kafka_install import Distribution, java_helper_argv
from kafkalab.paths import package_file

QUORUM_WATCH_SOURCE = package_file("kafkalab.cluster", "QuorumWatch.java")
RESTART_BACKOFF_S = 5.0
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafkalab-quorum-spawner")
"""Launches from one long-lived thread: a parent-death signal fires when the launching thread ends."""


@dataclass(frozen=True)
class QuorumReplica:
    """One voter or observer as the active controller sees it."""

    node_id: int
    voter: bool
    log_end_offset: int | None  # None: the active controller has not heard from it in this epoch
    lag: int | None  # high watermark minus log end offset
    last_fetch_ms_ago: int | None
    last_caught_up_ms_ago: int | None

    def as_dict(self) -> dict[str, object]:
        return {"node_id": self.node_id, "voter": self.voter, "log_end_offset": self.log_end_offset,
                "lag": self.lag, "last_fetch_ms_ago": self.last_fetch_ms_ago,
                "last_caught_up_ms_ago": self.last_caught_up_ms_ago}


@dataclass(frozen=True)
class QuorumState:
    """One DescribeQuorum answer, or why there is none (``reachable`` False, ``error`` says why)."""

    taken_at: float
    reachable: bool
    leader: int | None = None
    epoch: int | None = None
    high_watermark: int | None = None
    replicas: tuple[QuorumReplica, ...] = field(default_factory=tuple)
    error: str = ""

    @property
    def voters(self) -> list[QuorumReplica]:
        return [r for r in self.replicas if r.voter]

    @property
    def observers(self) -> list[QuorumReplica]:
        return [r for r in self.replicas if not r.voter]

    def replica(self, node_id: int) -> QuorumReplica | None:
        return next((r for r in self.replicas if r.node_id == node_id), None)

    def as_dict(self) -> dict[str, object]:
        return {"reachable": self.reachable, "leader": self.leader, "epoch": self.epoch,
                "high_watermark": self.high_watermark, "error": self.error,
                "voters": [r.as_dict() for r in self.voters], "observers": [r.as_dict() for r in self.observers]}


def java_error_text(error: str) -> str:
    """A Java exception's text in words a pane can hold: a timeout says so, other classes lose their package
    ("org.apache.kafka.common.errors.TimeoutException: Call(callName=describeMetadataQuorum, ...) timed out"
    filled a controller pane with the package name)."""
    if "TimeoutException" in error:
        return "no answer in time: an election under way?"
    return without_packages(error)


def parse_answer(answer: dict[str, Any], taken_at: float) -> QuorumState:
    """A QuorumWatch reply as a QuorumState."""
    if not answer.get("ok"):
        return QuorumState(taken_at, False, error=java_error_text(str(answer.get("error", "no answer"))))
    hw = int(answer["high_watermark"])

    def replicas(items: list[dict[str, Any]], voter: bool) -> list[QuorumReplica]:
        out = []
        for item in items:
            leo = int(item["log_end_offset"])
            known = leo >= 0
            out.append(QuorumReplica(int(item["id"]), voter, leo if known else None,
                                     max(0, hw - leo) if known and hw >= 0 else None,
                                     item.get("last_fetch_ms_ago"), item.get("last_caught_up_ms_ago")))
        return out

    found = replicas(answer.get("voters", []), True) + replicas(answer.get("observers", []), False)
    return QuorumState(taken_at, True, int(answer["leader"]), int(answer["epoch"]), hw, tuple(found))


class QuorumWatch:
    """The long-lived helper JVM: :meth:`describe` asks it; :meth:`close` ends it.

    ``argv`` is the full java command line (the caller adds its supervision prefix and node marker);
    the JVM's stderr goes to ``stderr_path``, never to the terminal.
    """

    def __init__(self, argv: list[str], stderr_path: Path) -> None:
        self._argv = argv
        self._stderr_path = stderr_path
        self._lock = threading.Lock()
        self._answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self._ids = itertools.count(1)
        self._proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()
        self._started_at = 0.0
        self._closed = False

    def start(self) -> None:
        """Launch the JVM (returns at once; it compiles and connects in the background)."""
        with self._lock:
            self._launch()

    def _launch(self) -> None:
        self._ready.clear()
        self._answers = queue.Queue()
        self._started_at = time.monotonic()
        def spawn() -> subprocess.Popen[str]:
            with open(self._stderr_path, "ab") as err:
                return subprocess.Popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                        text=True, bufsize=1, start_new_session=True)

        self._proc = _SPAWNER.submit(spawn).result()
        threading.Thread(target=self._read, args=(self._proc, self._answers), name="kafkalab-quorum",
                         daemon=True).start()

    def _read(self, proc: subprocess.Popen[str], answers: queue.Queue[dict[str, Any]]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                answer = json.loads(line)
            except json.JSONDecodeError:
                continue
            if answer.get("ready"):
                self._ready.set()
            else:
                answers.put(answer)

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def describe(self, timeout_s: float = 2.0) -> QuorumState:
        """The quorum now, or an unreachable state saying why; waits at most about twice ``timeout_s``."""
        if not self._lock.acquire(timeout=timeout_s):  # another thread's question is still out
            return QuorumState(time.time(), False, error=f"the quorum helper is busy ({timeout_s:.1f}s)")
        try:
            return self._ask(timeout_s)
        finally:
            self._lock.release()

    def _ask(self, timeout_s: float) -> QuorumState:
        """One question to the helper (the caller holds the lock)."""
        began = time.monotonic()
        if self._closed:
            return QuorumState(time.time(), False, error="the quorum view is closed")
        proc = self._proc
        if proc is None or proc.poll() is not None:
            if proc is not None and time.monotonic() - self._started_at < RESTART_BACKOFF_S:
                return QuorumState(time.time(), False, error=f"the quorum helper exited ({proc.returncode})")
            self._launch()
        if not self._ready.wait(max(0.0, timeout_s - (time.monotonic() - began))):
            return QuorumState(time.time(), False, error="the quorum helper is starting")
        request_id = next(self._ids)
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps({"id": request_id, "timeout_ms": int(timeout_s * 1000)}) + "\n")
            self._proc.stdin.flush()
        except OSError as exc:
            return QuorumState(time.time(), False, error=f"the quorum helper is gone: {exc}")
        deadline = began + timeout_s + 1.0  # the helper's own wait, plus a margin for the pipe
        while (left := deadline - time.monotonic()) > 0:
            try:
                answer = self._answers.get(timeout=left)
            except queue.Empty:
                break
            if answer.get("id") == request_id:
                return parse_answer(answer, time.time())
        return QuorumState(time.time(), False, error=f"no answer from the quorum helper in {timeout_s:.1f}s")

    def close(self) -> None:
        """Close its stdin (it exits by itself), and kill it if it lingers."""
        with self._lock:
            self._closed = True
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=3)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait(timeout=5)


def quorum_watch_argv(java: str, dist: Distribution, bootstrap_controllers: str, jvm_args: list[str]) -> list[str]:
    """The helper's command line: a small heap, the jars and the helper's class, the controllers' endpoints."""
    return [java, "-Xms16m", "-Xmx96m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", *jvm_args,
            *java_helper_argv(dist, QUORUM_WATCH_SOURCE), bootstrap_controllers]
