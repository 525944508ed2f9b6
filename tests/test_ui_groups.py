"""The console's group and records panes (Pilot) against the real cluster: lag falling while a consumer
runs, the reset modal's dry run before it executes, a typed record shown with its partition and offset.

The nodes and the run come from the fake feed (they are not what these tests claim); groups, offsets
and records come from the real cluster through the real feed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer
from textual.widgets import Button, DataTable, Input, Select, TabbedContent

from kafkalab.admin import Admin
from kafkalab.cluster import Cluster
from kafkalab.feeds.groups_feed import AdminGroupsFeed
from kafkalab.ui.app import LabConsole
from kafkalab.ui.groups import GroupCard, GroupsPane, ResetScreen
from kafkalab.ui.records import RecordsPane
from tests.test_ui_app import SIZE, sync
from tests.test_ui_cluster import until
from tests.test_ui_feed import FakeSource

pytestmark = pytest.mark.cluster


def console(cluster: Cluster) -> LabConsole:
    return LabConsole(FakeSource(), [1, 2, 3], boot=False, poll_s=0.3,  # type: ignore[arg-type]
                      groups_feed=AdminGroupsFeed(lambda: cluster, timeout_s=2.0))


def slow_consumer(cluster: Cluster, group: str, topic: str, stop: threading.Event) -> None:
    """Reads 10 records at a time and commits them, about two batches a second (60 batches in all)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": "slow-app",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        while not stop.is_set():
            if [m for m in consumer.consume(10, 0.5) if not m.error()]:
                consumer.commit(asynchronous=False)
                time.sleep(0.5)
    finally:
        consumer.close()


def test_group_pane_shows_lag_falling_and_resets_after_a_dry_run(
        cluster: Cluster, admin: Admin, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(600):
        producer.produce(topic, key=str(i), value=f"v{i}")
    assert producer.flush(30) == 0
    group = f"{topic}-slow"
    stop = threading.Event()
    reader = threading.Thread(target=slow_consumer, args=(cluster, group, topic, stop), daemon=True)

    @sync
    async def scenario() -> None:
        app = console(cluster)
        async with app.run_test(size=SIZE) as pilot:
            reader.start()
            await pilot.press("o")
            pane = app.query_one(GroupsPane)
            seen: list[int] = []

            def lag_now() -> bool:
                # the shared cluster holds other tests' groups: pick this one, as presses of `]` would
                for _ in pane.frame.groups:
                    if pane.selected == group or group not in pane.cards:
                        break
                    pane.select_next()
                desc = pane.selected_group() if pane.selected == group else None
                if desc is not None and desc.total_lag is not None and (not seen or seen[-1] != desc.total_lag):
                    seen.append(desc.total_lag)
                return len(seen) >= 4

            await until(lag_now, 120, "four different lags of the group")
            assert seen == sorted(seen, reverse=True) and seen[-1] < seen[0], seen
            card = pane.cards[group]
            assert isinstance(card, GroupCard) and "Stable" in str(card.query_one(".group-header").render())
            table = card.query_one(DataTable)
            desc = card.desc
            assert desc is not None and table.row_count == 3
            for p in desc.partitions:  # every row says log-end minus committed ('-' before a first commit)
                cell = table.get_cell(f"{topic}/{p.partition}", "lag")
                assert cell == ("-" if p.committed is None else f"{(p.log_end or 0) - p.committed:,}")
            assert len(card.query_one(".group-lag").data) >= 2  # type: ignore[attr-defined]

            stop.set()
            reader.join(30)
            await until(lambda: (pane.selected_group() or card.desc).state == "Empty", 90, "the group Empty")
            await pilot.press("O")
            await until(lambda: isinstance(app.screen, ResetScreen), 30, "the reset modal")
            modal = app.screen
            assert isinstance(modal, ResetScreen) and modal.query_one(Select).value == "to-earliest"
            assert modal.query_one("#reset-execute", Button).disabled
            await pilot.click("#reset-dry-run")
            await until(lambda: modal.plan is not None, 60, "the dry-run table")
            assert modal.query_one("#reset-plan", DataTable).row_count == 3
            assert {m.new for m in modal.plan or []} == {0}
            before = committed(admin, group)
            assert sum(before.values()) > 0, "a dry run commits nothing"
            await pilot.click("#reset-execute")
            await until(lambda: not isinstance(app.screen, ResetScreen), 60, "the reset executed")
            assert committed(admin, group) == {0: 0, 1: 0, 2: 0}

    try:
        scenario()
    finally:
        stop.set()


def committed(admin: Admin, group: str) -> dict[int, int]:
    result = admin.client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def test_a_typed_record_appears_in_the_records_pane(cluster: Cluster, topic_factory: Callable[..., str]) -> None:
    """With the keyboard alone, as an attendee at 100x30 does: c puts the cursor in the topic line (its letters once
    opened the console's prompts: t the topic change, e the change prompt), enter follows, the cursor goes on to
    the record line, esc gives the console its keys back."""
    topic = topic_factory(partitions=3)

    @sync
    async def scenario() -> None:
        app = console(cluster)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c")
            pane = app.query_one(RecordsPane)
            watch = pane.query_one("#records-watch", Input)
            assert watch.has_focus
            await pilot.press(*f"{topic}:9", "enter")
            await until(lambda: "no partition 9" in str(pane.query_one("#records-outcome").render()), 20,
                        "the bad partition named")
            await pilot.press("ctrl+u", *topic, "enter")
            await until(lambda: pane.watching == (topic, None), 20, "the topic followed")
            line = pane.query_one("#records-type", Input)
            await until(lambda: line.has_focus, 10, "the cursor in the record line")
            await pilot.press(*"alpha:hello", "enter")
            await until(lambda: bool(pane.outcomes), 30, "the send's outcome")
            outcome = pane.outcomes[-1]
            assert outcome.ok and outcome.partition is not None and outcome.offset == 0, outcome
            shown = f"partition {outcome.partition} offset {outcome.offset}"
            assert shown in str(pane.query_one("#records-outcome").render())
            table = pane.query_one(DataTable)
            key = f"{outcome.partition}/{outcome.offset}"
            await until(lambda: key in pane.shown, 30, "the typed record in the table")
            assert [table.get_cell(key, c) for c in ("partition", "offset", "key", "value")] == \
                [str(outcome.partition), "0", "alpha", "hello"]
            await pilot.press("escape", "u")  # the keys are the console's again
            await pilot.pause()
            assert app.query_one("#side", TabbedContent).active == "tab-run" and not line.value

    scenario()


def test_records_mark_what_a_read_committed_reader_steps_over_or_waits_behind(
        cluster: Cluster, topic_factory: Callable[..., str]) -> None:
    """A topic with a committed and an open transaction, then a plain record: read read_uncommitted, the pane
    showed all five alike, where a read_committed consumer reads two and waits behind the open transaction for the
    other three; once that transaction aborts it steps over its two and reads the plain one."""
    topic = topic_factory(partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": f"{topic}-txn"})
    producer.init_transactions(30)
    for ending in ("commit", "open"):
        producer.begin_transaction()
        for i in range(2):
            producer.produce(topic, key=ending, value=f"{ending}-{i}")
        producer.flush(30)
        if ending == "commit":
            producer.commit_transaction(30)
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    plain.produce(topic, key="plain", value="other-app")
    plain.flush(30)

    @sync
    async def scenario() -> None:
        app = console(cluster)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("c", *topic, "enter")
            pane = app.query_one(RecordsPane)
            table = pane.query_one(DataTable)

            def marks() -> dict[str, str]:
                return {str(table.get_cell(k, "value")): str(table.get_cell(k, "txn")) for k in pane.shown}

            wanted = {"commit-0": "", "commit-1": "", "open-0": "held", "open-1": "held", "other-app": "held"}
            try:
                await until(lambda: marks() == wanted, 60, f"the transactions marked: {wanted}")
            except AssertionError as exc:
                raise AssertionError(f"{exc}; shown: {marks()}") from None
            producer.abort_transaction(30)  # the open one ends: a read_committed reader steps over it, reads on
            await until(lambda: marks() == wanted | {"open-0": "aborted", "open-1": "aborted", "other-app": ""},
                        60, "the held records marked as their transaction ended")
            assert table.columns["txn"].content_width >= len("aborted")  # a mark that grew is not cut short

    scenario()
