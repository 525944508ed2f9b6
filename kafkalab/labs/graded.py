"""The lab a graded fix attempt runs: the attendee's changes applied to the lab as shipped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from kafkalab.errors import KafkalabError
from kafkalab.labs.faults import Fault
from kafkalab.labs.fix import Change, ChangeKind, FixExercise, actions_of
from kafkalab.labs.model import ClusterPlan, Lab, TopicPlan


def fix_of(lab: Lab) -> FixExercise:
    if lab.fix is None:
        raise KafkalabError(f"lab {lab.id} has no fix exercise: `kafkalab labs` marks the labs that have one")
    return lab.fix


def apply_changes(lab: Lab, changes: Iterable[Change]) -> Lab:
    """``lab`` with settings, topics and broker settings changed (actions are not part of the lab: they run
    beside its timeline); KafkalabError when the result is not valid, as on the command line.

    Client settings are applied together, as -D's are: ``producer.max-inflight=5`` and
    ``producer.idempotent=true`` are valid together whichever comes first. A topic created with at least the
    partitions an add-partitions fault grows it to makes that fault add none (:func:`_as_planned`)."""
    changes = list(changes)
    producer = {c.name: c.value for c in changes if c.kind == ChangeKind.SETTING and c.name.startswith("producer.")}
    consumer = {c.name: c.value for c in changes if c.kind == ChangeKind.SETTING and c.name.startswith("consumer.")}
    if producer:
        lab = replace(lab, producer=lab.producer.with_settings(producer))
    if consumer:
        lab = replace(lab, consumers=tuple(c.with_settings(consumer) for c in lab.consumers))
    processor = {c.name: c.value for c in changes if c.kind == ChangeKind.SETTING and c.name.startswith("processor.")}
    if processor and lab.processor is not None:
        lab = replace(lab, processor=lab.processor.with_settings(processor))
    for change in changes:
        if change.kind == ChangeKind.BROKER:
            lab = replace(lab, cluster=_with_override(lab.cluster, change.name.removeprefix("broker."), change.value))
        elif change.kind == ChangeKind.TOPIC:
            lab = _with_topic_setting(lab, change)
    return replace(lab, faults=tuple(_as_planned(f, lab.topics) for f in lab.faults))


def _as_planned(fault: Fault, topics: Sequence[TopicPlan]) -> Fault:
    """``fault``, or, for an add-partitions fault whose topic a change already created with at least its count,
    the fault that adds none: it still fires, saying so (the loader refuses such a fault in a lab as written)."""
    if fault.action != "add-partitions":
        return fault
    planned = next(t.partitions for t in topics if t.name == fault.target.topic)
    return replace(fault, planned=planned) if planned >= fault.partitions else fault


def _with_override(cluster: ClusterPlan, name: str, value: str) -> ClusterPlan:
    return replace(cluster, overrides={**cluster.overrides, name: value})


def _with_topic_setting(lab: Lab, change: Change) -> Lab:
    topics = {t.name: t for t in lab.topics}
    topic, key = change.topic, change.topic_key
    if topic not in topics:
        raise KafkalabError(f"{change.text}: this lab has no such topic: its topics are {', '.join(topics)}")
    plan: TopicPlan = topics[topic]
    if key == "replication_factor":
        if not 1 <= int(change.value) <= lab.cluster.brokers:
            raise KafkalabError(f"{change.text}: give 1..{lab.cluster.brokers} (the lab's brokers)")
        plan = replace(plan, replication_factor=int(change.value))
    elif key == "partitions":
        if int(change.value) < 1:
            raise KafkalabError(f"{change.text}: give at least 1")
        plan = replace(plan, partitions=int(change.value))
    else:
        plan = replace(plan, configs={**plan.configs, key: change.value})
    return replace(lab, topics=tuple(plan if t.name == topic else t for t in lab.topics))


def graded_lab(lab: Lab, changes: Sequence[Change]) -> Lab:
    """The lab a graded run runs: changes applied, the cure's faults left out, the fix's expectations.
    KafkalabError (one line) for a lab with no fix exercise or a change it does not allow."""
    fix = fix_of(lab)
    fix.check(changes)
    changed = apply_changes(lab, changes)
    faults = tuple(f for i, f in enumerate(changed.faults, start=1) if i not in fix.drop_faults)
    return replace(changed, faults=faults, expectations=fix.expectations, actions=actions_of(changes),
                   changes=tuple(c.text for c in changes) + lab.command_texts)
