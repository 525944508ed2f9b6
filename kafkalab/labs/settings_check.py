"""A lab's broker settings and topic configs, and an attendee's changes to them, checked before anything starts
against Kafka's own definitions for the release the lab runs on (:mod:`kafkalab.kafka_install.config_check`).

A broker dies of a value it cannot parse (``offsets.topic.replication.factor=one``) and ignores a name it does not
know (a typo fixes nothing): both are refused here, in one line, at the console's prompt and on the command line.
Broker settings are checked as the lab's mode passes them to the brokers (in KRaft a ZooKeeper session timeout
becomes the broker session's, other ZooKeeper-only names are left out). The check needs the release's jars, as
the run does: without them it says, in one line, how to fetch them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from kafkalab.cluster.spec import overrides_for_mode
from kafkalab.kafka_install import Distribution
from kafkalab.kafka_install.config_check import Setting, check_settings
from kafkalab.labs.faults import Fault
from kafkalab.labs.fix import Change, ChangeKind
from kafkalab.labs.model import Lab
from kafkalab.labs.run_deps import lab_distribution

OWN_TOPIC_KEYS = ("replication_factor", "partitions")  # kafkalab's, not topic configs: the topic's plan checks them
Label = Callable[[str, str], str]  # (name, value) -> where the setting was written, for a refusal


def check_changes(lab: Lab, changes: Iterable[Change]) -> None:
    """KafkalabError (one line, naming the change) for the first broker or topic setting among ``changes`` that
    Kafka, as ``lab`` runs it, would not take."""
    settings = [s for c in changes for s in _settings_of(lab, c)]
    if settings:
        check_settings(lab_distribution(lab.cluster.kafka_version), settings)


def checked_distribution(lab: Lab) -> Distribution:
    """The Kafka ``lab`` runs on, with every broker setting and topic config the lab file writes valid on it."""
    dist = lab_distribution(lab.cluster.kafka_version)
    check_settings(dist, list(_lab_settings(lab)))
    return dist


def _settings_of(lab: Lab, change: Change) -> list[Setting]:
    """The settings ``change`` sets, each labelled with the change as it was typed."""
    def typed(_name: str, _value: str) -> str:
        return change.text

    if change.kind == ChangeKind.BROKER:
        return _broker(lab, {change.name.removeprefix("broker."): change.value}, typed)
    if change.kind == ChangeKind.TOPIC and change.topic_key not in OWN_TOPIC_KEYS:
        return [Setting("topic", change.topic_key, change.value, change.text)]
    if change.kind == ChangeKind.ACTION and change.fault is not None:
        return list(_fault_configs(change.fault, typed))
    return []


def _lab_settings(lab: Lab) -> Iterator[Setting]:
    def written(where: str) -> Label:
        return lambda name, value: f"lab {lab.id}, {where}: {name} = {value!r}"

    yield from _broker(lab, lab.cluster.overrides, written("[cluster] overrides"))
    for broker, overrides in lab.cluster.broker_overrides.items():
        yield from _broker(lab, overrides, written(f"[cluster.broker_overrides] of broker {broker}"))
    for topic in lab.topics:
        label = written(f"the configs of topic {topic.name}")
        yield from (Setting("topic", n, v, label(n, v)) for n, v in topic.configs.items())
    for fault in lab.faults:
        yield from _fault_configs(fault, written(f"the fault on line {fault.line}"))


def _broker(lab: Lab, overrides: Mapping[str, str], label: Label) -> list[Setting]:
    return [Setting("broker", name, value, label(name, value))
            for name, value in overrides_for_mode(overrides, lab.cluster.mode).items()]


def _fault_configs(fault: Fault, label: Label) -> Iterator[Setting]:
    if fault.action == "alter-config":  # a live topic's configs, set through the admin API during the run
        yield from (Setting("topic", n, v, label(n, v)) for n, v in fault.configs.items())
