"""One node (ZooKeeper, a broker or a KRaft controller): its state machine, controls, stats and log.

Controls return at once; the cluster's monitor thread calls :meth:`Node.tick` a few times a second to
notice readiness, exits, stop deadlines and delayed starts.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from kafkalab.cluster.cause_line import cause_line
from kafkalab.cluster.process import Backend, NodeProcess
from kafkalab.cluster.stuck_start import deaf_forwarding, stuck_reason
from kafkalab.errors import KafkalabError

STOP_BOUND_S = 30.0
TICK_S = 0.1  # how often the cluster's monitor ticks the nodes
START_RETRIES = 10
_NODE_EXISTS = re.compile(r"NodeExists|node already exists", re.IGNORECASE)
# a broker whose ZooKeeper session was lost while it started (ZooKeeper slow to answer on a busy machine) exits
# with "fatal exception during startup"; a new start gets a new session
_SESSION_LOST = re.compile(r"SessionExpiredException|KeeperErrorCode = ConnectionLoss")
SESSION_LOST_RETRIES = 3


class NodeState(StrEnum):
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    KILLED = "killed"
    PAUSED = "paused"
    FAILED = "failed"

    @property
    def alive(self) -> bool:
        return self in (NodeState.STARTING, NodeState.RUNNING, NodeState.STOPPING, NodeState.PAUSED)


class NodeKind(StrEnum):
    ZOOKEEPER = "zookeeper"
    BROKER = "broker"
    CONTROLLER = "controller"  # a dedicated KRaft controller (a combined node is a broker)


class EndCause(StrEnum):
    """Why a node is down, or going down: the state it shows follows from it, the reason says it in words."""

    NOT_STARTED = "not-started"
    STOPPED = "stopped"  # a controlled stop (SIGTERM) asked by a person or a lab, or a start cancelled
    KILLED = "killed"  # SIGKILL by a person or a lab
    STOP_TIMED_OUT = "stop-timed-out"  # a controlled stop that did not end within its bound: SIGKILL sent
    ENDED = "ended"  # ended by kafkalab itself (a run's teardown, a reset, quit): no fault, so not shown as killed
    CRASHED = "crashed"  # exited on its own
    # a controlled stop by a run's audit, which brought the node back to read what it holds: the lab had it down,
    # and the incident's evidence is the cluster as the lab left it
    AUDIT = "audit"

    @property
    def state(self) -> NodeState:
        """The state a node ended this way shows."""
        return {EndCause.KILLED: NodeState.KILLED, EndCause.STOP_TIMED_OUT: NodeState.KILLED,
                EndCause.CRASHED: NodeState.FAILED}.get(self, NodeState.STOPPED)

    @property
    def stop_words(self) -> str:
        """How a controlled stop for this cause begins its reason."""
        return "brought back for the audit, then stopped again" if self == EndCause.AUDIT else "stopped"


class NodeAction(StrEnum):
    """What can be done to a node: by a fault, a console key, or `kafkalab broker ACTION` in another terminal."""

    STOP = "stop"
    KILL = "kill"
    PAUSE = "pause"
    RESUME = "resume"
    START = "start"
    RESTART = "restart"

    def apply(self, node: Controls) -> None:
        """Do it to ``node`` now."""
        steps = {NodeAction.STOP: node.stop, NodeAction.KILL: node.kill, NodeAction.PAUSE: node.pause,
                 NodeAction.RESUME: node.resume, NodeAction.START: node.start, NodeAction.RESTART: node.restart}
        steps[self]()


class Controls(Protocol):
    """A node's controls, on a :class:`Node` or an :class:`ActionNode` alike."""

    def stop(self) -> None: ...
    def kill(self) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def start(self) -> None: ...
    def restart(self) -> None: ...


class ActionNode:
    """A node whose controls are one call with the action: a node driven elsewhere (the control socket of
    the process that owns it) or a stand-in."""

    def act(self, action: NodeAction) -> None:
        raise NotImplementedError

    def stop(self) -> None: self.act(NodeAction.STOP)
    def kill(self) -> None: self.act(NodeAction.KILL)
    def pause(self) -> None: self.act(NodeAction.PAUSE)
    def resume(self) -> None: self.act(NodeAction.RESUME)
    def start(self) -> None: self.act(NodeAction.START)
    def restart(self) -> None: self.act(NodeAction.RESTART)


@dataclass(frozen=True)
class NodeInfo:
    """A snapshot of one node, safe to hand to another thread."""

    name: str
    kind: NodeKind
    broker_id: int | None
    port: int
    state: NodeState
    reason: str
    pid: int | None
    uptime_s: float
    cpu_percent: float | None  # None: not known (a replay, which records no usage)
    rss_bytes: int | None
    restarts: int
    node_id: int | None = None  # Kafka's broker.id / node.id (a controller's too); None for ZooKeeper
    cause: EndCause | None = None  # why it is down or stopping; None while it starts, runs or is paused

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name, "kind": str(self.kind), "broker_id": self.broker_id, "port": self.port,
            "state": str(self.state), "reason": self.reason, "pid": self.pid,
            "uptime_s": round(self.uptime_s, 1),
            "cpu_percent": None if self.cpu_percent is None else round(self.cpu_percent, 1),
            "rss_bytes": self.rss_bytes, "restarts": self.restarts,
            "node_id": self.node_id, "cause": None if self.cause is None else str(self.cause),
        }


class Node:
    def __init__(
        self,
        name: str,
        argv: list[str],
        node_dir: Path,
        port: int,
        backend: Backend,
        broker_id: int | None = None,
        session_timeout_s: float = 3.0,
        kind: NodeKind | None = None,
        node_id: int | None = None,
        kraft: bool = False,
        silence_note: str = "",
    ) -> None:
        """``session_timeout_s``: how long a SIGKILLed broker waits before its restart (its old ZooKeeper
        session; 0 in KRaft, where a restarted broker registers with a new incarnation at once).
        ``silence_note``: how the cluster notices this node gone silent, for the timeline's kill and pause lines."""
        self.name = name
        self.kind = kind or (NodeKind.BROKER if broker_id is not None else NodeKind.ZOOKEEPER)
        self.broker_id = broker_id
        self.node_id = node_id if node_id is not None else broker_id
        self._kraft_broker = kraft and broker_id is not None
        self._relaunch_reason = ""  # why the running JVM was killed to start a new one
        self._ready_marker = (
            f"[KafkaRaftServer nodeId={self.node_id}] Kafka Server started" if kraft
            else f"[KafkaServer id={broker_id}] started" if broker_id is not None else None
        )
        self.port = port
        self._argv = argv
        self.node_dir = node_dir
        self.log_path = node_dir / "logs" / "server.log"
        self.stdout_path = node_dir / "logs" / "stdout.log"
        self._backend = backend
        self._session_timeout_s = session_timeout_s
        self.silence_note = silence_note
        self._lock = threading.RLock()
        self._proc: NodeProcess | None = None
        self.state = NodeState.STOPPED
        self.reason = "not started"
        self.cause: EndCause | None = EndCause.NOT_STARTED
        self._started_at = 0.0
        self._log_offset = 0
        self._killed_at = 0.0
        self._start_not_before = 0.0
        self._pending_start = False
        self._stop_deadline = 0.0
        self._attempts = 0
        self._ready = False
        self._start_log = ""  # the log of this start, as the last readiness check read it
        self._stdout_offset = 0
        self.restarts = 0
        self.on_change: Callable[[Node, NodeState, str], None] | None = None
        self.on_launch: Callable[[Node, int], None] | None = None  # a new process, with its pid

    # ---- controls (return at once) -------------------------------------------------------------
    def start(self) -> None:
        """Start the node; after a SIGKILL, first wait out its ZooKeeper session (shown in the reason)."""
        with self._lock:
            if self.state.alive and self.state != NodeState.STOPPING:
                return
            if self.state == NodeState.STOPPING:
                self._pending_start = True
                return
            self._attempts = 0
            wait_s = self._session_timeout_s + 1.0 if self._session_timeout_s else 0.0
            wait_until = self._killed_at + wait_s if self.kind == NodeKind.BROKER else 0
            self._schedule_start(wait_until)

    def stop(self, bound_s: float = STOP_BOUND_S, cause: EndCause = EndCause.STOPPED) -> None:
        """SIGTERM (controlled shutdown for a broker); SIGKILL if it has not exited after ``bound_s``. ``cause``:
        who stops it, kept once it exited."""
        with self._lock:
            if self._proc is None or not self.state.alive:
                self._pending_start = False
                if self.state == NodeState.STARTING:  # a delayed start not yet launched
                    self._end(cause, "start cancelled")
                return
            self._proc.terminate()
            if self.state == NodeState.PAUSED:
                self._proc.resume()  # a stopped JVM cannot run its shutdown hook
            self._stop_deadline = time.monotonic() + bound_s
            self._set(NodeState.STOPPING, "SIGTERM sent", cause)

    def kill(self) -> None:
        with self._lock:
            self._pending_start = False
            if self._proc is None or not self.state.alive:
                if self.state == NodeState.STARTING:
                    self._end(EndCause.STOPPED, "start cancelled")
                return
            self._proc.kill()
            self._killed_at = time.monotonic()
            self._end(EndCause.KILLED, "SIGKILL sent")

    def end(self, reason: str) -> None:
        """Ended by kafkalab itself (a run's teardown, a reset, quit): SIGKILL, but shown as stopped with
        ``reason``: only a fault someone applied reads as killed."""
        with self._lock:
            self._pending_start = False
            if self._proc is not None and self.state.alive:
                self._proc.kill()
                self._killed_at = time.monotonic()
            if self.state.alive or self.state == NodeState.KILLED:
                self._end(EndCause.ENDED, reason)

    def pause(self) -> None:
        with self._lock:
            if self._proc is not None and self.state in (NodeState.RUNNING, NodeState.STARTING):
                self._proc.pause()
                self._set(NodeState.PAUSED, "SIGSTOP sent")

    def resume(self) -> None:
        with self._lock:
            if self._proc is not None and self.state == NodeState.PAUSED:
                self._proc.resume()
                ready = self._ready_line_seen()
                self._set(NodeState.RUNNING if ready else NodeState.STARTING, "SIGCONT sent")

    def restart(self) -> None:
        """Stop (controlled) then start again; a killed or stopped node just starts."""
        with self._lock:
            if self.state.alive and self._proc is not None:
                self.stop()
                self._pending_start = True
            else:
                self.start()

    # ---- monitoring ------------------------------------------------------------------------------
    def tick(self) -> None:
        """Advance the state machine; called by the cluster monitor."""
        with self._lock:
            now = time.monotonic()
            if self.state == NodeState.STARTING and self._proc is None:
                if now >= self._start_not_before:
                    self._launch()
                else:
                    left = self._start_not_before - now
                    self.reason = f"waiting {left:.0f}s for the old ZooKeeper session of {self.name} to expire"
                return
            if self._proc is None:
                return
            code = self._proc.poll()
            if code is not None:
                self._on_exit(code)
                return
            if self.state == NodeState.STARTING and self._ready_line_seen():
                self._set(NodeState.RUNNING, f"ready in {now - self._started_at:.1f}s")
            elif (self.state == NodeState.STARTING and self._kraft_broker and not self._relaunch_reason
                  and (stuck := stuck_reason(self._start_log, self._ready_marker or ""))):
                self._proc.kill()
                self._relaunch_reason = stuck
            elif self.state == NodeState.STOPPING and now > self._stop_deadline:
                self._proc.kill()
                self._killed_at = now
                self._set(NodeState.STOPPING, "did not stop within the bound: SIGKILL sent", EndCause.STOP_TIMED_OUT)

    def _on_exit(self, code: int) -> None:
        self._proc = None
        if self.state == NodeState.STOPPED:  # ended by kafkalab (end): its reason stays
            return
        if self.state == NodeState.STOPPING:
            if self.cause == EndCause.STOP_TIMED_OUT:
                self._end(EndCause.STOP_TIMED_OUT, f"exited with {code} after SIGKILL (stop bound passed)")
            else:  # 143 is the JVM's answer to SIGTERM: the controlled stop asked for
                cause = self.cause or EndCause.STOPPED
                how = "controlled shutdown" if code in (0, 143) else f"exited with {code}"
                self._end(cause, f"{cause.stop_words} ({how})")
            if self._pending_start:
                self._pending_start = False
                self.restarts += 1
                self.start()
        elif self.state == NodeState.KILLED:
            self.reason = "killed (SIGKILL)"
            if self._pending_start:
                self._pending_start = False
                self.start()
        elif self._relaunch_reason and self.state == NodeState.STARTING and self._attempts < START_RETRIES:
            self._schedule_start(time.monotonic(), keep_attempts=True)
            self.reason = self._relaunch_reason  # kept until the relaunch
        else:
            problem = self.last_problem()
            # the exception follows Kafka's last ERROR line ("Exiting Kafka due to fatal exception during startup")
            this_start = read_tail(self.log_path, self._log_offset)[1]
            if self.state == NodeState.STARTING and (retry := start_retry(this_start, self._attempts)):
                self._schedule_start(time.monotonic() + 1.0, keep_attempts=True)
                self.reason = f"{retry}: retrying (try {self._attempts + 1})"
                return
            self._end(EndCause.CRASHED, problem or f"exited with code {code}")

    def _schedule_start(self, not_before: float, keep_attempts: bool = False) -> None:
        if not keep_attempts:
            self._attempts = 0
        self._start_not_before = not_before
        self._proc = None
        self._set(NodeState.STARTING, "starting")

    def _launch(self) -> None:
        self._attempts += 1
        self._relaunch_reason = ""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._stdout_offset = self.stdout_path.stat().st_size if self.stdout_path.exists() else 0
        self._started_at = time.monotonic()
        self._ready = False
        self._proc = self._backend.launch(self.name, self._argv, self.stdout_path)
        if self.on_launch is not None and self._proc.pid is not None:
            self.on_launch(self, self._proc.pid)
        self.reason = "launched, waiting until ready" if self._attempts == 1 else f"{self.reason}: launched again"

    def _ready_line_seen(self) -> bool:
        if not self._ready and self._ready_marker is not None:
            log = self._start_log = this_start_log(self)
            self._ready = self._ready_marker in log and not (self._kraft_broker and deaf_forwarding(log))
        elif not self._ready:
            self._ready = zookeeper_answers(self.port)
        return self._ready

    def last_problem(self) -> str:
        """Why this start failed, as its log (then stdout) says it (:func:`cause_line`), for a failed node's reason."""
        for path, offset in ((self.log_path, self._log_offset), (self.stdout_path, self._stdout_offset)):
            if found := cause_line(read_tail(path, offset)[1]):
                return found[:300]
        return ""

    def _set(self, state: NodeState, reason: str, cause: EndCause | None = None) -> None:
        """``cause``: why a stopping node goes down; None for a live state (an end goes through :meth:`_end`)."""
        old = self.state
        self.state, self.reason, self.cause = state, reason, cause
        if self.on_change is not None and old != state:
            self.on_change(self, state, reason)

    def _end(self, cause: EndCause, reason: str) -> None:
        """Down for ``cause``: the state shown follows from it (ended by kafkalab reads as stopped, not killed)."""
        self._set(cause.state, reason, cause)

    # ---- views -----------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None else None

    def info(self) -> NodeInfo:
        """The node as shown: a node that is down has no pid, uptime, cpu or memory, though its process may not be
        reaped yet (supervision and reaping read :attr:`pid`, the process's own, not this view)."""
        proc = self._proc if self.state.alive else None
        cpu, rss = proc.usage() if proc is not None else (0.0, 0)
        alive = proc is not None
        return NodeInfo(
            name=self.name, kind=self.kind, broker_id=self.broker_id, port=self.port,
            state=self.state, reason=self.reason, pid=proc.pid if proc is not None else None,
            uptime_s=time.monotonic() - self._started_at if alive else 0.0,
            cpu_percent=cpu, rss_bytes=rss, restarts=self.restarts, node_id=self.node_id, cause=self.cause,
        )

    def log_tail(self, lines: int = 50) -> list[str]:
        """The last ``lines`` lines of the node's log (reads at most the last 256 KiB)."""
        return read_tail(self.log_path, 0, 262144)[1].splitlines()[-lines:]


class StartCancelled(Exception):
    """A start given up because its caller asked (``cancelled()`` turned true): the caller's stop, not a failure."""


def wait_ready(nodes: list[Node], deadline: float, progress: Callable[[str], None] | None = None,
               cancelled: Callable[[], bool] = lambda: False) -> None:
    """Until every node runs; a failed node, or the deadline, raises KafkalabError naming why; ``cancelled()``
    turning true raises StartCancelled (a Ctrl-C during a lab's start acts within a tick, not once all are up)."""
    ready: set[str] = set()
    while True:
        if cancelled():
            raise StartCancelled("the start was cancelled")
        for node in nodes:
            if node.state == NodeState.FAILED:
                raise KafkalabError(f"{node.name} failed to start: {node.reason} (log: {node.log_path})")
            if node.state == NodeState.RUNNING and node.name not in ready:
                ready.add(node.name)
                if progress:
                    progress(f"{node.name} ready ({len(ready)}/{len(nodes)})")
        if len(ready) == len(nodes):
            return
        if time.monotonic() > deadline:
            late = [n for n in nodes if n.state != NodeState.RUNNING]
            raise KafkalabError(f"{', '.join(n.name for n in late)} not ready in time (its last log line: "
                                f"{last_words(late[0])}): see {late[0].log_path}")
        time.sleep(TICK_S)


def end_and_wait(nodes: list[Node], reason: str, bound_s: float = 30.0) -> None:
    """End the nodes (shown as stopped with ``reason``) and wait until their processes are gone."""
    for node in nodes:
        node.end(reason)
    deadline = time.monotonic() + bound_s
    while any(n.pid is not None for n in nodes) and time.monotonic() < deadline:
        time.sleep(TICK_S)


def start_retry(this_start: str, attempts: int) -> str:
    """Why a start that failed after ``attempts`` tries is worth another ("" when it is not): the old session
    still held, or this start's session lost on a busy machine (a few tries: a ZooKeeper that never answers is a
    failure)."""
    if _NODE_EXISTS.search(this_start) and attempts < START_RETRIES:
        return "its old ZooKeeper session is still alive"
    if _SESSION_LOST.search(this_start) and attempts < SESSION_LOST_RETRIES:
        return "its ZooKeeper session was lost while it started (a busy machine)"
    return ""


def this_start_log(node: Node) -> str:
    """What the node's log gained since its process was last launched."""
    return read_tail(node.log_path, node._log_offset)[1]


def last_words(node: Node) -> str:
    """The node's last ERROR line of this start, else its last log line."""
    return node.last_problem() or (node.log_tail(1) or ["nothing logged"])[-1].strip()[:300]


def read_tail(path: Path, offset: int, most: int | None = None) -> tuple[int, str]:
    """(the offset read up to, what ``path`` holds from byte ``offset`` on, at most its last ``most`` bytes);
    a file now shorter than ``offset`` (truncated or replaced) is read from its start; (0, "") while it is absent."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = offset if offset <= size else 0
            fh.seek(start if most is None else max(start, size - most))
            text = fh.read().decode("utf-8", "replace")
            return fh.tell(), text
    except FileNotFoundError:
        return 0, ""


def zookeeper_answers(port: int, timeout: float = 0.5) -> bool:
    """ZooKeeper's `srvr` four-letter word answers with its version once it serves clients."""
    return "Zookeeper version" in zookeeper_command(port, "srvr", timeout)


def zookeeper_command(port: int, word: str, timeout: float = 0.5) -> str:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(word.encode())
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return ""
