"""What a run reports: its phase, each fault's status, each expectation's result, the run's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kafkalab.analysis.report import Report
from kafkalab.labs.events import Event
from kafkalab.labs.measured import Measured, measured_from_json
from kafkalab.labs.wording import amount, unmet


class Phase(StrEnum):
    IDLE = "idle"
    STARTING = "starting"  # cluster, topics, consumers
    RUNNING = "running"  # producer and faults
    DRAINING = "draining"  # consumers catching up, then closed
    AUDITING = "auditing"  # brokers healed, every partition read back
    ANALYZING = "analyzing"
    DONE = "done"  # result ready (passed or failed)
    STOPPED = "stopped"  # ended early by stop_run
    ERROR = "error"  # could not run (cluster would not start, bad lab at run time...)


class Outcome(StrEnum):
    """How a run ended: its expectations all held or not, ended early, or could not run."""

    PASSED = "passed"
    FAILED = "failed"
    STOPPED = "stopped"
    ERROR = "error"


class FaultState(StrEnum):
    PENDING = "pending"  # its turn has not come
    WAITING = "waiting"  # its turn came: waiting for its trigger
    FIRED = "fired"
    MISSED = "missed"  # its trigger never came (or an earlier fault's never did)
    FAILED = "failed"  # fired, but could not be done (or, expected to fail, was done)


# ---- what a session tells its listeners, one record per kind ------------------------------------
@dataclass(frozen=True)
class PhaseChanged:
    phase: Phase


@dataclass(frozen=True)
class TimelineEvent:
    event: Event


@dataclass(frozen=True)
class RunMessage:
    text: str  # what the run says it is doing


@dataclass(frozen=True)
class RunFinished:
    result: RunResult


SessionEvent = PhaseChanged | TimelineEvent | RunMessage | RunFinished


@dataclass
class FaultStatus:
    index: int
    text: str
    state: FaultState = FaultState.PENDING
    fired_at: float | None = None  # seconds since the run began
    targets: list[str] = field(default_factory=list)
    detail: str = ""
    attendee: bool = False  # a live action of a fix attempt, not one of the lab's faults
    what: str = ""  # what it does, in words, without its trigger ("" in files older than it): its failure names it

    @property
    def went_wrong(self) -> bool:
        return self.state in (FaultState.MISSED, FaultState.FAILED)

    @property
    def failure(self) -> str:
        """Why it went wrong, as a sentence: "fault 4 (a note) did not fire: it waited 90 s for ..."."""
        who = f"{'your action' if self.attendee else 'fault'} {self.index + 1} ({self.what or self.text})"
        return f"{who} {'did not fire' if self.state == FaultState.MISSED else 'failed'}: {self.detail}"

    def copy(self) -> FaultStatus:
        return FaultStatus(**vars(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FaultStatus:
        """A status as ``as_dict`` wrote it (result.json, recording.jsonl)."""
        return cls(**{**d, "state": FaultState(d["state"])})

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class ExpectationResult:
    text: str
    held: bool
    actual: Measured | None
    wanted: Measured | None
    line: int = 0
    at: float | None = None  # for checks: seconds since the run began

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ExpectationResult:
        return cls(**{**d, "actual": measured_from_json(d.get("actual")),
                      "wanted": measured_from_json(d.get("wanted"))})


@dataclass
class RunResult:
    lab_id: str
    run_dir: Path
    outcome: Outcome
    expectations: list[ExpectationResult] = field(default_factory=list)
    checks: list[ExpectationResult] = field(default_factory=list)
    faults: list[FaultStatus] = field(default_factory=list)
    metrics: dict[str, Measured] = field(default_factory=dict)
    report: Report | None = None
    verdict: str = ""
    findings: list[str] = field(default_factory=list)  # what the brokers' logs showed (truncations), in words
    error: str = ""
    duration_s: float = 0.0
    seed: int = 0
    mode: str = ""  # the platform it ran on: metadata mode and Kafka release
    kafka_version: str = ""
    lab_sha256: str = ""  # the lab file it ran (a grade of these runs names the same)
    changes: list[str] = field(default_factory=list)  # the attendee's changes it ran with

    @property
    def passed(self) -> bool:
        return self.outcome == Outcome.PASSED

    @property
    def failures(self) -> list[str]:
        """What did not hold, as sentences (empty when passed): what an attendee reads under a verdict."""
        out = [unmet(e.text, e.actual, e.wanted) for e in self.expectations if not e.held]
        out += [f"at {amount(c.at, ' s')}, {unmet(c.text, c.actual, c.wanted)}" for c in self.checks if not c.held]
        out += [f.failure for f in self.faults if f.went_wrong]
        if self.error:
            out.append(self.error)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], run_dir: Path, report: Report | None = None) -> RunResult:
        """A result as :meth:`as_dict` wrote it to result.json."""
        return cls(d["lab"], run_dir, Outcome(d["outcome"]),
                   expectations=[ExpectationResult.from_dict(e) for e in d["expectations"]],
                   checks=[ExpectationResult.from_dict(c) for c in d["checks"]],
                   faults=[FaultStatus.from_dict(f) for f in d["faults"]],
                   metrics={k: v for k, v in ((k, measured_from_json(v)) for k, v in d["metrics"].items())
                            if v is not None},
                   report=report, verdict=d["verdict"], findings=d.get("findings", []), error=d["error"],
                   duration_s=d["duration_s"], seed=d["seed"], mode=d.get("mode", ""),
                   kafka_version=d.get("kafka_version", ""), lab_sha256=d.get("lab_sha256", ""),
                   changes=d.get("changes", []))

    def as_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab_id, "run_dir": str(self.run_dir), "outcome": self.outcome, "passed": self.passed,
            "duration_s": round(self.duration_s, 2), "seed": self.seed, "mode": self.mode,
            "kafka_version": self.kafka_version, "lab_sha256": self.lab_sha256, "changes": self.changes,
            "verdict": self.verdict, "findings": self.findings,
            "error": self.error, "failures": self.failures,
            "expectations": [e.as_dict() for e in self.expectations],
            "checks": [c.as_dict() for c in self.checks],
            "faults": [f.as_dict() for f in self.faults], "metrics": self.metrics,
        }
