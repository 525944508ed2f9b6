"""The static-membership-kip848 lab's parts, no cluster needed: the sessions it pins alike in both protocols,
and the verdict's line of how long each replacement waited for partitions (a refused one said so)."""

from __future__ import annotations

import random
from pathlib import Path

from kafkalab.analysis.report import Report
from kafkalab.labs import find_lab, load_lab
from kafkalab.labs.fault_firing import FaultFiring
from kafkalab.labs.judge import judge
from kafkalab.labs.measured import Unmeasured
from kafkalab.labs.metrics import assign_wait_summary
from kafkalab.labs.results import Outcome, RunResult
from kafkalab.labs.timeline import Timeline

SAID = "4,000 records were processed again by the same group: offsets committed late or not at all"


def report() -> Report:
    return Report(run=None, totals={}, classes={}, per_partition=[], samples={}, verdict=SAID, inputs=[],
                  elapsed_s=0.0)


def test_the_lab_runs_on_kafka_4_only_with_one_session_for_both_protocols() -> None:
    lab = load_lab(find_lab("static-membership-kip848"))
    assert lab.cluster.platforms() == (("kraft", "4.4.0"),)
    broker_session = int(lab.cluster.overrides["group.consumer.session.timeout.ms"])
    assert int(lab.cluster.overrides["group.consumer.min.session.timeout.ms"]) <= broker_session
    classic = [c for c in lab.consumers if c.config.group_protocol == "classic"]
    kip848 = [c for c in lab.consumers if c.config.group_protocol == "consumer"]
    assert classic and kip848
    # a plain replacement waits a session: the same one in both protocols, or the lab compares two timeouts
    assert {c.config.session_timeout_ms for c in classic} == {broker_session}
    # every static member is member-a, in each protocol's static group
    assert {(c.group, c.config.instance_id) for c in lab.consumers if c.config.instance_id} == {
        ("classic-static", "member-a"), ("kip848-static", "member-a")}


def test_the_summary_says_each_wait_and_a_refusal() -> None:
    values = {"consumer.6.assign_wait_s": 0.53, "consumer.5.assign_wait_s": 8.18,
              "consumer.8.assign_wait_s": Unmeasured.NEVER, "consumer.8.fatal_error": 1.0,
              "consumer.4.assign_wait_s": Unmeasured.NEVER}
    assert assign_wait_summary(values, {6: "classic-static", 5: "classic-plain", 8: "kip848-static",
                                        4: "kip848-static"}) == (
        "how long each consumer waited for its first partitions: consumer-6 (classic-static) 0.5 s; "
        "consumer-5 (classic-plain) 8.2 s; "
        "consumer-8 (kip848-static) fatal error, never got any; consumer-4 (kip848-static) never got any")
    assert assign_wait_summary(values, {}) == ""


def test_judge_adds_the_waits_of_the_consumers_the_expectations_name(tmp_path: Path) -> None:
    lab = load_lab(find_lab("static-membership-kip848"))
    faults = FaultFiring(lab.faults, Timeline(lab.id), random.Random(1), [1])
    after = {"consumer.5.assign_wait_s": 8.18, "consumer.6.assign_wait_s": 0.53, "consumer.7.assign_wait_s": 8.5,
             "consumer.8.assign_wait_s": Unmeasured.NEVER, "consumer.8.fatal_error": 1.0,
             "consumer.9.assign_wait_s": 0.24,
             "consumer.1.assign_wait_s": 2.1}
    result = judge(RunResult(lab.id, tmp_path, Outcome.ERROR), lab, {}, after, report(), faults)
    first, second = result.verdict.split("\n")
    assert first == SAID
    assert second == ("how long each consumer waited for its first partitions: consumer-5 (classic-plain) 8.2 s; "
                      "consumer-6 (classic-static) 0.5 s; consumer-7 (kip848-plain) 8.5 s; "
                      "consumer-8 (kip848-static) fatal error, never got any; "
                      "consumer-9 (kip848-static) 0.2 s")  # consumer 1 is named by no expectation: left out
    setup = load_lab(find_lab("setup-check"))
    plain = judge(RunResult(setup.id, tmp_path, Outcome.ERROR), setup, {}, {}, report(),
                  FaultFiring(setup.faults, Timeline(setup.id), random.Random(1), [1]))
    assert plain.verdict == SAID  # a lab about no consumer's wait: the analysis' verdict alone
