"""The processor's pure parts: its options, a lab's [processor] table and faults on it, its metrics, its pane."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab.clients.options import OptionsConflict, OptionsError, ProcessorConfig
from kafkalab.clients.processor import ProcessorStats
from kafkalab.clients.stats import ClientState
from kafkalab.errors import KafkalabError
from kafkalab.labs import load_lab
from kafkalab.labs.faults import TargetCategory, TargetKind
from kafkalab.labs.fix import setting_change
from kafkalab.labs.graded import apply_changes
from kafkalab.labs.metrics import processor_metrics
from kafkalab.ui.line import flow
from kafkalab.ui.processor import counts_parts, transactions_parts

LAB = """\
[lab]
id = "demo"
title = "Demo"
teaches = "nothing"
why = "because"
instructions = "do it"

[[topic]]
name = "test-topic"

[[topic]]
name = "test-topic-out"
partitions = 3

[producer]

[processor]
"processor.output-topic" = "test-topic-out"

[consumers]
"consumer.topic" = "test-topic-out"

[[consumer]]
local_id = 1

[[fault]]
at = "after 2s"
do = "crash"
on = "processor"

[expect]
duplicated = "> 0"
"""


# ---- options ------------------------------------------------------------------------------------------------
def test_an_at_least_once_processor_commits_by_itself_and_sends_idempotently() -> None:
    config = ProcessorConfig.from_settings({"processor.output-topic": "out", "processor.local-id": "2"})
    assert (config.topic, config.output_topic, config.name, config.transactional) == ("test-topic", "out",
                                                                                      "processor-2", False)
    consumer, producer = config.librdkafka()
    assert consumer["enable.auto.commit"] is False and consumer["group.id"] == "test-processor"
    assert consumer["auto.offset.reset"] == "earliest" and consumer["isolation.level"] == "read_uncommitted"
    assert producer["enable.idempotence"] is True and producer["acks"] == "all" and "transactional.id" not in producer
    assert consumer["client.id"] == producer["client.id"] == "kafkalab-processor-2"
    assert config.batch_records == 500


def test_a_transaction_id_makes_it_exactly_once_with_batches_of_a_transaction() -> None:
    config = ProcessorConfig.from_settings({"processor.transaction-id": "pipe",
                                            "processor.records-per-transaction": "20",
                                            "processor.isolation-level": "read_committed"})
    _consumer, producer = config.librdkafka()
    assert config.transactional and producer["transactional.id"] == "pipe" and config.batch_records == 20
    assert config.consumer().isolation_level == "read_committed"


@pytest.mark.parametrize(("settings", "named"), [
    ({"processor.records-per-transaction": "5"}, "give processor.transaction-id too"),
    ({"processor.output-topic": "test-topic"}, "must differ from processor.input-topic"),
])
def test_conflicting_processor_settings_are_one_line(settings: dict[str, str], named: str) -> None:
    with pytest.raises(OptionsConflict) as exc:
        ProcessorConfig.from_settings(settings)
    assert named in str(exc.value) and "\n" not in str(exc.value)


def test_another_roles_option_is_named_as_its() -> None:
    with pytest.raises(OptionsError) as exc:
        ProcessorConfig.from_settings({"consumer.group-id": "g", "processor.poll": "1"})
    text = str(exc.value)
    assert "consumer.group-id is a consumer option, not a processor one" in text
    assert "did you mean processor.poll-period?" in text and "Processor section" in text


# ---- a lab's [processor] ------------------------------------------------------------------------------------
def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "demo.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_lab_with_a_processor_reads_the_producers_topic_and_can_crash_it(tmp_path: Path) -> None:
    lab = load_lab(_write(tmp_path, LAB))
    assert lab.processor is not None and lab.processor.config.topic == lab.topic == "test-topic"
    assert lab.groups == {"test-app", "test-processor"}
    fault = lab.faults[0]
    assert (fault.target.kind, fault.target.category, fault.action) == (TargetKind.PROCESSOR,
                                                                        TargetCategory.PROCESSOR, "crash")
    fixed = lab.with_setting("processor.transaction-id", "pipe")
    assert fixed.processor is not None and fixed.processor.config.transactional


@pytest.mark.parametrize("on", ["processor", "consumer 1", "consumers", "producer"])
def test_every_client_can_be_paused_and_resumed_by_a_fault(tmp_path: Path, on: str) -> None:
    """SIGSTOP and SIGCONT, as a long GC pause: a paused processor is how a zombie is made."""
    for action in ("pause", "resume"):
        lab = load_lab(_write(tmp_path, LAB.replace('do = "crash"', f'do = "{action}"').replace(
            'on = "processor"', f'on = "{on}"')))
        assert lab.faults[0].action == action


@pytest.mark.parametrize(("change", "said"), [
    (('"processor.output-topic" = "test-topic-out"', '"processor.output-topic" = "elsewhere"'),
     "demo.toml:18: processor.\"processor.output-topic\": elsewhere names no [[topic]]"),
    (('"processor.output-topic" = "test-topic-out"', '"processor.output-topic" = "test-topic-out"\n'
                                                     '"processor.input-topic" = "another"'),
     "must be the producer's topic"),
    (('[processor]\n"processor.output-topic" = "test-topic-out"\n', ''), "fault[1].on: this lab has no [processor]"),
    (('do = "crash"', 'do = "restart"'), "'restart' cannot be done on processor"),
])
def test_a_processor_table_or_fault_that_does_not_fit_is_refused_by_line(tmp_path: Path, change: tuple[str, str],
                                                                         said: str) -> None:
    with pytest.raises(KafkalabError) as exc:
        load_lab(_write(tmp_path, LAB.replace(*change)))
    assert said in str(exc.value)


# ---- metrics and the pane ------------------------------------------------------------------------------------
def _stats(state: ClientState, received: int, produced: int, committed: int, aborted: int, open_: int,
           lag: dict[int, int] | None = None) -> ProcessorStats:
    return ProcessorStats(name="processor", group="g", state=state, received=received, produced=produced, failed=0,
                          rate=10.0, assignment=(0, 1), lag=lag or {}, transactional=True,
                          transactions_committed=committed, transactions_aborted=aborted, transactions_open=open_)


def test_metrics_and_the_pane_sum_a_crashed_instance_and_the_next() -> None:
    instances = [_stats(ClientState.CRASHED, 30, 20, 1, 0, 1),
                 _stats(ClientState.RUNNING, 40, 40, 2, 1, 1, lag={0: 5})]
    assert processor_metrics(instances) == {"processor.consumed": 70.0, "processor.produced": 60.0,
                                            "processor.failed": 0.0, "processor.transactions.committed": 3.0,
                                            "processor.transactions.aborted": 1.0}
    assert processor_metrics([]) == {}
    counts = flow(counts_parts(instances), 200).plain
    assert "RUNNING" in counts and "instance 2" in counts and "input lag 5 or more" in counts  # partition 1 unknown
    assert "in 70" in counts and "out 60" in counts
    assert flow(transactions_parts(instances), 200).plain == "transactions 3 committed  1 aborted  1 open"


def test_a_fix_sets_the_processors_options(tmp_path: Path) -> None:
    lab = load_lab(_write(tmp_path, LAB))
    fixed = apply_changes(lab, [setting_change("processor.transaction-id=pipe"),
                                setting_change("consumer.isolation-level=read_committed")])
    assert fixed.processor is not None and fixed.processor.config.transaction_id == "pipe"
    assert fixed.consumers[0].config.isolation_level == "read_committed"
