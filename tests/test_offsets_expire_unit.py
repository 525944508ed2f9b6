"""A group whose committed offsets expired: the fact folded from ``__consumer_offsets`` records (no cluster), and
rendered the same by the console's Groups tab and `kafkalab group describe` / `list`."""

from __future__ import annotations

import argparse
import io
import json
import struct
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest
from rich.console import Console

from kafkalab.admin import GroupDescription
from kafkalab.admin.groups import GroupListing
from kafkalab.admin.offsets_log import OffsetsFate, OffsetsFold, OffsetsGone, offset_commit_key
from kafkalab.cli import group_cmds
from kafkalab.ui.groups import header_text, member_text
from tests.test_ui_app import SIZE, sync

MINUTE_MS = 60_000
NOW = 1_700_000_100.0


def string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def commit_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    return struct.pack(">h", version) + string(group) + string(topic) + struct.pack(">i", partition)


def test_an_offset_commits_key_is_read_and_every_other_record_of_the_topic_is_not() -> None:
    assert offset_commit_key(commit_key("app", "orders", 4)) == ("app", "orders", 4)
    assert offset_commit_key(commit_key("app", "orders", 4, version=0)) == ("app", "orders", 4)
    assert offset_commit_key(struct.pack(">h", 2) + string("app")) is None  # the group's metadata
    assert offset_commit_key(commit_key("app", "orders", 4, version=3)) is None  # a KIP-848 group's record
    assert offset_commit_key(commit_key("app", "orders", 4)[:-2]) is None  # cut short
    assert offset_commit_key(b"\x00") is None


def folded(*records: tuple[str, int, bool, int]) -> OffsetsFold:
    """(group, partition, committed (else a tombstone), timestamp ms) in log order, all on topic t."""
    fold = OffsetsFold()
    for group, partition, committed, ts in records:
        fold.add(commit_key(group, "t", partition), b"offset" if committed else None, ts)
    return fold


def test_offsets_gone_a_retention_after_their_last_commit_expired_and_sooner_were_deleted() -> None:
    fold = folded(("late", 0, True, 0), ("late", 1, True, 5_000), ("late", 0, False, 65_000),
                  ("late", 1, False, 65_000),
                  ("soon", 0, True, 0), ("soon", 0, False, 20_000),
                  ("kept", 0, True, 0), ("kept", 1, True, 0), ("kept", 0, False, 70_000),  # one partition left
                  ("back", 0, True, 0), ("back", 0, False, 70_000), ("back", 0, True, 80_000))  # committed again
    gone = fold.gone(retention_min=1)
    assert set(gone) == {"late", "soon"}
    assert gone["late"] == OffsetsGone(OffsetsFate.EXPIRED, at=65.0, last_commit_at=5.0, partitions=2,
                                       retention_min=1)
    assert gone["soon"].fate is OffsetsFate.DELETED
    assert fold.gone(retention_min=None)["late"].fate is OffsetsFate.REMOVED  # no retention read: no guess


def test_a_tombstone_of_an_offset_never_seen_removes_nothing() -> None:
    assert folded(("g", 0, False, 1_000)).gone(retention_min=1) == {}
    assert folded(("g", 0, True, 0), ("g", 1, False, 2 * MINUTE_MS)).gone(retention_min=1) == {}


GONE = OffsetsGone(OffsetsFate.EXPIRED, at=NOW - 35, last_commit_at=NOW - 100, partitions=6, retention_min=1)
FORGOTTEN = GroupDescription("test-app", "Dead", taken_at=NOW, offsets_gone=GONE)


def clock(epoch_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch_s))


def test_the_fact_reads_as_a_state_with_when_and_says_what_a_returning_consumer_does() -> None:
    label = f"Dead, offsets expired at {clock(NOW - 35)} (35 s ago)"
    assert FORGOTTEN.state_label(NOW) == label
    assert GroupListing("test-app", "Dead", False, GONE).state_label(NOW) == label
    assert GONE.explain() == (f"it had committed offsets on 6 partitions, the last at {clock(NOW - 100)}; the brokers "
                              "deleted them while the group had no member (offsets.retention.minutes=1): a consumer "
                              "joining now starts where its auto.offset.reset says")
    assert FORGOTTEN.exists  # forgotten by Kafka's group APIs, not by kafkalab
    assert not GroupDescription("never", "Dead").exists
    assert GroupDescription("g", "Empty").state_label(NOW) == "Empty"


def test_the_console_card_and_the_cli_render_the_same_state_and_sentence() -> None:
    out = io.StringIO()
    group_cmds.print_describe(Console(file=out, width=200, highlight=False), FORGOTTEN, members=False)
    cli = " ".join(out.getvalue().split())  # as words: the sentence wraps at the console's width
    assert f"STATE {FORGOTTEN.state_label(NOW)}" in cli and GONE.explain() in cli
    assert FORGOTTEN.state_label(NOW) in header_text(FORGOTTEN, selected=True).plain
    assert member_text(FORGOTTEN).plain == f"no active member\n{GONE.explain()}"


def test_group_list_shows_the_forgotten_group_with_its_state_and_its_json_the_fact(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    class Listed:
        def listed_with_gone(self) -> list[GroupListing]:
            return [GroupListing("live", "Stable", False), GroupListing("test-app", "Dead", False, GONE)]

    monkeypatch.setattr(group_cmds, "_groups", lambda _args: Listed())
    monkeypatch.setattr(group_cmds.time, "time", lambda: NOW)
    group_cmds.cmd_group_list(argparse.Namespace(json=False))
    rows = [line.split(None, 1) for line in capsys.readouterr().out.splitlines()]
    assert rows == [["GROUP", "STATE"], ["live", "Stable"], ["test-app", FORGOTTEN.state_label(NOW)]]
    group_cmds.cmd_group_list(argparse.Namespace(json=True))
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["offsets_gone"] is None
    assert OffsetsGone.from_wire(listed[1]["offsets_gone"]) == GONE


@sync
async def test_the_groups_tab_keeps_a_card_for_the_group_kafka_forgot_saying_what_became_of_its_offsets() -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from kafkalab.feeds.groups_feed import GroupsFrame
    from kafkalab.ui.groups import GroupsPane

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield GroupsPane()

    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(GroupsPane)
        pane.show(GroupsFrame((FORGOTTEN,)), used=("test-app",))
        await pilot.pause()
        card = pane.cards["test-app"]
        header = str(card.query_one(".group-header", Static).render())
        assert "offsets expired at" in header
        assert GONE.explain().split(";")[0] in " ".join(str(card.query_one(".group-members", Static).render()).split())
        status = str(app.query_one("#groups-status", Static).render())
        assert "do not know" not in status  # the run's group is there, forgotten by Kafka's group APIs only


def test_the_list_adds_groups_forgotten_once_their_offsets_expired_not_those_someone_deleted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.admin import groups as groups_module

    deleted = replace(GONE, fate=OffsetsFate.DELETED)
    log = SimpleNamespace(gone=lambda _admin, _group, _wait: {"live": deleted, "expired": GONE, "deleted": deleted})
    monkeypatch.setattr(groups_module, "offsets_log", lambda _admin: log)
    monkeypatch.setattr(groups_module.Groups, "list", lambda _self: [GroupListing("live", "Stable", False)])
    listed = groups_module.Groups(SimpleNamespace(timeout_s=1.0)).listed_with_gone()  # type: ignore[arg-type]
    assert listed == [GroupListing("expired", "Dead", False, GONE), GroupListing("live", "Stable", False, deleted)]


def test_the_group_helper_closes_the_last_clusters_offsets_reader_when_the_cluster_changes() -> None:
    """Each lab run is a new cluster: the helper kept every earlier cluster's __consumer_offsets reader open, each
    an assigned consumer fetching from, and dialling, brokers long gone, for the whole class."""
    from kafkalab.admin.group_helper import Answerer
    from kafkalab.admin.offsets_log import OffsetsLog

    logs: list[OffsetsLog] = []

    class Client:
        def __init__(self, log: OffsetsLog) -> None:
            log._reader()  # a console's Groups tab read the log: its reader is open
            logs.append(log)

        def listed_with_gone(self, wait_s: float) -> list[object]:
            return []

    answerer = Answerer(lambda bootstrap, timeout_s, log: Client(log))  # type: ignore[arg-type,return-value]
    answerer.answer("127.0.0.1:1", 1, 1.0, 1.0)
    answerer.answer("127.0.0.1:1", 2, 1.0, 1.0)  # the next run's cluster, on the same ports
    assert len(logs) == 2 and logs[0] is not logs[1]
    assert logs[0]._consumer is None  # closed
    assert logs[1]._consumer is not None
    logs[1].close()
