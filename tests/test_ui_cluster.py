"""The console against the real cluster: the kill key on a partition's leader moves its leadership."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from kafkalab.cluster import Cluster, NodeState
from kafkalab.ui.app import LabConsole
from kafkalab.ui.broker import BrokerPane
from kafkalab.ui.modals import ConfirmScreen
from kafkalab.ui.source import ClusterSource
from tests.test_ui_app import leader_cell, sync

pytestmark = pytest.mark.cluster


async def until(check: Callable[[], bool], timeout: float, what: str) -> None:
    for _ in range(int(timeout / 0.1)):
        if check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what} not seen within {timeout:.0f}s")


def test_kill_key_on_the_leader_moves_the_table_leader(cluster: Cluster, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=3, replication_factor=3)
    key = f"{topic}/0"

    @sync
    async def scenario() -> None:
        app = LabConsole(ClusterSource(cluster, owned=False), cluster.broker_ids)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(lambda: app.snapshot is not None and app.snapshot.partition(topic, 0) is not None, 60,
                        "the topic in the table")
            await pilot.pause()
            leader = leader_cell(app, key)
            assert leader.isdigit()
            await pilot.press(leader, "k")
            await pilot.pause()
            if isinstance(app.screen, ConfirmScreen):  # another test's RF=1 topic makes it a last ISR
                await pilot.press("y")
            pane = app.query_one(f"#node-broker-{leader}", BrokerPane)
            await until(lambda: pane.has_class("-killed"), 30, f"broker-{leader}'s killed badge")
            await until(lambda: leader_cell(app, key) not in (leader, "none"), 90, "a new leader in the table")
            assert (key, "leader") in app.query_one("PartitionTable").marks  # type: ignore[attr-defined]

    try:
        scenario()
    finally:
        for node in cluster.brokers:  # the next test wants every broker back
            if node.state in (NodeState.KILLED, NodeState.STOPPED):
                node.start()
