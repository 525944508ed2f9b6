"""A fresh cluster clears every view built from the last one; the bare console offers free ports / attach / quit
when its state dir is another kafkalab's; `--free-ports` picks free ports for every node; the two lags say
what they count. Pilot on fake sources (tests/test_ui_feed.py) where a cluster is not what the test claims."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from kafkalab.admin import ClusterSnapshot, GroupDescription
from kafkalab.admin.groups import PartitionLag
from kafkalab.clients.stats import ClientState, ConsumerStats
from kafkalab.cluster import NodeState
from kafkalab.cluster.ports import free_port
from kafkalab.cluster.spec import DEFAULT_ZK_PORT, ClusterSpec
from kafkalab.cluster.supervision import StateDirLock, is_driven
from kafkalab.errors import KafkalabError
from kafkalab.feeds.frames import CLUSTER_STARTING, NodesFrame, RunFrame
from kafkalab.feeds.groups_feed import AdminGroupsFeed
from kafkalab.labs.results import Phase
from kafkalab.ui.broker import BrokerPane
from kafkalab.ui.consumers import ConsumersTable, consumer_row
from kafkalab.ui.partitions import PartitionTable
from tests.test_ui_app import running, settle, sync, topbar_text
from tests.test_ui_feed import TOPIC, FakeSource, node_info


class FreshClusterSource(FakeSource):
    """The fake cluster, then (``fresh``) a new one starting as a lab's next run starts it: its nodes STARTING,
    its snapshot the source's 'the cluster is starting', its run live in the STARTING phase."""

    fresh = False

    def nodes(self) -> NodesFrame:
        if not self.fresh:
            return super().nodes()
        return NodesFrame(tuple(node_info(n, NodeState.STARTING, None if n == "zookeeper" else int(n[-1]))
                                for n in self.states))

    def snapshot(self) -> ClusterSnapshot:
        if self.fresh:
            return ClusterSnapshot(0.0, False, error=CLUSTER_STARTING)
        return super().snapshot()


@sync
async def test_a_fresh_cluster_starting_clears_the_last_clusters_waits_rows_and_leader_counts() -> None:
    """Issue 33 #6: a run stopped with broker 1 killed and broker 2 paused, then g: the top bar said the old
    cluster's 'waiting for 2 in-sync replicas ... brokers 2, 1 down', its 'under min ISR' rows stayed under
    THE CLUSTER IS STARTING and broker-3 read 'leads 8 · follows 0'."""
    feed = FreshClusterSource()
    feed.start_run()
    async with running(feed) as (app, pilot):
        feed.node_action("broker-1", "kill")
        feed.node_action("broker-2", "pause")
        feed.partitions = [replace(p, isr=(3,), leader=3) for p in feed.partitions]  # only broker 3 in sync
        await settle(pilot)
        assert "waiting for 2 in-sync replicas" in topbar_text(app)  # the old cluster, as it was
        pane = app.query_one("#node-broker-3", BrokerPane)
        assert "leads 6" in str(pane.query_one(".facts-line", Static).render())

        feed.stop_run()
        await settle(pilot)
        feed.fresh = True  # g: the next run's fresh cluster starts
        feed.run_frame = RunFrame(live=True, phase=Phase.STARTING, message="starting a fresh cluster")
        await settle(pilot, 3)

        assert "waiting for" not in topbar_text(app), topbar_text(app)
        status = str(app.query_one("#partitions-status", Static).render())
        assert "THE CLUSTER IS STARTING" in status
        table = app.query_one(PartitionTable)
        assert table.row_count == 0 and not table.rows_now, "the old cluster's rows stayed under 'starting'"
        facts = str(pane.query_one(".facts-line", Static).render())
        assert "leads" not in facts and "follows" not in facts, facts
        assert app.snapshot is None
        counts = str(app.query_one("#producer-counts", Static).render())
        assert counts == "not started", f"the last run's producer stayed: {counts}"
        assert "★" not in str(pane.border_title or ""), "the old cluster's controller mark stayed"


def group(lag: int) -> GroupDescription:
    return GroupDescription("test-app", "Stable", partitions=(PartitionLag(TOPIC, 0, 100, 100 + lag),))


class Helper:
    """The group helper's answer, set by the test: a list of groups, or the error the cluster gives."""

    def __init__(self) -> None:
        self.answer: list[GroupDescription] | KafkalabError = [group(5)]

    def describe_all(self, *_args: Any) -> list[GroupDescription]:
        if isinstance(self.answer, KafkalabError):
            raise self.answer
        return self.answer

    def close(self) -> None:
        pass


class Bootstrap:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap


def test_the_groups_of_the_last_cluster_are_not_kept_once_a_new_cluster_replaces_it() -> None:
    """The Groups pane keeps its last values while a cluster does not answer; a fresh cluster that does not
    answer yet is not the old one not answering: its frame has no groups (and no history) rather than an error
    under which the old cluster's groups stay."""
    clusters = [Bootstrap("old:9092")]
    feed = AdminGroupsFeed(lambda: clusters[-1])
    helper = Helper()
    feed._helper.close()
    feed._helper = helper  # type: ignore[assignment]
    first = feed.groups()
    assert [g.group_id for g in first.groups] == ["test-app"] and first.lag_history == {"test-app": (5,)}
    helper.answer = KafkalabError("timed out")
    assert feed.groups().error == "timed out"  # the same cluster not answering: the pane keeps its values
    clusters.append(Bootstrap("new:9092"))  # a fresh cluster, starting
    fresh = feed.groups()
    assert fresh.groups == () and fresh.error == "" and fresh.lag_history == {}, fresh
    assert feed.groups().error == "timed out"  # from then on the new cluster's own silence is said
    helper.answer = [group(0)]
    assert feed.groups().lag_history == {"test-app": (0,)}


# ---- the two lags ----------------------------------------------------------------------------------
def consumer(lag: dict[int, int], committed: dict[int, int] | None = None) -> ConsumerStats:
    return ConsumerStats(name="consumer", group="test-app", state=ClientState.RUNNING, group_state="stable",
                         received=1000, processed=1000, rate=0.0, assignment=(0, 1, 2), lag=lag,
                         committed=committed or {})


def test_a_consumers_lag_with_a_partition_unmeasured_is_not_shown_as_zero() -> None:
    """Issue 33 #7: with a broker paused the watermarks of its partitions are not answered; the consumers pane
    summed the others and read 0 while the Groups tab said 932. A partition not measured is said, not 0."""
    cells = consumer_row(consumer({0: 0}))  # partitions 1 and 2: their leader did not answer
    assert cells["lag"].plain.strip() == "0+?", cells["lag"]
    assert consumer_row(consumer({0: 0, 1: 3, 2: 0}))["lag"].plain.strip() == "3"
    assert consumer_row(consumer({}))["lag"].plain.strip() == "?"


@sync
async def test_the_consumers_lag_and_the_groups_lag_say_what_each_counts() -> None:
    feed = FakeSource(with_run=True)
    async with running(feed) as (app, pilot):
        await pilot.press("u")  # the report took the Results tab
        await settle(pilot)
        table = app.query_one(ConsumersTable)
        headings = [str(c.label).strip() for c in table.columns.values()]
        assert headings[-2] in ("unread", "unrd") and "lag" not in headings, headings  # unrd: a narrow pane
        assert "Groups tab's commit lag counts from the committed offset" in str(table.tooltip)
        await pilot.resize_terminal(200, 50)
        await settle(pilot)
        assert [str(c.label).strip() for c in table.columns.values()][-2] == "unread"


# ---- --free-ports: one meaning -------------------------------------------------------------------------
def bare_args(tmp_path: Path, *argv: str) -> argparse.Namespace:
    from kafkalab.cli.console_cmd import console_args

    args = console_args(["--no-lab", "--state-dir", str(tmp_path / "state"), *argv])
    return args


def test_bare_console_free_ports_picks_free_ports_for_every_node_not_only_the_taken_ones(tmp_path: Path) -> None:
    """Issue 33 #13: `console --free-ports` started on 9092/9192/9292 and 2181 (free ones only where the
    defaults were taken), where `run --free-ports` picks free ports always."""
    from kafkalab.cli.console_cmd import _bare_source

    source, _ids, _panes = _bare_source(bare_args(tmp_path, "--free-ports"))
    spec: ClusterSpec = source.cluster.spec  # type: ignore[attr-defined]
    defaults = ClusterSpec(state_dir=tmp_path)
    assert spec.zk_port != DEFAULT_ZK_PORT
    assert not {*spec.broker_ports} & {defaults.broker_port(b) for b in defaults.broker_ids}, spec.broker_ports
    assert len({spec.zk_port, *spec.broker_ports}) == 4


def test_lab_console_free_ports_picks_free_ports_for_every_node(tmp_path: Path) -> None:
    from kafkalab.cli.console_cmd import _lab_source, console_args

    args = console_args(["leader-failover", "--free-ports", "--no-spark-warmup", "--runs-dir", str(tmp_path)])
    source, _ids, _panes = _lab_source(args)
    try:
        ports = source.session._ports  # type: ignore[attr-defined]
        defaults = ClusterSpec(state_dir=tmp_path)
        assert ports.zk_port not in (None, DEFAULT_ZK_PORT)
        assert len(ports.broker_ports) == 3
        assert not {*ports.broker_ports} & {defaults.broker_port(b) for b in defaults.broker_ids}
    finally:
        source.close()


@pytest.mark.parametrize("command", [["console"], ["run"], ["cluster", "up"]])
def test_free_ports_help_says_every_node(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalab.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "free ports for every node" in text and "where the defaults are taken" not in text, text


# ---- a bare console whose state dir another kafkalab drives ----------------------------------------------
def driven_state_dir(path: Path, brokers: int = 3) -> StateDirLock:
    """``path`` as a detached cluster leaves it: its lock held (here by this process) and its cluster.json."""
    lock = StateDirLock(path)
    lock.acquire()
    ports = [free_port() for _ in range(brokers + 1)]
    (path / "cluster.json").write_text(json.dumps({
        "state_dir": str(path), "bootstrap": ",".join(f"127.0.0.1:{p}" for p in ports[1:]), "brokers": brokers,
        "zk_port": ports[0], "broker_ports": ports[1:], "backend": "local", "owner_pid": os.getpid(),
        "mode": "zookeeper", "controllers": 1, "combined": False, "controller_ports": []}))
    return lock


@pytest.mark.parametrize("explicit", [False, True], ids=["no --state-dir", "--state-dir A"])
def test_bare_console_on_a_state_dir_another_kafkalab_drives_asks_free_ports_attach_or_quit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, explicit: bool) -> None:
    """Issue 33 #5: `cluster up --detach --state-dir A`, then `console --no-lab` (which resolves to A, the one
    cluster running) was refused: 'a cluster already runs in A ... give another --state-dir', exit 2."""
    from kafkalab.cli.console_cmd import _bare_source, console_args
    from kafkalab.feeds.port_clash import PortClashSource

    monkeypatch.setenv("KAFKALAB_STATE", str(tmp_path / "root"))  # this test's registry of running clusters
    other = (tmp_path / "A").resolve()
    lock = driven_state_dir(other)
    try:
        source, ids, _panes = _bare_source(console_args(["--no-lab", *(["--state-dir", str(other)] if explicit
                                                                         else [])]))
        assert isinstance(source, PortClashSource) and source.owner == other and ids == [1, 2, 3]
        question = source.question()
        assert question is not None and question.title == f"A cluster already runs in {other}"
        assert [c.answer for c in question.choices] == ["free", "attach", "quit"]
        own = source.own.cluster.spec
        assert own.state_dir != other and not is_driven(own.state_dir)
        assert f"own cluster in {own.state_dir} on free ports" in question.detail
        assert own.zk_port != DEFAULT_ZK_PORT  # beside a running cluster: free ports, whatever it holds
    finally:
        lock.release()
