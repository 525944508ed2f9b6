"""The group and typing faults of the lab language: parsing, validation and what they ask of the run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from kafkalab.admin import ResetTarget
from kafkalab.admin.groups import GroupActive, Groups, GroupUnreachable, OffsetMove
from kafkalab.labs import load_lab
from kafkalab.labs.faults import TargetKind
from tests.test_labs_unit import MINIMAL, error_of, write

RESET = MINIMAL.replace('at = "progress 20%"\ndo = "kill"\non = "leader test-topic/1"',
                        'at = "progress 20%"\ndo = "reset-offsets"\non = "group g1"\nreset = "RESET"')
TYPE = MINIMAL.replace('at = "progress 20%"\ndo = "kill"\non = "leader test-topic/1"',
                       'at = "start"\ndo = "type"\non = "topic test-topic"\nrecords = RECORDS')


def test_reset_offsets_on_a_group_parses_every_cli_choice(tmp_path: Path) -> None:
    for text, target in [("to-earliest", ResetTarget("to-earliest")), ("to-offset 5", ResetTarget("to-offset", "5")),
                         ("shift-by -3", ResetTarget("shift-by", "-3")),
                         ("to-datetime 2024-05-01T12:30:00", ResetTarget("to-datetime", "2024-05-01T12:30:00"))]:
        fault = load_lab(write(tmp_path, RESET.replace("RESET", text))).faults[0]
        assert (fault.action, fault.target.kind, fault.target.group, fault.reset) == \
            ("reset-offsets", TargetKind.GROUP, "g1", target)
    default = load_lab(write(tmp_path, RESET.replace('\nreset = "RESET"', ""))).faults[0]
    assert default.reset == ResetTarget("to-earliest")


def test_bad_reset_values_name_the_field(tmp_path: Path) -> None:
    for text, words in [("to-nowhere", "write one of"), ("to-offset", "takes a value"),
                        ("to-earliest 3", "takes no value"), ("to-datetime yesterday", "ISO")]:
        msg = error_of(tmp_path, RESET.replace("RESET", text))
        assert "fault[1].reset" in msg and words in msg, msg
    assert "cannot be done on group g1" in error_of(tmp_path, RESET.replace("reset-offsets", "kill"))


def test_type_needs_lines(tmp_path: Path) -> None:
    fault = load_lab(write(tmp_path, TYPE.replace("RECORDS", '["a:1", "plain"]'))).faults[0]
    assert (fault.action, fault.target.topic, fault.records) == ("type", "test-topic", ("a:1", "plain"))
    msg = error_of(tmp_path, TYPE.replace("RECORDS", "[]"))
    assert "fault[1].records" in msg and "key:value" in msg


def test_a_whole_topic_redelivered_is_named_a_replay_not_duplicates() -> None:
    from kafkalab.analysis.verdict import verdict

    assert verdict({"redelivered": 2000, "duplicated": 0}, acknowledged=2000).startswith(
        "the whole topic (2,000 records) was processed again")
    assert "not duplicates" in verdict({"redelivered": 2000}, acknowledged=2000)
    assert verdict({"redelivered": 12}, acknowledged=2000).startswith("12 records were processed again")


def test_a_reset_whose_group_cannot_be_described_retries_through_a_new_client() -> None:
    """A group describe that times out on a healthy cluster came from a client stuck on a moved coordinator:
    the retry asks through a new one. (The cluster is not what this claims: reset and renew stand in.)"""
    clients: list[str] = ["first"]
    groups = Groups(SimpleNamespace(renew=lambda: clients.append(f"client {len(clients) + 1}")))  # type: ignore[arg-type]
    answers = iter([GroupUnreachable("cannot describe group g1: _TIMED_OUT"), GroupActive("still active"), []])
    asked_through: list[str] = []

    def reset(*_args: object, **_kwargs: object) -> list[OffsetMove]:
        asked_through.append(clients[-1])
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    groups.reset = reset  # type: ignore[method-assign]
    assert groups.reset_when_inactive("g1", ["test-topic"], ResetTarget("to-earliest"), timeout_s=10) == []
    assert asked_through == ["first", "client 2", "client 2"]  # renewed after the timeout, not while active
