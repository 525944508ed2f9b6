"""The console's partition table on a real cluster, asked in the admin helper process: a SIGSEGV there costs the
console one poll, not its life, and the console's own process holds no librdkafka admin client for the table."""

from __future__ import annotations

import gc
import os
import signal
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from textual.widgets import Static

from kafkalab.cluster import Cluster
from kafkalab.feeds.cluster_source import ClusterSource
from kafkalab.ui.app import LabConsole
from kafkalab.ui.partitions import PartitionTable
from kafkalab.ui.workers import Poller
from tests.helpers import process_gone
from tests.test_ui_app import sync
from tests.test_ui_cluster import until

pytestmark = pytest.mark.cluster


@pytest.fixture
def console(cluster: Cluster) -> Iterator[Callable[[], LabConsole]]:
    """A console on a bare ClusterSource attached to the shared cluster; its helpers are ended even when the
    test fails before the console's own quit."""
    apps: list[LabConsole] = []

    def make() -> LabConsole:
        apps.append(LabConsole(ClusterSource(cluster, owned=False), cluster.broker_ids))
        return apps[-1]

    yield make
    for app in apps:
        app.groups_feed.close()
        app.source.close()


def status(app: LabConsole) -> str:
    return str(app.query_one("#partitions-status", Static).render())


def table_shows(app: LabConsole, topic: str, partitions: int) -> bool:
    table = app.query_one(PartitionTable)
    return not table.stale and all(f"{topic}/{p}" in table.rows_now for p in range(partitions))


def admin_poller(app: LabConsole) -> Poller[Any]:
    return next(p for p in app.pollers if isinstance(p, Poller) and p.name == "admin")


def test_a_sigsegv_in_the_admin_helper_costs_the_console_one_poll(
        console: Callable[[], LabConsole], topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=3)
    pids: list[int] = []
    sources: list[ClusterSource] = []

    @sync
    async def scenario() -> None:
        app = console()
        source = app.source
        assert isinstance(source, ClusterSource)
        sources.append(source)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(lambda: table_shows(app, topic, 3), 120, "the topic's partitions in the table")
            crashed = source.admin_helper.pid
            assert crashed is not None
            pids.append(crashed)
            died_at = time.time()
            os.kill(crashed, signal.SIGSEGV)  # as librdkafka's crash ends its process
            await until(lambda: "died of SIGSEGV" in status(app), 30, "the helper's death in the partition pane")
            assert app.is_running
            assert status(app).startswith(" NO SNAPSHOT  the admin helper died of SIGSEGV (librdkafka): asking again")
            assert app.query_one(PartitionTable).stale, "the last known values are not greyed"
            await until(lambda: table_shows(app, topic, 3), 60, "the table back after the helper's death")
            assert app.snapshot is not None and app.snapshot.taken_at > died_at
            assert "NO SNAPSHOT" not in status(app) and "partitions" in status(app)
            restarted = source.admin_helper.pid
            assert restarted is not None and restarted != crashed
            pids.append(restarted)
            await pilot.press("ctrl+q")
            await until(lambda: not app.is_running, 60, "the console quit")

    scenario()
    assert sources[0].admin_helper.pid is None and len(pids) == 2
    assert all(process_gone(pid) for pid in pids), "a helper outlived the console"


def test_the_console_process_holds_no_librdkafka_admin_client_for_the_table(
        console: Callable[[], LabConsole], topic_factory: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    topic = topic_factory(partitions=3)
    made: list[int] = []
    alive: weakref.WeakSet[AdminClient] = weakref.WeakSet()
    real_init = AdminClient.__init__

    def counted(self: AdminClient, *args: Any, **kwargs: Any) -> None:
        made.append(1)
        alive.add(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(AdminClient, "__init__", counted)

    @sync
    async def scenario() -> None:
        app = console()
        source = app.source
        assert isinstance(source, ClusterSource)
        async with app.run_test(size=(120, 36)):
            await until(lambda: app.ready, 120, "the console booted")  # the demo topic's check made its own client
            at_boot = len(made)
            await until(lambda: table_shows(app, topic, 3), 120, "the topic's partitions in the table")
            polls = admin_poller(app).polls
            await until(lambda: admin_poller(app).polls >= polls + 3, 30, "three more polls of the table")
            assert source.admin_helper.pid is not None, "the table was not asked in the helper"
            assert len(made) == at_boot, "a poll made an admin client in the console's process"
            gc.collect()
            assert not list(alive), "an admin client lives on in the console's process"

    scenario()
