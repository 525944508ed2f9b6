"""The console against the real cluster: the kill key on a partition's leader moves its leadership."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Button

from kafkalab import kafka_install
from kafkalab.admin import Admin, PartitionState
from kafkalab.cluster import Cluster, ClusterSpec, NodeState
from kafkalab.cluster.control_socket import ControlServer, write_cluster_file
from kafkalab.cluster.remote import owner_of_ports
from kafkalab.errors import KafkalabError
from kafkalab.feeds.cluster_source import ClusterSource
from kafkalab.feeds.lab_source import LabSource
from kafkalab.feeds.port_clash import PortClashSource
from kafkalab.feeds.topic_ops import NeedsReassignment, alter_topic, reassign_topic
from kafkalab.feeds.workload import DEMO_TOPIC
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.results import Phase
from kafkalab.labs.run_deps import real_deps
from kafkalab.labs.session import LabSession
from kafkalab.ui.app import LabConsole
from kafkalab.ui.broker import BrokerPane
from kafkalab.ui.logtail import LogTail
from kafkalab.ui.modals import ChoiceScreen, ConfirmScreen
from tests.helpers import wait_until
from tests.lab_fakes import clean_report
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
    source = ClusterSource(cluster, owned=False)

    @sync
    async def scenario() -> None:
        app = LabConsole(source, cluster.broker_ids)
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
        source.close()  # its admin helper: the console was not quit
        for node in cluster.brokers:  # the next test wants every broker back
            if node.state in (NodeState.KILLED, NodeState.STOPPED):
                node.start()


def test_bare_console_opens_with_the_demo_topic_and_g_x_run_the_default_workload(cluster: Cluster,
                                                                                   admin: Admin) -> None:
    if DEMO_TOPIC in admin.topics():  # the cluster is shared: another test may have made one its own way
        def gone() -> bool:
            if DEMO_TOPIC not in admin.topics():
                return True
            with contextlib.suppress(KafkalabError):  # NOT_CONTROLLER after a test moved the controller
                admin.delete_topic(DEMO_TOPIC)
            return False
        wait_until(gone, 60, interval=1.0, what="the old demo topic deleted")
        time.sleep(10)  # ZooKeeper mode refuses the name ("marked for deletion") until its replicas are gone
    source = ClusterSource(cluster, owned=False)
    said: list[str] = []
    try:
        source.boot(said.append)
        assert said and said[-1].endswith("g runs a producer and a consumer")
        def led() -> list[PartitionState]:
            found = [p for p in admin.snapshot(offsets=False).topic(DEMO_TOPIC) if p.leader is not None]
            return found if len(found) == 6 else []

        partitions = wait_until(led, 30, what="the demo topic's 6 partitions, each led, in the metadata")
        assert {len(p.replicas) for p in partitions} == {3} and {p.min_isr for p in partitions} == {2}
        assert source.run().phase == "idle" and not source.run().live
        source.start_run()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            frame = source.run()
            if frame.producer and frame.producer.acked and frame.consumers and frame.consumers[0].processed:
                break
            time.sleep(0.5)
        frame = source.run()
        assert frame.live and frame.phase == Phase.RUNNING
        assert frame.consumers and frame.consumers[0].processed > 0, "the consumer processed nothing in 120 s"
        source.stop_run()
        frame = source.run()
        assert not frame.live and frame.phase == Phase.STOPPED
    finally:
        source.close()


def test_topic_prompt_on_the_cluster_refuses_too_large_rf_and_reassigns_an_rf_change(
        cluster: Cluster, admin: Admin, topic_factory: Callable[..., str]) -> None:
    wait_until(lambda: len(admin.snapshot(offsets=False).brokers) == 3, 120, what="3 brokers (a test killed one)")
    with pytest.raises(KafkalabError, match=r"rf=4 is more than the 3 brokers running: give rf=3 or fewer"):
        alter_topic(admin, "prompt-too-large", 4, None)
    topic = topic_factory(partitions=2, replication_factor=2)
    with pytest.raises(NeedsReassignment) as need:
        alter_topic(admin, topic, 3, 2)
    assert (need.value.current, need.value.wanted) == (2, 3)
    assert admin.snapshot(offsets=False).topic(topic)[0].min_isr == 2  # the min ISR part was applied
    reassign_topic(cluster, admin, topic, 3)
    deadline = time.monotonic() + 90
    while {len(p.replicas) for p in admin.snapshot(offsets=False).topic(topic)} != {3}:
        assert time.monotonic() < deadline, "the reassignment did not reach RF 3 within 90 s"
        time.sleep(0.5)


def test_a_bare_console_on_ports_a_kafkalab_cluster_holds_attaches_to_it_and_drives_it(
        cluster: Cluster, admin: Admin, distribution: kafka_install.Distribution, tmp_path: Path) -> None:
    """The clash's way out: the modal offers free ports / attach / quit; attached, the node keys act on the
    owner's nodes through its control socket, the table comes from its bootstrap, and quitting leaves it up."""
    wait_until(lambda: len(admin.snapshot(offsets=False).brokers) == 3, 120, what="3 brokers (a test killed one)")
    write_cluster_file(cluster)
    server = ControlServer(cluster, threading.Event())
    taken = [cluster.spec.broker_ports[0]]
    own = ClusterSource(Cluster(ClusterSpec(state_dir=tmp_path / "own", free_ports=True), distribution))

    @sync
    async def scenario() -> None:
        app = LabConsole(PortClashSource(own, cluster.state_dir, taken), cluster.broker_ids)
        async with app.run_test(size=(120, 36)) as pilot:
            await until(lambda: isinstance(app.screen, ChoiceScreen), 30, "the port clash's choice")
            buttons = [str(b.label) for b in app.screen.query(Button)]
            assert buttons == ["Free ports (f)", "Attach (a)", "Quit (q)"]
            await pilot.press("a")
            await until(lambda: app.ready and app.snapshot is not None and bool(app.snapshot.topic(DEMO_TOPIC)), 60,
                        "the attached cluster's demo topic in the table")
            assert app.title == f"kafkalab · attached to {cluster.state_dir}"
            await pilot.press("3", "p")
            await until(lambda: cluster.node(3).state == NodeState.PAUSED, 30, "broker-3 paused by its owner")
            pane = app.query_one("#node-broker-3", BrokerPane)
            await until(lambda: pane.has_class("-paused"), 30, "broker-3's paused badge")
            await pilot.press("p")
            await until(lambda: cluster.node(3).state == NodeState.RUNNING, 30, "broker-3 resumed")
            await pilot.press("ctrl+q")
            await until(lambda: "the attached cluster keeps running" in app.last_action, 10, "the quit's words")
            assert f"`kafkalab cluster down --state-dir {cluster.state_dir}` stops it" in app.source.after_quit
            await until(lambda: not app.is_running, 60, "the console quit")

    try:
        assert owner_of_ports(taken) == cluster.state_dir
        scenario()
        assert all(n.state == NodeState.RUNNING for n in cluster.nodes), "quitting an attached console ended nodes"
        assert not any(n.state.alive for n in own.cluster.nodes)  # the free-ports cluster never started
    finally:
        server.close()
        (cluster.state_dir / "cluster.json").unlink(missing_ok=True)
        for node in cluster.brokers:
            if node.state == NodeState.PAUSED:
                node.resume()


def test_console_attach_to_a_state_dir_nobody_runs_is_a_one_line_error(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "kafkalab", "console", "--attach", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"kafkalab: error: no cluster in {tmp_path}: start one with "
                                   "`kafkalab cluster up --detach`")


def test_g_again_in_a_lab_console_reuses_the_kept_cluster_and_the_run_reads_only_its_own_records(
        distribution: kafka_install.Distribution, tmp_path: Path) -> None:
    """Real cluster, clients and audit; the Spark analysis is left out (this test claims the reuse, not the
    report): the second run keeps every node's process, and its topic holds only its own records."""
    deps = replace(real_deps(distribution), analyze=lambda _d, _a, _l: clean_report("not analysed here"))
    session = LabSession(load_lab(find_lab("setup-check")), tmp_path / "runs", deps=deps, keep_cluster=True)
    source = LabSource(session)
    said: list[str] = []

    @sync
    async def scenario() -> None:
        app = LabConsole(source, [1, 2, 3])
        app.notify = lambda message, **_kw: said.append(str(message))  # type: ignore[method-assign]
        async with app.run_test(size=(120, 36)) as pilot:
            await until(lambda: app.ready, 30, "the console booted")
            await pilot.press("g")
            await until(lambda: session.result is not None and not session.running, 240, "the first run's end")
            first = session.cluster
            assert first is not None
            await until(lambda: all(app.pane(n.name).query_one(LogTail).line_count for n in first.nodes), 10,
                        "every node pane's log tail showing its log")
            pids = {n.name: n.pid for n in first.nodes}
            # g comes back once the screen shows the run ended (the footer trades x for g), as a user sees it
            await until(lambda: not app.run_frame.live, 30, "the first run's end on screen")
            await pilot.press("g")
            await until(lambda: "reusing the running cluster" in said, 30, "the reuse said on screen")
            await until(lambda: session.result is not None, 240, "the second run's result")
            assert session.cluster is first and {n.name: n.pid for n in first.nodes} == pids
            await until(lambda: not app.run_frame.live, 30, "the run's end on screen")
            await pilot.press("ctrl+q")
            await until(lambda: not app.is_running, 120, "the console quit")

    try:
        scenario()
        runs = sorted((tmp_path / "runs").glob("setup-check-*"))
        assert len(runs) == 2 and (runs[1] / "cluster.txt").is_file()
        rows = (runs[1] / "audit.csv").read_text().splitlines()[1:]
        assert len(rows) == 100, "the reused cluster's topic held more than the second run's records"
        assert all(row.startswith(f"{runs[1].name}:producer:") for row in rows)
    finally:
        source.close()  # the session, and the admin helper if the console was not quit
