"""The admin helper processes without a cluster: what crosses their pipe comes back whole, a helper's death is
told once and the next call starts a new one, closing ends it at once; the partition pane says a dead helper
in words, not as brokers unreachable."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from kafkalab.admin import ClusterSnapshot, GroupDescription, PartitionState
from kafkalab.admin.groups import Member, PartitionLag
from kafkalab.admin.helper_process import ClusterGenerations, HelperClosed, HelperGone, HelperProcess
from kafkalab.admin.offsets_log import OffsetsFate, OffsetsGone
from kafkalab.admin.snapshot_helper import SnapshotHelper, SnapshotRequest
from kafkalab.cluster.ports import free_port
from kafkalab.ui.partitions import PartitionTable
from tests.helpers import process_gone, wait_until
from tests.test_ui_app import running, settle, sync
from tests.test_ui_feed import FROZEN_EPOCH, FakeSource

# answers (wait, text) with text after sleeping wait seconds
SLEEPY_ECHO = (sys.executable, "-c",
               "import time; from kafkalab.admin.helper_process import serve; serve(lambda w, t: time.sleep(w) or t)")
HELPER_DIED = "the admin helper died of SIGSEGV (librdkafka): asking again"


def every_field_set(obj: Any) -> None:
    """No field left at its default: the round trip below checks each one."""
    for f in fields(obj):
        assert getattr(obj, f.name) != f.default, f"{type(obj).__name__}.{f.name} is left at its default"


def through_the_pipe(wire: dict[str, Any] | list[Any]) -> Any:
    return json.loads(json.dumps(wire))


def test_a_snapshot_crosses_the_helpers_pipe_unchanged() -> None:
    led = PartitionState("t", 3, 2, (2, 3, 1), (2, 3), end_offset=1234, min_isr=2, leader_epoch=7)
    offline = PartitionState("t", 4, None, (3, 1, 2), (), end_offset=-1001, min_isr=3, leader_epoch=0)
    snap = ClusterSnapshot(taken_at=1_700_000_000.123456, reachable=False, controller=2, brokers=(1, 2, 3),
                           partitions=(led, offline), error="no answer", elapsed_s=0.1 + 0.2, answered_by=3,
                           disowned=(4,), helper_failed=True)
    for obj in (led, snap):
        every_field_set(obj)
    assert ClusterSnapshot.from_wire(through_the_pipe(snap.to_wire())) == snap  # a list is no tuple: not equal
    empty = ClusterSnapshot(0.0, True)
    assert ClusterSnapshot.from_wire(through_the_pipe(empty.to_wire())) == empty


def test_a_snapshot_request_crosses_the_helpers_pipe_unchanged() -> None:
    ask = SnapshotRequest("127.0.0.1:9092", 140_000_000_123, 1.5, 2.0, offsets=False, internal=True)
    every_field_set(ask)
    assert SnapshotRequest.from_wire(through_the_pipe(ask.to_wire())) == ask


def test_a_group_description_crosses_the_helpers_pipe_unchanged() -> None:
    member = Member("m-1", "app", "/127.0.0.1", (("t", 0), ("t", 2)), instance_id="static-1")
    held = PartitionLag("t", 0, committed=5, log_end=9, member=member)
    free = PartitionLag("t", 1, committed=None, log_end=3, member=None)
    gone = OffsetsGone(OffsetsFate.EXPIRED, at=1_700_000_000.0, last_commit_at=1_699_999_900.0, partitions=6,
                       retention_min=1)
    desc = GroupDescription("g", "Stable", "127.0.0.1:9092 (1)", "range", (member,), (held, free), reachable=False,
                            error="NOT_COORDINATOR", taken_at=1_700_000_000.5, offsets_gone=gone)
    for obj in (member, held, gone, desc):
        every_field_set(obj)
    assert GroupDescription.from_wire(through_the_pipe(desc.to_wire())) == desc


@pytest.fixture
def echo(tmp_path: Path) -> Iterator[HelperProcess]:
    helper = HelperProcess(SLEEPY_ECHO, tmp_path / "echo.log")
    yield helper
    helper.close()


def test_a_helper_that_died_between_calls_is_told_once_and_the_next_call_starts_a_new_one(
        echo: HelperProcess) -> None:
    assert echo.ask((0, "one"), 1.0) == "one"
    first = echo.pid
    assert first is not None
    os.kill(first, signal.SIGSEGV)  # as librdkafka's background threads may end an idle client's process
    with pytest.raises(HelperGone, match=r"^died of SIGSEGV \(librdkafka\)$"):
        echo.ask((0, "two"), 1.0)
    assert echo.pid is None and process_gone(first)
    assert echo.ask((0, "three"), 1.0) == "three"
    second = echo.pid
    assert second is not None and second != first
    echo.close()
    assert echo.pid is None and process_gone(second)


def test_close_ends_the_helper_at_once_even_mid_answer_and_starts_no_other(echo: HelperProcess) -> None:
    outcome: list[object] = []

    def ask_slowly() -> None:
        try:
            outcome.append(echo.ask((60, "late"), 60.0))
        except Exception as exc:
            outcome.append(exc)

    asking = threading.Thread(target=ask_slowly)
    asking.start()
    pid = wait_until(lambda: echo.pid, 10, what="the helper started")
    echo.close()
    asking.join(10)
    assert not asking.is_alive(), "close waited for the answer under way"
    assert len(outcome) == 1 and isinstance(outcome[0], HelperClosed), outcome
    assert process_gone(pid)
    with pytest.raises(HelperClosed):
        echo.ask((0, "after"), 1.0)
    assert echo.pid is None


def test_the_snapshot_helper_says_its_death_in_words_and_the_next_call_asks_again(tmp_path: Path) -> None:
    helper = SnapshotHelper(tmp_path / "snapshots.log")
    nobody = f"127.0.0.1:{free_port()}"  # nothing listens: librdkafka's own answer is "unreachable"
    try:
        first = helper.snapshot(nobody, "cluster", 0.5)
        assert not first.reachable and not first.helper_failed and first.error
        crashed = helper.pid
        assert crashed is not None
        os.kill(crashed, signal.SIGSEGV)
        dead = helper.snapshot(nobody, "cluster", 0.5)
        assert not dead.reachable and dead.helper_failed and dead.error == HELPER_DIED
        again = helper.snapshot(nobody, "cluster", 0.5)
        assert not again.helper_failed and helper.pid not in (None, crashed)
    finally:
        helper.close()
    assert helper.pid is None and process_gone(crashed)


@sync
async def test_the_partition_pane_says_the_admin_helper_died_not_that_the_brokers_are_unreachable() -> None:
    feed = FakeSource()
    answers, dead = feed.snapshot, threading.Event()
    died = ClusterSnapshot(FROZEN_EPOCH + 5, False, error=HELPER_DIED, helper_failed=True)
    feed.snapshot = lambda: died if dead.is_set() else answers()  # type: ignore[method-assign]  # its helper dies
    async with running(feed) as (app, pilot):
        dead.set()
        await settle(pilot)
        status = str(app.query_one("#partitions-status", Static).render())
        assert status.startswith(" NO SNAPSHOT ") and HELPER_DIED in status, status
        assert "UNREACHABLE" not in status and "brokers unreachable" not in status
        table = app.query_one(PartitionTable)
        assert table.stale and table.row_count == 6 and app.query_one("#partitions").has_class("-stale")


def test_a_new_cluster_object_is_a_new_generation_even_where_the_last_ones_id_is_reused() -> None:
    """The helpers told clusters apart by ``id()``, which Python reuses once the old object is freed: a lab's
    next cluster could have been taken for the last one, its admin client kept."""
    generations = ClusterGenerations()
    first = object()
    assert generations.of(first) == generations.of(first) == 1
    del first
    assert [generations.of(object()) for _ in range(100)] == list(range(2, 102))  # each freed at once
