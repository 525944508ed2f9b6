"""Broker settings and topic configs are checked against Kafka's own definitions, for the release the lab runs
on, before anything starts: at the console's prompt, on the command line, and in lab files. The definitions and
the reference verdicts come from the real jars (ConfigDefs.java); nothing of Kafka is faked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Static

import kafkalab.kafka_install.config_defs as defs_module
from kafkalab.errors import KafkalabError
from kafkalab.feeds.exercise import Exercise
from kafkalab.kafka_install import locate
from kafkalab.kafka_install.config_check import local_problem
from kafkalab.kafka_install.config_defs import config_defs, kafka_verdicts
from kafkalab.labs.fix import action_change, broker_change, topic_changes
from kafkalab.labs.loader import catalog, find_lab, load_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.settings_check import check_changes, checked_distribution
from kafkalab.ui.modals import InputScreen
from tests.test_labs_unit import MINIMAL, write
from tests.test_ui_app import type_line
from tests.test_ui_fix import console, in_tmp, until

RELEASES = ("3.9.2", "4.4.0")


@pytest.fixture
def exercise(tmp_path: Path) -> Exercise:
    """acks-0's fix exercise, which allows broker.* and topic.test-topic.*, as the console's prompt plays it."""
    return Exercise(load_lab(find_lab("acks-0")), progress_path=tmp_path / "progress.json")


def no_jvm(*_args: object) -> str:
    raise AssertionError("a JVM was started where the cached definitions answer")


def refusal(exercise: Exercise, line: str) -> str:
    with pytest.raises(KafkalabError) as err:
        exercise.read(line)
    assert "\n" not in str(err.value)
    return str(err.value)


# ---- at the console's prompt ------------------------------------------------------------------------------
def test_a_typo_in_a_broker_setting_is_refused_with_the_name_meant(exercise: Exercise) -> None:
    said = refusal(exercise, "broker offsets.topic.replication.factr=1")
    assert said.startswith("broker offsets.topic.replication.factr=1: Kafka 3.9.2 has no broker setting "
                           "offsets.topic.replication.factr: did you mean offsets.topic.replication.factor ")


def test_a_value_kafka_cannot_parse_gets_kafkas_own_message(exercise: Exercise) -> None:
    assert refusal(exercise, "broker offsets.topic.replication.factor=one") == (
        "broker offsets.topic.replication.factor=one: Invalid value one for configuration "
        "offsets.topic.replication.factor: Not a number of type SHORT")


@pytest.mark.parametrize(("line", "message"), [
    ("broker min.insync.replicas=0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("broker min.insync.replicas=" + "9" * 300, "for configuration min.insync.replicas: Not a number of type INT"),
    ("topic test-topic min.isr=0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ("broker unclean.leader.election.enable=yes", "Expected value to be either true or false"),
])
def test_a_value_out_of_range_is_refused(exercise: Exercise, line: str, message: str) -> None:
    said = refusal(exercise, line)
    assert message in said
    assert len(said) < 200  # the 300 digits are cut, in the change and in Kafka's message


def test_a_topic_config_typo_is_refused(exercise: Exercise) -> None:
    assert "Kafka 3.9.2 has no topic config retention.msx: did you mean retention.ms (LONG" in refusal(
        exercise, "topic test-topic retention.msx=1000")
    assert refusal(exercise, "topic test-topic some.config=x").endswith("has no topic config some.config")


def test_valid_settings_are_kept(exercise: Exercise) -> None:
    for line in ("broker offsets.topic.replication.factor=3", "broker unclean.leader.election.enable=TRUE",
                 "topic test-topic rf=3 min.isr=2 retention.ms=60000", "broker min.insync.replicas= 2 "):
        exercise.apply(exercise.read(line))
    assert {c.text for c in exercise.changes} >= {"broker unclean.leader.election.enable=TRUE",
                                                   "topic test-topic min.insync.replicas=2"}


def test_a_check_after_the_first_starts_no_jvm(exercise: Exercise, monkeypatch: pytest.MonkeyPatch) -> None:
    exercise.read("broker min.insync.replicas=2")  # the definitions read (from the cache kafkalab fetch fills)

    monkeypatch.setattr(defs_module, "_run", no_jvm)
    for line in ("broker min.insync.replicas=3", "broker offsets.topic.replication.factor=2",
                 "topic test-topic retention.ms=1000 min.isr=1"):
        exercise.read(line)
    assert "Value must be at least 1" in refusal(exercise, "broker offsets.topic.replication.factor=0")


@in_tmp
async def test_the_consoles_prompt_refuses_a_bad_value_in_one_line_and_stays_open(tmp_path: Path) -> None:
    async with console(tmp_path, load_lab(find_lab("acks-0"))) as (app, pilot, source):
        await pilot.press("e")
        await type_line(pilot, "broker offsets.topic.replication.factor=one")
        refusal = app.screen.query_one("#input-said", Static)  # under the line, which stays to be corrected
        await until(pilot, lambda: refusal.display)
        said = str(refusal.render())
        assert "offsets.topic.replication.factor: Not a number of type SHORT" in said and "\n" not in said
        assert isinstance(app.screen, InputScreen)
        await pilot.press("escape")
        assert source.exercise is not None and source.exercise.changes == []


# ---- Kafka's code where kafkalab does not reproduce it ------------------------------------------------
def test_a_list_value_is_judged_by_kafka_itself(exercise: Exercise) -> None:
    assert refusal(exercise, "topic test-topic cleanup.policy=compact,delet") == (
        "topic test-topic cleanup.policy=compact,delet: Invalid value delet for configuration cleanup.policy: "
        "String must be one of: compact, delete")
    exercise.read("topic test-topic cleanup.policy=compact,delete")


# Values around every rule kafkalab reproduces: Java's trim, signs, Unicode digits (one beyond the BMP, which
# Java reads as two chars), overflow, case-insensitive booleans (with the long s, which upper-cases to S).
CORPUS = ("1", "0", "-1", "+5", " 7 ", "\t8\n", "one", "", " ", "٣", "𝟑", "1_000", "1e3", "0x10", "32767", "32768",
          "-32769", "9" * 300, "2147483648", "9223372036854775807", "9223372036854775808", "true", "TRUE", " false ",
          "falſe", "yes", "gzip", "GZIP", " lz4 ", "CreateTime", "LogAppendTime ", "x y")
KEYS = (("broker", "offsets.topic.replication.factor"), ("broker", "min.insync.replicas"),
        ("broker", "unclean.leader.election.enable"), ("broker", "log.retention.ms"), ("broker", "compression.type"),
        ("broker", "log.segment.bytes"), ("topic", "message.timestamp.type"), ("topic", "retention.bytes"),
        ("topic", "min.insync.replicas"))


@pytest.mark.parametrize("version", RELEASES)
def test_kafkalabs_verdicts_are_kafkas_own(version: str) -> None:
    dist = locate(version=version)
    defs = config_defs(dist)
    cases = [(kind, name, value) for kind, name in KEYS for value in CORPUS]
    assert all(defs.of(kind)[name].local for kind, name, _v in cases)
    ours = [local_problem(defs.of(kind)[name], value) for kind, name, value in cases]
    assert ours == list(kafka_verdicts(dist, tuple(cases)))
    assert any(ours) and not all(ours)


# ---- platforms ------------------------------------------------------------------------------------------
def test_every_shipped_lab_its_solutions_and_wrong_fixes_hold_on_every_platform() -> None:
    for path in catalog():
        lab = load_lab(path)
        for mode, version in lab.cluster.platforms():
            on = lab.on(mode, version)
            checked_distribution(on)
            for changes in (on.fix.solution, *on.fix.wrong) if on.fix else ():
                check_changes(on, changes)


def test_settings_are_checked_as_the_labs_mode_passes_them(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, MINIMAL + '\n[cluster]\nkafka_version = "4.4.0"\nmode = "kraft"\n'))
    check_changes(lab, [broker_change("controller.quorum.election.timeout.ms=500")])  # KRaft's own
    check_changes(lab, [broker_change("zookeeper.session.timeout.ms=6000")])  # becomes the broker session's
    with pytest.raises(KafkalabError, match=r"Invalid value x for configuration broker\.session\.timeout\.ms"):
        check_changes(lab, [broker_change("zookeeper.session.timeout.ms=x")])
    with pytest.raises(KafkalabError, match=r"Kafka 4\.4\.0 has no broker setting zookeeper\.connect$"):
        check_changes(lab, [broker_change("zookeeper.connect=localhost:2181")])  # no ZooKeeper in Kafka 4
    zookeeper = load_lab(write(tmp_path, MINIMAL))
    check_changes(zookeeper, [broker_change("zookeeper.connect=localhost:2181"),
                              *topic_changes("test-topic min.isr=2")])


def test_an_actions_topic_configs_are_checked(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, MINIMAL))
    action = "brokers >= 3 -> alter-config topic test-topic retention.ms=soon"
    with pytest.raises(KafkalabError, match=f"^action {action}: Invalid value soon for configuration retention"):
        check_changes(lab, [action_change(action, 3)])
    check_changes(lab, [action_change(action.replace("soon", "60000"), 3)])


def lab_with(tmp_path: Path, table: str) -> Lab:
    return load_lab(write(tmp_path, MINIMAL + table))


def test_a_lab_files_own_settings_are_checked(tmp_path: Path) -> None:
    with pytest.raises(KafkalabError, match=r"^lab demo, \[cluster\] overrides: min.insync.replica = '2': .*"
                                            r"did you mean min.insync.replicas"):
        checked_distribution(lab_with(tmp_path, '\n[cluster]\noverrides = { "min.insync.replica" = "2" }\n'))
    text = MINIMAL.replace('name = "test-topic"', 'name = "test-topic"\nconfigs = { "retention.ms" = "soon" }')
    with pytest.raises(KafkalabError, match=r"the configs of topic test-topic: retention\.ms = 'soon': Invalid value "
                                            r"soon for configuration retention\.ms: Not a number of type LONG"):
        checked_distribution(load_lab(write(tmp_path, text)))


# ---- the cache ------------------------------------------------------------------------------------------
def test_the_definitions_are_dumped_once_per_release_then_read_from_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = locate()
    assert defs_module.defs_path(dist).name.startswith("kafka-3.9.2-")  # keyed by release and helper source
    cached = tmp_path / "defs.json"
    monkeypatch.setattr(defs_module, "defs_path", lambda _dist: cached)
    config_defs.cache_clear()
    try:
        first = config_defs(dist)
        assert cached.is_file()
        config_defs.cache_clear()
        monkeypatch.setattr(defs_module, "_run", no_jvm)
        assert config_defs(dist) == first
        assert first.broker["min.insync.replicas"].type == "INT" and "min.insync.replicas" in first.topic
    finally:
        config_defs.cache_clear()


# ---- the command line -----------------------------------------------------------------------------------
def kafkalab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkalab: error: "), result.stderr
    assert not result.stdout.strip()
    return lines[0]


@pytest.mark.parametrize(("argv", "said"), [
    (["run", "acks-0", "--broker-config", "min.insync.replica=2"],
     "broker min.insync.replica=2: Kafka 3.9.2 has no broker setting min.insync.replica: did you mean "
     "min.insync.replicas (INT, [1,...], default 1)?"),
    (["fix", "acks-0", "--broker-config", "offsets.topic.replication.factor=one"],
     "Invalid value one for configuration offsets.topic.replication.factor: Not a number of type SHORT"),
    (["run", "acks-0", "--kafka-version", "4.4.0", "--mode", "kraft", "--topic", "test-topic min.isr=2 min.sir=2"],
     "topic test-topic min.sir=2: Kafka 4.4.0 has no topic config min.sir"),
])
def test_the_command_line_refuses_a_bad_setting_in_one_line_and_starts_nothing(
        argv: list[str], said: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert said in one_line_error(kafkalab(*argv, "--runs-dir", str(runs), env={"KAFKALAB_STATE": str(tmp_path)}))
    assert not runs.exists()


def test_without_the_jars_the_check_says_how_to_fetch_them(tmp_path: Path) -> None:
    said = one_line_error(kafkalab("run", "acks-0", "--broker-config", "min.insync.replicas=2", "--runs-dir",
                                   str(tmp_path / "runs"),
                                   env={"KAFKALAB_CACHE": str(tmp_path / "cache"), "KAFKA_HOME": ""}))
    assert "kafkalab fetch" in said
