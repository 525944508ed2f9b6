"""What a run reports: its phase, each fault's status, each expectation's result, the run's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kafkalab.analysis.report import Report
from kafkalab.labs.events import Event


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

    @property
    def went_wrong(self) -> bool:
        return self.state in (FaultState.MISSED, FaultState.FAILED)

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
    actual: float | None
    wanted: float | None
    line: int = 0
    at: float | None = None  # for checks: seconds since the run began

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class RunResult:
    lab_id: str
    run_dir: Path
    outcome: Outcome
    expectations: list[ExpectationResult] = field(default_factory=list)
    checks: list[ExpectationResult] = field(default_factory=list)
    faults: list[FaultStatus] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    report: Report | None = None
    verdict: str = ""
    findings: list[str] = field(default_factory=list)  # what the brokers' logs showed (truncations), in words
    error: str = ""
    duration_s: float = 0.0
    seed: int = 0
    mode: str = ""  # the platform it ran on: metadata mode and Kafka release
    kafka_version: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome == Outcome.PASSED

    @property
    def failures(self) -> list[str]:
        """What did not hold, in words (empty when passed)."""
        out = [f"{e.text} (was {num(e.actual)})" for e in self.expectations if not e.held]
        out += [f"check at {num(c.at)}s: {c.text} (was {num(c.actual)})" for c in self.checks if not c.held]
        out += [f"fault {f.index + 1} ({f.text}) {f.state}: {f.detail}" for f in self.faults if f.went_wrong]
        if self.error:
            out.append(self.error)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "lab": self.lab_id, "run_dir": str(self.run_dir), "outcome": self.outcome, "passed": self.passed,
            "duration_s": round(self.duration_s, 2), "seed": self.seed, "mode": self.mode,
            "kafka_version": self.kafka_version, "verdict": self.verdict, "findings": self.findings,
            "error": self.error, "failures": self.failures,
            "expectations": [e.as_dict() for e in self.expectations],
            "checks": [c.as_dict() for c in self.checks],
            "faults": [f.as_dict() for f in self.faults], "metrics": self.metrics,
        }


def num(x: float | None) -> str:
    """A number as the failures print it: ``-`` for none, integers without a decimal point."""
    if x is None:
        return "-"
    return f"{x:g}" if x != int(x) else f"{int(x)}"
