"""Client settings as attendees type them, without a cluster: Kafka's own names accepted for kafkalab's options
(bare or with the client's prefix, on -D, in lab files, at the change prompt's core), ranges that refuse a
300-digit number in one line, conflicts typed apart from bad values, kept changes taken back, and `--options`
listing both names whole at 80 columns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kafkalab.cli import build_parser, fix_cmds, main
from kafkalab.clients.options import ConsumerConfig, OptionsConflict, OptionsError, ProducerConfig, role_options
from kafkalab.errors import KafkalabError
from kafkalab.feeds.exercise import Exercise
from kafkalab.labs.fix import ChangeKind, parse_changes
from kafkalab.labs.graded import graded_lab
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.results import ExpectationResult, FaultState, FaultStatus, Outcome, RunResult
from tests.test_fix_cli import FakeRun, no_run, one_line_error  # noqa: F401  # no_run: a fixture, by name
from tests.test_labs_unit import MINIMAL, write

pytestmark = pytest.mark.usefixtures("fresh_state")  # progress and config of these tests' own

LONG = "9" * 300


# ---- Kafka's names ----------------------------------------------------------------------------------------
def test_kafka_names_are_kafkalabs_options_for_both_clients() -> None:
    producer = ProducerConfig.from_settings({"acks": "all", "enable.idempotence": "true", "linger.ms": "20",
                                             "producer.max.in.flight.requests.per.connection": "3"})
    assert (producer.acks, producer.idempotent, producer.linger_ms, producer.max_inflight) == ("all", True, 20, 3)
    consumer = ConsumerConfig.from_settings({"session.timeout.ms": "6000", "consumer.enable.auto.commit": "false",
                                             "group.instance.id": "c-1", "auto.offset.reset": "earliest",
                                             "bootstrap.servers": "127.0.0.1:1"})
    assert (consumer.session_timeout_ms, consumer.auto_commit, consumer.instance_id, consumer.auto_offset_reset,
            consumer.bootstrap) == (6000, False, "c-1", "earliest", "127.0.0.1:1")
    # the client is known on `kafkalab produce -D`: a bare name both Kafka clients have is the producer's there
    assert ProducerConfig.from_settings({"request.timeout.ms": "5000"}).request_timeout_ms == 5000
    with pytest.raises(OptionsError, match=r"group\.id \(consumer\.group-id\) is a consumer option, not a producer"):
        ProducerConfig.from_settings({"group.id": "x"})
    # of two names for one option the later wins, as with -D: a lab's setting, then a change to it
    assert ProducerConfig.from_settings({"producer.enable.idempotence": "false", "producer.idempotent": "true"}
                                        ).idempotent


def test_a_change_typed_by_kafkas_name_is_kept_under_kafkalabs() -> None:
    idempotence, session = parse_changes(3, ["enable.idempotence=true", "consumer.session.timeout.ms=6000"])
    assert (idempotence.kind, idempotence.name, idempotence.written) == (ChangeKind.SETTING, "producer.idempotent",
                                                                          "enable.idempotence")
    assert idempotence.text == "producer.idempotent=true"  # what allow-lists, rules and the Lab tab name
    assert (session.name, session.written) == ("consumer.session-timeout", "consumer.session.timeout.ms")


def test_a_lab_file_takes_kafkas_name_after_the_clients_prefix(tmp_path: Path) -> None:
    text = MINIMAL.replace('"producer.acks" = "1"', '"producer.acks" = "all"\n"producer.enable.idempotence" = "false"')
    lab = load_lab(write(tmp_path, text.replace("local_id = 1", 'local_id = 1\n"consumer.session.timeout.ms" = 6000')))
    assert lab.producer.settings == {"producer.acks": "all", "producer.idempotent": "false"}  # as the Lab tab shows
    assert not lab.producer.config.idempotent and lab.consumers[0].config.session_timeout_ms == 6000
    assert lab.producer.with_settings({"producer.idempotent": "true"}).config.idempotent  # a change to it wins
    with pytest.raises(KafkalabError) as bad:
        load_lab(write(tmp_path, text.replace('"false"', '"nope"')))
    assert "demo.toml:" in str(bad.value) and "producer.enable.idempotence=nope is not true or false" in str(bad.value)


@pytest.mark.parametrize("name", ["request.timeout.ms", "retry.backoff.ms", "retry.backoff.max.ms"])
def test_a_bare_name_both_kafka_clients_have_asks_for_the_prefix(name: str) -> None:
    with pytest.raises(KafkalabError) as exc:
        parse_changes(3, [f"{name}=100"])
    assert str(exc.value) == (f"{name} is a setting of both Kafka clients: write producer.{name} or consumer.{name}")
    assert parse_changes(3, [f"producer.{name}=100"])[0].name.startswith("producer.")


def test_every_kafka_name_belongs_to_one_option() -> None:
    names = [o.kafka for role in ("producer", "consumer") for o in role_options(role)[1:] if o.kafka]
    assert len(names) == len(set(names)) and "enable.idempotence" in names and "session.timeout.ms" in names


# ---- ranges and what an error says ------------------------------------------------------------------------
@pytest.mark.parametrize(("setting", "words"), [
    ({"producer.linger": LONG}, ["producer.linger=999999999999999999999999... (300 characters)", "give 0..900000"]),
    ({"linger.ms": "900001"}, ["linger.ms=900001", "give 0..900000"]),
    ({"producer.batch": str(2**31)}, ["give 1..2147483647"]),
    ({"producer.retries": "-1"}, ["give 0..2147483647"]),
    ({"producer.wait-after-send": "1_000"}, ["is not a whole number"]),
    ({"producer.wait-after-send": "١٢"}, ["is not a whole number"]),  # Arabic-Indic digits: int() would take them
])
def test_a_number_outside_its_range_is_refused_in_one_line_naming_the_range(setting: dict[str, str],
                                                                             words: list[str]) -> None:
    with pytest.raises(OptionsError) as exc:
        ProducerConfig.from_settings(setting)
    assert not isinstance(exc.value, OptionsConflict) and "\n" not in str(exc.value) and len(str(exc.value)) < 200
    for word in words:
        assert word in str(exc.value)


def test_only_settings_valid_alone_that_do_not_go_together_are_a_conflict() -> None:
    with pytest.raises(OptionsConflict):
        ProducerConfig.from_settings({"producer.idempotent": "true", "producer.acks": "1"})
    with pytest.raises(OptionsConflict):
        ConsumerConfig.from_settings({"consumer.heartbeat-interval": "7000", "consumer.session-timeout": "6000"})


# ---- the exercise's changes: kept, refused, taken back ----------------------------------------------------
@pytest.fixture
def exercise(tmp_path: Path) -> Exercise:
    return Exercise(load_lab(find_lab("lost-replies")), tmp_path / "progress.json")


def test_a_bad_value_is_not_told_to_go_on_one_line_a_conflict_is(exercise: Exercise) -> None:
    with pytest.raises(KafkalabError) as bad:
        exercise.apply(exercise.read("producer.linger=abc"))
    assert "producer.linger=abc is not a whole number" in str(bad.value) and "together" not in str(bad.value)
    with pytest.raises(KafkalabError) as conflict:
        exercise.apply(exercise.read("producer.idempotent=true producer.acks=1"))
    assert "settings that only work together go on one line" in str(conflict.value)
    assert "-NAME takes one back" in str(conflict.value) and exercise.changes == []


def test_a_kept_change_is_taken_back_by_any_name_it_was_typed_or_shown_by(exercise: Exercise) -> None:
    said = exercise.apply(exercise.read("enable.idempotence=true producer.linger=50"))
    assert said.startswith("kept producer.idempotent=true (enable.idempotence = producer.idempotent), "
                           "producer.linger=50:")
    exercise.apply(exercise.read("topic test-topic rf=2"))
    assert exercise.apply(exercise.read("-linger.ms")) == (
        "took back producer.linger=50; your changes now: producer.idempotent=true, "
        "topic test-topic replication_factor=2")
    exercise.apply(exercise.read("-topic test-topic rf=2 -enable.idempotence"))  # two on one line, as typed
    assert exercise.changes == []
    exercise.apply(exercise.read("producer.retry-backoff=2000 producer.retry-max=3000"))
    with pytest.raises(KafkalabError, match=re.escape("producer.retry-max must be >= producer.retry-backoff")):
        exercise.apply(exercise.read("-producer.retry-max"))  # the default 1000 under a 2000 backoff: both kept
    assert [c.name for c in exercise.changes] == ["producer.retry-backoff", "producer.retry-max"]
    with pytest.raises(KafkalabError, match=r"-producer\.linger: none of your changes is producer\.linger \(yours: "):
        exercise.apply(exercise.read("-producer.linger"))
    exercise.apply(exercise.read("-producer.retry-backoff=2000 -producer.retry.backoff.max.ms"))
    assert exercise.changes == []


# ---- on the command line ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "words"), [
    (["-D", "enable.idempotence=maybe"], ["producer.idempotent=maybe is not true or false"]),  # read as the option
    (["-D", "request.timeout.ms=5000"], ["both Kafka clients", "producer.request.timeout.ms"]),
    (["-D", f"linger.ms={LONG}"], ["give 0..900000"]),
    (["-D", "compression.type=gzip"], ["compression.type is not a producer.* or consumer.* setting, nor "
                                       "Kafka's name of one"]),  # kafkalab's producer sends uncompressed
])
def test_fix_refuses_a_bad_kafka_named_setting_before_anything_starts(argv: list[str], words: list[str],
                                                                      tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      no_run: list[Any]) -> None:  # noqa: F811
    runs = tmp_path / "runs"
    assert main(["fix", "lost-replies", *argv, "--runs-dir", str(runs)]) == 2
    one_line_error(capsys, *words)
    assert not runs.exists()


def test_run_takes_kafkas_names_on_d() -> None:
    args = build_parser().parse_args(["run", "acks-0", "-D", "session.timeout.ms=6000", "-D", "acks=all"])
    lab, changes = fix_cmds.changed_lab(args, load_lab(find_lab("acks-0")))
    assert [c.name for c in changes] == ["consumer.session-timeout", "producer.acks"]
    assert lab.consumers[0].config.session_timeout_ms == 6000 and lab.producer.config.acks == "all"


class LostRepliesRun(FakeRun):
    """lost-replies' outcome as the real lab's: retried batches stored twice unless the producer is idempotent."""

    def run(self) -> RunResult:
        run_dir = self.runs_root / f"{self.lab.id}-{len(FakeRun.made)}-seed{self.seed}"
        run_dir.mkdir(parents=True)
        metrics = {"duplicated": 0.0 if self.lab.producer.config.idempotent else 57.0, "lost": 0.0,
                   "producer.failed": 0.0, "producer.acked": 20000.0}
        expectations = [ExpectationResult(e.text, *e.evaluate(metrics)) for e in self.lab.expectations]
        faults = [FaultStatus(i, f.describe(), FaultState.FIRED) for i, f in enumerate(self.lab.faults)]
        held = all(e.held for e in expectations)
        return RunResult(self.lab.id, run_dir, Outcome.PASSED if held else Outcome.FAILED, expectations,
                         faults=faults, duration_s=40.0, seed=self.seed or 0)


def test_the_fix_docs_network_faults_gives_for_lost_replies_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/network-faults.md: lost-replies is fixed with `enable.idempotence=true`, typed as the docs say."""
    docs = Path(__file__).resolve().parents[1] / "docs" / "network-faults.md"
    assert "| `enable.idempotence=true` (kafkalab's" in docs.read_text(encoding="utf-8")
    lab = load_lab(find_lab("lost-replies"))
    assert graded_lab(lab, parse_changes(3, ["enable.idempotence=true"])).producer.config.idempotent
    FakeRun.made = []
    monkeypatch.setattr(fix_cmds, "HeadlessRun", LostRepliesRun)
    code = main(["fix", "lost-replies", "-D", "enable.idempotence=true", "--runs-dir", str(tmp_path / "runs")])
    text = capsys.readouterr().out
    assert code == 0, text
    assert all(run.lab.producer.config.idempotent for run in FakeRun.made) and len(FakeRun.made) == 2
    assert "idempotence: each batch carries the producer's id" in " ".join(text.split())  # its rule applied


# ---- --options ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("role", ["producer", "consumer"])
def test_options_lists_both_names_whole_at_80_columns(role: str, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["produce" if role == "producer" else "consume", "--options"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80 and "…" not in out
    words = set(re.findall(r"\S+", out))
    for option in role_options(role):
        assert option.name in words and (not option.kafka or option.kafka in words), option.name
