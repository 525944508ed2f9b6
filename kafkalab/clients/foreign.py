"""A lab role (the producer, a consumer) played by a foreign command: the course's Java apps, kafkalab's own Java
clients, or the attendee's program.

The command runs through ``/bin/sh -c`` in a directory of its own in the run dir (``RUN/producer/``,
``RUN/consumer-N/``), in a session of its own, so that a stop, a crash or a pause reaches every process it started
(a ``java`` under a shell or under ``mvn exec:java``). Its output goes to ``output.log`` there and to its pane; what
it did is read from the payload logs it writes there (the course's ``payload*.log``, or kafkalab's CSV): a line per
acknowledged record for a producer, per processed record for a consumer. What only a client's internals know (its
assignment, its commits) a consumer learns from its group, as the brokers describe it (:meth:`ForeignConsumer.
observe_group`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalab.clients.child_client import ChildClient
from kafkalab.clients.foreign_command import CommandError, RoleValues, fill
from kafkalab.clients.options import ConsumerConfig, ProducerConfig
from kafkalab.clients.stats import ClientState, ConsumerStats, EventCallback, ProducerStats, RateMeter
from kafkalab.logformat import CONTROL_VALUES, COURSE_LOG_GLOBS

OUTPUT_LOG = "output.log"
# a line a foreign client may print to tell what only it knows (kafkalab's Java producer does); kept in output.log,
# not shown in the pane: REPORT_PREFIX {"attempted": N, "failed": {NAME: n}}, or an event for the timeline,
# REPORT_PREFIX {"event": "stalled" | "resumed" | "assigned" | "revoked" | "lost", "detail": "...",
# "partitions": [...]} (a producer's stalls, a consumer's rebalance callbacks)
REPORT_PREFIX = "kafkalab-report "
REBALANCE_EVENTS = ("assigned", "revoked", "lost")  # a consumer's, with the partitions its callback was given
REPORTED_EVENTS = ("stalled", "resumed", *REBALANCE_EVENTS)
OUTPUT_LINES = 8  # the last lines of its output a pane shows
STOP_GRACE_S = 10.0  # a stopped foreign client (SIGTERM) is killed after this
_SHELL_WORDS = {"cd", "exec", "env", "export", "source", ".", "set", "ulimit", "nice", "time", "nohup", "timeout"}


def check_runnable(template: str, what: str) -> None:
    """CommandError when the program ``template`` starts is not on PATH (nor a file): known before the run starts.
    Only a plain first word is checked: a shell construct (``cd x && ...``, ``FOO=1 java``) is left to the shell."""
    try:
        words = shlex.split(template.replace("{", "").replace("}", ""))
    except ValueError as exc:
        raise CommandError(f"{what}: {exc}: check its quotes") from None
    words = [w for w in words if "=" not in w.split("/")[0]]  # FOO=bar assignments before the program
    if not words or words[0] in _SHELL_WORDS or any(c in words[0] for c in "$`;&|()<>"):
        return
    program = words[0]
    if "/" in program:
        if not os.access(program, os.X_OK):
            raise CommandError(f"{what}: {program} is not an executable file: check the path")
    elif shutil.which(program) is None:
        raise CommandError(f"{what}: {program}: no such command on PATH: check the spelling, or give its full path")


@dataclass
class PayloadCount:
    """Records a foreign client logged, counted as its payload logs grow (control records left out)."""

    work_dir: Path
    records: int = 0
    files: list[str] = field(default_factory=list)
    _read: dict[Path, int] = field(default_factory=dict)  # bytes of complete lines counted, per file
    _rows: dict[Path, int] = field(default_factory=dict)

    def refresh(self) -> int:
        for path in self.paths():
            self._count(path)
        self.records = sum(self._rows.values())
        self.files = [p.name for p in self._rows]
        return self.records

    def skip_existing(self) -> None:
        """Count only what is written from now on."""
        for path in self.paths():
            self._read[path] = path.stat().st_size

    def paths(self) -> list[Path]:
        globs = (*COURSE_LOG_GLOBS, "*.csv", "*.csv.partial")
        return sorted({p for pattern in globs for p in self.work_dir.glob(pattern)})

    def _count(self, path: Path) -> None:
        start = self._read.get(path, 0)
        if path.exists() and path.stat().st_size < start:
            start = 0  # truncated (payload-trunc): all it holds now is new
        try:
            with path.open("rb") as fh:
                fh.seek(start)
                chunk = fh.read()
        except OSError:
            return
        end = chunk.rfind(b"\n") + 1  # a half-written last line is counted once it is whole
        rows = self._rows.get(path, 0)
        for line in chunk[:end].splitlines():
            if start == 0 and rows == 0 and path.suffix != ".log" and line.startswith(b"msg_id,"):
                continue  # kafkalab's CSV header
            parts = line.split(b",", 3)
            if len(parts) == 4 and parts[3].strip().decode(errors="replace") in CONTROL_VALUES:
                continue
            rows += 1
        self._read[path] = start + end
        self._rows[path] = rows


def no_log_said(role: str, run_dir: Path) -> str | None:
    """Why a foreign ``role`` leaves the analysis nothing to read (None when it wrote a payload log)."""
    work_dir = run_dir / role
    if PayloadCount(work_dir).paths():
        return None
    what = "acknowledged" if role.startswith("producer") else "processed"
    return (f"{role} (your command) wrote no payload log in {work_dir}: write payload.log there, a line "
            f"topic,partition,key,value per {what} record (what it said: {work_dir / OUTPUT_LOG})")


class ForeignClient(ChildClient):
    """The process side of a foreign role: started, stopped (SIGTERM, SIGKILL after a grace), crashed (SIGKILL),
    paused and resumed, each to its whole process group; its output kept for the pane and in ``output.log``."""

    MODULE = ""  # not a kafkalab child module: the command is the process

    def __init__(self, name: str, template: str, values: RoleValues, on_event: EventCallback | None) -> None:
        work_dir = values.run_dir / name
        super().__init__(name, work_dir, on_event)
        self.template = template
        self.values = values
        self.work_dir = work_dir
        self.count = PayloadCount(work_dir)
        self.output: deque[str] = deque(maxlen=OUTPUT_LINES)
        self._rate = RateMeter()
        self._stop_requested = False
        self._state = ClientState.STARTING
        self._started_at: float | None = None
        self.report: dict[str, Any] = {}  # the latest report line's facts (empty: it reports nothing)

    def start(self) -> None:
        if self._proc is not None:
            raise RuntimeError(f"{self.name} already started")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.count.skip_existing()  # an instance started again appends to the logs of the one before it
        options_file = self.values.write_options_file(self.work_dir)
        line = fill(self.template, self.values, options_file)
        env = {**os.environ, **self.values.environment(options_file)}
        self._proc = subprocess.Popen(
            ["/bin/sh", "-c", line], cwd=self.work_dir, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
        self._own_session = True  # signals go to the whole group it starts (a shell's java, mvn's forked JVM)
        self._started_at = time.monotonic()
        self._state = ClientState.RUNNING
        self._emit("started", f"{self.name}: {line}")
        self._thread = threading.Thread(target=self._follow, name=f"kafkalab-{self.name}", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        with (self.work_dir / OUTPUT_LOG).open("a", encoding="utf-8") as log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                if line.startswith(REPORT_PREFIX):
                    self._take_report(line.removeprefix(REPORT_PREFIX))
                elif line.strip():
                    self.output.append(line.rstrip())
        code = proc.wait()
        self.count.refresh()
        if self._crash_requested and not self._ended_by_stop:
            self._state = ClientState.CRASHED
            self._emit("crashed", "killed (SIGKILL to its process group: no close)")
        elif code == 0 or self._stop_requested or self._ended_by_stop:
            self._state = ClientState.FINISHED
            self._emit("finished", f"{self.name} ended (exit status {code})")
        else:
            self._state = ClientState.FAILED
            self._error = self._failure(code)
            self._emit("error", self._error)

    def _take_report(self, text: str) -> None:
        with contextlib.suppress(ValueError):  # a malformed report tells nothing: the last good one stands
            facts = json.loads(text)
            if not isinstance(facts, dict):
                return
            if facts.get("event") in REPORTED_EVENTS:
                if facts["event"] in ("stalled", "resumed"):
                    self._state = ClientState.BLOCKED if facts["event"] == "stalled" else ClientState.RUNNING
                parts = tuple(int(p) for p in facts.get("partitions", ()))
                self._rebalanced(facts["event"], parts)
                self._emit(facts["event"], str(facts.get("detail", "")), parts)
                self.report.setdefault("events", True)  # it reports: what its events tell is observed
            else:
                self.report = {**self.report, **facts}

    def _rebalanced(self, event: str, partitions: tuple[int, ...]) -> None:
        """A reported rebalance callback (a consumer's): see :class:`ForeignConsumer`."""

    def _failure(self, code: int) -> str:
        """Why it failed, in a line: its last output line, or its exit status (a command that exits at once is
        most often not found, or wrongly quoted)."""
        last = self.output[-1] if self.output else ""
        quick = self._started_at is not None and time.monotonic() - self._started_at < 3.0
        said = f": {last}" if last else ""
        if quick:
            return (f"{self.name}'s command exited at once with status {code}{said} "
                    f"(its output: {self.work_dir / OUTPUT_LOG})")
        return f"{self.name}'s command exited with status {code}{said}"

    def terminate(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM to its process group; SIGKILL if it has not ended within ``grace_s`` (said on the timeline)."""
        self._stop_requested = True
        self._signal(signal.SIGTERM)

        def enforce() -> None:
            if not self.join(grace_s) and self._proc is not None and self._proc.poll() is None:
                self._emit("note", f"{self.name} did not end within {grace_s:g}s of SIGTERM: killed")
                self._signal(signal.SIGKILL)

        threading.Thread(target=enforce, daemon=True).start()

    def crash(self) -> None:
        """Abrupt end: SIGKILL to its process group."""
        self._kill()

    def end(self) -> None:
        """The run was stopped: SIGTERM now (a stop is not a crash)."""
        self._ended_by_stop = True
        self.terminate(grace_s=1.0)

    def _progress(self) -> tuple[ClientState, int, float]:
        records = self.count.refresh()
        self._rate.sample(records)
        state = self._shown_state(self._state)
        return state, records, 0.0 if state.halted else self._rate.rate()

    def _shown_log(self) -> str | None:
        return str(self.work_dir / self.count.files[-1]) if self.count.files else None


class ForeignProducer(ForeignClient):
    """The producer role played by a command; ``acked`` is the lines of its payload log."""

    def __init__(self, config: ProducerConfig, template: str, values: RoleValues,
                 on_event: EventCallback | None = None) -> None:
        super().__init__(config.name, template, values, on_event)
        self.config = config

    def stop(self, drain: bool = True) -> None:
        self.terminate()

    def stats(self) -> ProducerStats:
        """Acknowledged: its payload log's lines; attempted and failed: its report, where it gives one."""
        state, records, rate = self._progress()
        failed = {str(k): int(v) for k, v in self.report.get("failed", {}).items()}  # reported, where it reports
        attempted = int(self.report.get("attempted", records))
        return ProducerStats(name=self.name, state=state, attempted=max(attempted, records), acked=records,
                             failed=failed, unknown=0, in_flight=max(0, attempted - records - sum(failed.values())),
                             rate=rate, total=self.config.total, log_path=self._shown_log(), error=self._error,
                             output=tuple(self.output), foreign=True, reports=bool(self.report))


@dataclass(frozen=True)
class GroupFacts:
    """What the brokers say of a foreign consumer's group: the partitions its members hold, its commits."""

    state: str
    assignment: tuple[int, ...]
    committed: Mapping[int, int]
    lag: Mapping[int, int]


class ForeignConsumer(ForeignClient):
    """A consumer role played by a command; ``processed`` is the lines of its payload log, its lag its group's,
    its assignment what it reports of its rebalances, else its group's (one foreign consumer per group is told
    apart; several share what their group holds)."""

    def __init__(self, config: ConsumerConfig, template: str, values: RoleValues,
                 on_event: EventCallback | None = None) -> None:
        super().__init__(config.name, template, values, on_event)
        self.config = config
        self._group: GroupFacts | None = None
        # its partitions as its own rebalance callbacks report them (None: it reports none). They outrank its
        # group's: a member that died without leaving still holds its partitions in the group until its session
        # expires, and would pass for this consumer's assignment
        self._reported: set[int] | None = None

    def observe_group(self, facts: GroupFacts) -> None:
        self._group = facts

    def _rebalanced(self, event: str, partitions: tuple[int, ...]) -> None:
        if event not in REBALANCE_EVENTS:
            return
        held = self._reported or set()
        self._reported = held | set(partitions) if event == "assigned" else held - set(partitions)

    def stop(self) -> None:
        self.terminate()

    def stats(self) -> ConsumerStats:
        state, records, rate = self._progress()
        group = self._group if not state.ended else None
        extra: dict[str, Any] = {}
        if group is not None:
            extra = {"assignment": group.assignment, "committed": dict(group.committed), "lag": dict(group.lag)}
        if self._reported is not None and not state.ended:
            extra["assignment"] = tuple(sorted(self._reported))
        return ConsumerStats(
            name=self.name, group=self.config.group_id, state=state,
            group_state="dead" if state.ended else (group.state.lower() if group else "joining"),
            received=records, processed=records, rate=rate, log_path=self._shown_log(), error=self._error,
            output=tuple(self.output), foreign=True, reports=bool(self.report), **extra)
