"""A run's files checked against each other: every fact more than one view shows (issue 44) recomputed, with the
functions the run itself used, from what the run recorded, against what ``result.json`` and ``report.json`` say.
Each contradiction is a sentence (`kafkalab grades --check`, which also runs it on every graded run).

- leader changes: the lab's count (``timeline.leader_changes``) and the report's per partition, from timeline.json;
- failover: ``timeline.failover_s`` and the verdict's failover line, from timeline.json (its node states and
  who caused them say how each leader was taken away);
- faults: ``faults.missed`` / ``faults.failed`` against result.json's fault list, and each fault fired, missed or
  failed, and who fired it (the lab or the attendee), against timeline.json's fault events;
- lost against missed: result.json's metrics against report.json's counts, the split adding up, and the
  verdict's first line against those counts;
- truncation: ``truncated`` and the findings (the verdict's last lines) against the brokers' logs in the run's
  own ``cluster`` dir.

A fact is checked only where the run's files record it: a run without timeline.json, lab.toml (the lab's topics),
report.json or its brokers' logs is not checked on what they would have said.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafkalab.analysis.report import Report
from kafkalab.analysis.verdict import report_verdict
from kafkalab.errors import KafkalabError
from kafkalab.labs import truncation
from kafkalab.labs.events import Actor, EventKind, FaultEvent, FaultProblem, by_whom, event_from_dict
from kafkalab.labs.failover import lab_topics
from kafkalab.labs.faults import ANY_ACTIONS
from kafkalab.labs.loader import load_lab
from kafkalab.labs.measured import Measured, num
from kafkalab.labs.metrics import failover_summary, report_metrics, timeline_metrics
from kafkalab.labs.results import FaultState, FaultStatus, Outcome, RunResult
from kafkalab.labs.timeline import Timeline

RESULT_FILE = "result.json"
# the timeline's facts of the lab's topics that result.json keeps as metrics
LEADER_METRICS = ("timeline.leader_changes", "timeline.failover_s")
# a verdict's failover line (metrics.failover_summary), told from its other lines
FAILOVER_LINE = ("leader of ", "leaders of ")
SPLIT = ("lost", "lost_by_brokers", "missed_by_consumers")
# the producer's acks, each a wording of a truncation's finding: the run's own (its lab's, with an attendee's changes)
# is not recorded apart
ACKS = ("0", "1", "all")


class SavedTimeline(Timeline):
    """timeline.json read back with each event's ``t`` as recorded (``Timeline.add`` would stamp it again, a
    millisecond off at times, and a failover's seconds with it)."""

    def __init__(self, saved: Mapping[str, Any]) -> None:
        super().__init__(saved["lab"])
        self.started_at = saved["started_at"]
        self._events = [event_from_dict(e) for e in saved["events"]]


def read_result(run_dir: Path) -> RunResult:
    """The run's result.json, with its report.json when it has one."""
    d = json.loads((run_dir / RESULT_FILE).read_text(encoding="utf-8"))
    report_path = run_dir / "report.json"
    report = Report.from_json(json.loads(report_path.read_text(encoding="utf-8"))) if report_path.is_file() else None
    return RunResult.from_dict(d, run_dir, report)


def run_dir_contradictions(run_dir: Path) -> list[str]:
    """Everything :func:`run_contradictions` finds in the run in ``run_dir``, or that its result.json cannot be
    read."""
    try:
        run = read_result(run_dir)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"its result.json cannot be read ({exc})"]
    return run_contradictions(run)


def run_contradictions(run: RunResult) -> list[str]:
    """What the files in ``run.run_dir`` say against each other (see the module's doc)."""
    out = _split_problems(run) + _findings_problems(run) + _fault_count_problems(run)
    path = run.run_dir / "timeline.json"
    try:
        timeline = SavedTimeline(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [*out, f"its timeline.json cannot be read ({exc})"]
    if timeline is None:
        return out
    out += _problem_events(run.faults, timeline) + _fired_events(run.faults, timeline)
    out += _report_leader_problems(run, timeline)
    topics = _topics(run.run_dir)
    if topics is not None:
        out += _leader_problems(run, timeline, topics) + _truncation_problems(run, timeline, topics)
    return out


def _topics(run_dir: Path) -> set[str] | None:
    """The lab's topics, from the lab file the run kept (None: none, or one this version cannot read)."""
    path = run_dir / "lab.toml"
    try:
        return lab_topics(load_lab(path, check_name=False)) if path.is_file() else None
    except KafkalabError:
        return None


def _judged(run: RunResult) -> bool:
    """The run got to its verdict (a run stopped or broken before has none)."""
    return run.outcome in (Outcome.PASSED, Outcome.FAILED)


# ---- leader changes and failovers ---------------------------------------------------------------------------
def _leader_problems(run: RunResult, timeline: Timeline, topics: set[str]) -> list[str]:
    """The lab's leader changes and its longest failover, as metrics and as the verdict's failover line."""
    out = []
    if "timeline.leader_changes" in run.metrics:  # the timeline's metrics were taken: an absent failover is a claim
        again = timeline_metrics(timeline, topics, [])
        for name in LEADER_METRICS:
            said, recomputed = run.metrics.get(name), again.get(name)
            if said != recomputed:
                out.append(f"{name} is {_said(said)} in result.json, the timeline gives {_said(recomputed)}")
    if _judged(run):
        said_lines = [line for line in run.verdict.split("\n") if line.startswith(FAILOVER_LINE)]
        line = failover_summary(timeline, topics)
        if said_lines != ([line] if line else []):
            told = " / ".join(said_lines) or "no failover"
            out.append(f"the verdict says {told!r}, the timeline gives {line or 'no failover'!r}")
    return out


def _said(value: Measured | None) -> str:
    return "absent (not observed)" if value is None else num(value)


def _report_leader_problems(run: RunResult, timeline: Timeline) -> list[str]:
    """The report's leader changes per partition: those the run handed the analysis, from its timeline."""
    if run.report is None:
        return []
    counts = timeline.leader_changes()
    return [f"report.json counts {row.leader_changes} leader change(s) of {row.topic}/{row.partition}, the "
            f"timeline {counts.get((row.topic, row.partition), 0)}"
            for row in run.report.per_partition
            if row.leader_changes is not None and row.leader_changes != counts.get((row.topic, row.partition), 0)]


# ---- faults: fired, missed or failed, and by whom ------------------------------------------------------------
def _fault_count_problems(run: RunResult) -> list[str]:
    """The lab's faults that went wrong, as metrics, against its fault list (a grade's rows read the one, Results
    shows the other)."""
    lab_faults = [f for f in run.faults if not f.attendee]  # the metrics count the lab's, not the attendee's
    counts = {"faults.missed": sum(f.went_wrong for f in lab_faults),
              "faults.failed": sum(f.state == FaultState.FAILED for f in lab_faults)}
    return [f"{name} is {num(run.metrics[name])} in result.json, its fault list gives {count}"
            for name, count in counts.items() if name in run.metrics and run.metrics[name] != count]


def _problem_events(faults: Sequence[FaultStatus], timeline: Timeline) -> list[str]:
    """The timeline's fault-missed and fault-failed events against the fault list: a fault failed is one event;
    missed faults are one, the first (those after it never had their turn)."""
    out = []
    events = [e for e in timeline.events() if isinstance(e, FaultProblem)]
    for kind, state, words in ((EventKind.FAULT_MISSED, FaultState.MISSED, "did not fire"),
                               (EventKind.FAULT_FAILED, FaultState.FAILED, "failed")):
        said = sorted(e.index + 1 for e in events if e.kind == kind)
        listed = sorted(f.index + 1 for i, f in enumerate(faults) if f.state == state and (
            state == FaultState.FAILED or not _missed_before(faults, i)))
        if said != listed:
            out.append(f"the timeline says fault(s) {_numbers(said)} {words}, result.json {_numbers(listed)}")
    return out


def _missed_before(faults: Sequence[FaultStatus], i: int) -> bool:
    """Whether the fault before ``faults[i]`` of the same firer (the lab, or the attendee's actions) was missed."""
    before = [f for f in faults[:i] if f.attendee == faults[i].attendee]
    return bool(before) and before[-1].state == FaultState.MISSED


def _numbers(numbers: Sequence[int]) -> str:
    return ", ".join(map(str, numbers)) or "none"


def _fired_events(faults: Sequence[FaultStatus], timeline: Timeline) -> list[str]:
    """Each fault event of the timeline against a fault result.json lists as fired (or failed after it acted),
    in order, done by the same hand; each fault listed as fired that acts (not a note or a check) has one."""
    events = timeline.events(EventKind.FAULT)
    if not all(isinstance(e, FaultEvent) for e in events):
        return []  # a timeline written before fault events kept their facts: nothing to match them by
    out = []
    unmatched = sorted((f for f in faults if f.state in (FaultState.FIRED, FaultState.FAILED)),
                       key=lambda f: f.fired_at or 0.0)
    for e in sorted((e for e in events if isinstance(e, FaultEvent)), key=lambda e: e.t):
        same = [f for f in unmatched if _action(f) == e.action and f.text.endswith(e.trigger)]
        status = next((f for f in same if e.actor is None or (e.actor == Actor.ATTENDEE) == f.attendee), None)
        if status is None and same:
            status = same[0]
            out.append(f"the timeline says {e.detail or e.action}{by_whom(e.actor) or ' by the lab'} at {e.t:.1f} s, "
                       f"result.json lists it as {_who(status)}")
        elif status is None:
            out.append(f"the timeline has a fault done at {e.t:.1f} s ({e.detail or e.action}{by_whom(e.actor)}) "
                       "that result.json does not list as fired")
            continue
        unmatched.remove(status)
    out += [f"result.json lists {_who(f)} as fired, the timeline has no event of it" for f in unmatched
            if f.state == FaultState.FIRED and _action(f) not in ANY_ACTIONS]
    return out


def _action(f: FaultStatus) -> str:
    """The fault's action: its text begins with it ("kill leader test-topic/0 at progress 25%")."""
    return f.text.split(" ", 1)[0]


def _who(f: FaultStatus) -> str:
    return f"{'the attendee' if f.attendee else 'the lab'}'s fault {f.index + 1} ({f.what or f.text})"


# ---- lost against missed -------------------------------------------------------------------------------------
def _split_problems(run: RunResult) -> list[str]:
    """The report's counts as result.json's metrics carry them (the grade reads the one, Results shows the
    other), its loss split adding up, overall and per partition, and the verdict naming those counts."""
    report = run.report
    if report is None:
        return []
    counted = report_metrics(report)
    out = [f"{name} is {num(run.metrics[name])} in result.json, {num(value)} in report.json"
           for name, value in counted.items() if name in run.metrics and run.metrics[name] != value]
    rows: list[tuple[str, Mapping[str, int | None]]] = [("", report.classes)]
    rows += [(f" for {row.topic}/{row.partition}", row.counts) for row in report.per_partition]
    for where, counts in rows:
        lost, by_brokers, missed = (counts.get(k) for k in SPLIT)
        if lost is not None and by_brokers is not None and missed is not None and lost != by_brokers + missed:
            out.append(f"report.json counts {lost:,} lost{where}, yet {by_brokers:,} lost by the brokers and "
                       f"{missed:,} missed by the consumers")
    first = run.verdict.split("\n", 1)[0]
    if _judged(run) and first not in _verdicts(report):
        out.append(f"the verdict {first!r} is not what report.json's counts give")
    return out


def _verdicts(report: Report) -> set[str]:
    """Every first line a run's verdict may have from ``report``: the report's own, or the run's own words for its
    counts, with or without the cause (a fix or incident until its cause is found), and for an acks=all producer."""
    return {report.verdict, *(report_verdict(report, causes=causes, acks=acks)
                              for causes in (True, False) for acks in (None, "all"))}


# ---- truncation ----------------------------------------------------------------------------------------------
def _findings_problems(run: RunResult) -> list[str]:
    """The findings are the verdict's last lines: Results shows the one, result.json keeps both."""
    lines = run.verdict.split("\n")
    if run.findings and lines[-len(run.findings):] != run.findings:
        return ["the findings are not the verdict's last lines"]
    return []


def _truncation_problems(run: RunResult, timeline: Timeline, topics: set[str]) -> list[str]:
    """``truncated`` and the findings against the brokers' logs of the run's own cluster (a kept cluster's, named in
    cluster.txt, goes on with the runs after this one: not this run's record)."""
    own_logs = (run.run_dir / "cluster").is_dir() and bool(truncation.broker_logs(run.run_dir))
    if "truncated" not in run.metrics or not own_logs:
        return []
    began = truncation.run_began(timeline)
    until = max([began + run.duration_s, *(e.ts for e in timeline.events())])
    found = truncation.find_truncations(run.run_dir, began, topics, until)
    out = []
    if run.metrics["truncated"] != truncation.truncated_total(found):
        out.append(f"truncated is {num(run.metrics['truncated'])} in result.json, the brokers' logs give "
                   f"{truncation.truncated_total(found):,}")
    said = {truncation.summary(found, timeline, acks, causes) for acks in ACKS for causes in (True, False)}
    if "\n".join(run.findings) not in said:
        told = "; ".join(run.findings) or "no truncation"
        out.append(f"the findings say {told!r}, not what the brokers' logs give ({len(found)} truncation(s) "
                   f"of {truncation.truncated_total(found):,} records)")
    return out
