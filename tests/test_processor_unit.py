"""The processor's pure parts: its options, a lab's [processor] table and faults on it, its metrics, its pane."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkalab.clients.options import OptionsConflict, OptionsError, ProcessorConfig
from kafkalab.clients.processor import ProcessorStats
from kafkalab.clients.processor_logs import produced_log_path, sent_again_path, settle
from kafkalab.clients.stats import ClientState
from kafkalab.errors import KafkalabError
from kafkalab.labs import load_lab
from kafkalab.labs.faults import TargetCategory, TargetKind, parse_trigger
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
                                            "processor.transactions.aborted": 1.0, "processor.fenced": 0.0}
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


# ---- a zombie: an instance paused, another started beside it, the paused one woken --------------------------
ZOMBIE_LAB = Path(__file__).resolve().parents[1] / "labs" / "39-zombie-fencing.toml"


def test_the_zombie_lab_pauses_the_processor_mid_batch_replaces_it_and_wakes_it() -> None:
    lab = load_lab(ZOMBIE_LAB)
    assert [(f.at.text, f.action, f.target.text) for f in lab.faults] == [
        ("finished", "note", ""), ("uncommitted 10 by processor", "pause", "processor"),
        ("after 1s", "start", "processor"), ("after 15s", "resume", "processor")]
    assert lab.fix is not None and [c.text for c in lab.fix.solution] == [
        "processor.transaction-id=orders-pipeline", "consumer.isolation-level=read_committed"]
    assert {e.text for e in lab.fix.expectations} >= {"duplicated == 0", "processor.fenced > 0"}


class Mid:
    """A run's view as an ``uncommitted`` trigger reads it."""

    def __init__(self, producer: int, processor: int) -> None:
        self.held = producer, processor

    def producer_uncommitted(self) -> int:
        return self.held[0]

    def processor_uncommitted(self) -> int:
        return self.held[1]


def test_the_processor_uncommitted_trigger_reads_the_processors_batch_not_the_producers() -> None:
    trigger = parse_trigger("uncommitted 10 by processor")
    assert trigger.due(Mid(0, 10), 0.0) and not trigger.due(Mid(50, 9), 0.0)  # type: ignore[arg-type]
    assert parse_trigger("uncommitted 10").due(Mid(10, 0), 0.0)  # type: ignore[arg-type]


def test_a_processor_trigger_in_a_lab_without_a_processor_is_refused(tmp_path: Path) -> None:
    text = LAB.replace('[processor]\n"processor.output-topic" = "test-topic-out"\n', '').replace(
        'do = "crash"\non = "processor"', 'do = "note"').replace('at = "after 2s"', 'at = "uncommitted 5 by processor"')
    with pytest.raises(KafkalabError, match=re.escape("fault[1].at: this lab has no [processor]")):
        load_lab(_write(tmp_path, text))


def _log(path: Path, ids: list[str]) -> None:
    header = "msg_id,seq,topic,partition,offset,key,status,error,ts,value"
    path.write_text("\n".join([header, *(f"{i},1,out,0,{n},k,acked,,1,\"a,b\"" for n, i in enumerate(ids))]) + "\n")


def test_settle_keeps_one_row_per_message_over_instances_that_ran_side_by_side(tmp_path: Path) -> None:
    _log(produced_log_path(tmp_path, "processor"), ["r:1", "r:2", "r:3"])  # the zombie's
    second = produced_log_path(tmp_path, "processor.2")
    _log(second.with_name(second.name + ".partial"), ["r:2", "r:3", "r:4"])  # the replacement's, left partial
    assert settle(tmp_path, "processor") == 2
    kept = (second.with_name(second.name + ".partial")).read_text().splitlines()
    assert [line.split(",")[0] for line in kept] == ["msg_id", "r:4"] and kept[1].endswith(',"a,b"')
    again = sent_again_path(tmp_path, "processor.2").read_text().splitlines()
    assert [line.split(",")[0] for line in again] == ["msg_id", "r:2", "r:3"]  # kept for the record
    assert settle(tmp_path, "processor") == 0  # settled once: nothing moves again


def test_the_pane_says_an_instance_is_paused_beside_the_live_one_and_when_it_was_fenced() -> None:
    zombie = _stats(ClientState.PAUSED, 30, 20, 1, 0, 1)
    live = _stats(ClientState.RUNNING, 40, 40, 2, 0, 1)
    assert "1 paused beside it" in flow(counts_parts([zombie, live]), 200).plain
    fenced = ProcessorStats(name="processor", group="g", state=ClientState.FAILED, received=30, produced=20,
                            failed=0, rate=0.0, transactional=True, fenced=True, error="fenced: ...")
    assert flow(transactions_parts([fenced, live]), 200).plain.endswith("1 open  instance 1 fenced")
    assert "fenced" not in flow(transactions_parts([live]), 200).plain
