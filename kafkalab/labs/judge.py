"""Judging a run: every number it is checked against, each expectation held or not, the outcome."""

from __future__ import annotations

from collections.abc import Mapping

from kafkalab.analysis.report import Report
from kafkalab.analysis.verdict import report_verdict
from kafkalab.labs import metrics, progress, truncation
from kafkalab.labs.expectations import Expectation
from kafkalab.labs.failover import lab_topics
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.measured import Measured, rounded
from kafkalab.labs.model import Lab
from kafkalab.labs.results import ExpectationResult, Outcome, RunResult
from kafkalab.labs.timeline import Timeline

REBALANCE_SUFFIXES = (".revoked", ".pause_s", ".stopped_s")


def judge(result: RunResult, lab: Lab, before_drain: Mapping[str, Measured], after: Mapping[str, Measured],
          report: Report, faults: FaultFiring, timeline: Timeline | None = None) -> RunResult:
    """Fill ``result`` from the live metrics (``before_drain`` and ``after`` it) and the report; the verdict
    says what moved in the run's ``timeline`` (KRaft: the active controller) beside what the report found."""
    # a consumer's partitions are those it held when the producer was done (draining closes them all)
    held = {k: v for k, v in before_drain.items() if k.endswith(".partitions")}
    values: dict[str, Measured] = {**after, **held, **metrics.report_metrics(report)}
    values["faults.missed"] = float(faults.went_wrong)
    values["faults.failed"] = float(faults.failed)
    truncations = [] if timeline is None else truncation.find_truncations(
        result.run_dir, truncation.run_began(timeline), lab_topics(lab))
    values["truncated"] = float(truncation.truncated_total(truncations))
    if any(e.metric.startswith("group.") or e.other.startswith("group.") for e in lab.expectations):
        values |= metrics.group_metrics(result.run_dir, lab)
    result.metrics = {k: rounded(v) for k, v in sorted(values.items())}
    result.report = report
    result.verdict = report.verdict
    # an exercise's verdict says what the run saw, not why, until the attendee found the cause; a loss under
    # acks=all is not the report's generic "acks=0 or 1" (the analysis does not know the producer's settings)
    causes = names_causes(lab)
    if not causes or (report.classes.get("lost_by_brokers") and lab.producer.config.acks == "all"):
        result.verdict = report_verdict(report, causes=causes, acks=lab.producer.config.acks)
    if any(e.metric.endswith(REBALANCE_SUFFIXES) for e in lab.expectations):  # the lab compares rebalances
        result.verdict += "\n" + metrics.rebalance_summary(values)
    groups = {c.local_id: c.group for c in lab.consumers}
    waited = sorted({int(m.split(".")[1]) for e in lab.expectations for m in (e.metric, e.other)
                     if m.startswith("consumer.") and m.endswith(metrics.WAIT_SUFFIXES)} & groups.keys())
    if waited:  # the lab is about how long consumers waited for their partitions
        result.verdict += "\n" + metrics.assign_wait_summary(values, {i: groups[i] for i in waited})
    if timeline is not None and (moved := metrics.controller_summary(timeline)):
        result.verdict += "\n" + moved
    if timeline is not None and (failed_over := metrics.failover_summary(timeline, lab_topics(lab))):
        result.verdict += "\n" + failed_over
    if timeline is not None and (cut := truncation.summary(
            truncations, timeline, lab.producer.config.acks, causes=causes)):
        result.verdict += "\n" + cut  # where records were truncated, from the brokers' logs
        result.findings = cut.splitlines()
    result.expectations = [evaluate(e, values) for e in lab.expectations]
    all_held = all(e.held for e in result.expectations) and all(c.held for c in faults.checks)
    result.outcome = Outcome.PASSED if all_held and not faults.went_wrong else Outcome.FAILED
    return result


def names_causes(lab: Lab) -> bool:
    """Whether a run's verdict may say why: a demonstration's always; a fix exercise's or an incident's only once
    the attendee's progress says they named the cause, fixed it or gave up (the cause is theirs to find)."""
    return (lab.fix is None and lab.incident is None) or progress.load(lab.id).revealed


def evaluate(e: Expectation, values: Mapping[str, Measured]) -> ExpectationResult:
    held, actual, wanted = e.evaluate(values)
    return ExpectationResult(e.text, held, actual, wanted, e.line)
