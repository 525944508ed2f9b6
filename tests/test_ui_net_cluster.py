"""The console's network keys on a real ZooKeeper-mode cluster with --net-proxies: `1 i` isolates broker-1 through
the console's own key path (the proxy's status, read outside the console, has the cuts; the pane and the table
mark them), `H` heals every link. The cluster, its proxy and every JVM end whatever happens."""

from __future__ import annotations

import time

import psutil
import pytest
from textual.widgets import Static

from kafkalab import kafka_install
from kafkalab.cluster import Cluster, NodeState
from kafkalab.feeds.cluster_source import ClusterSource
from kafkalab.netfaults import Cut, Link
from kafkalab.ui.app import LabConsole
from tests.conftest import make_spec
from tests.test_ui_app import sync
from tests.test_ui_cluster import until
from tests.test_ui_net import net_line

pytestmark = pytest.mark.cluster


def jvms_of(state_dir: str) -> list[psutil.Process]:
    """This test process's children that run a node of the cluster in ``state_dir`` (or its proxy)."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if state_dir in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_the_isolate_key_cuts_the_picked_broker_off_and_heal_restores_it(
        distribution: kafka_install.Distribution) -> None:
    spec = make_spec("ui-net", net_proxies=True)
    cluster = Cluster(spec, distribution)
    source = ClusterSource(cluster, platform="ZooKeeper")

    @sync
    async def scenario() -> None:
        app = LabConsole(source, spec.broker_ids, poll_s=0.3)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(lambda: app.ready and len(app.node_states) == 4 and all(
                s == NodeState.RUNNING for s in app.node_states.values()) and app.net is not None, 240,
                "the cluster up with its proxy")
            await until(lambda: app.snapshot is not None and bool(app.snapshot.partitions), 60, "the demo topic")
            await pilot.press("1", "i")
            await until(lambda: "ISOLATED" in net_line(app, "broker-1"), 15, "broker-1 marked ISOLATED")
            assert cluster.net is not None
            rules = set(cluster.net.status().rules())  # the proxy's own answer, not the console's
            assert Cut(Link("broker-1", "zookeeper")) in rules and Cut(Link("broker-2", "broker-1")) in rules
            assert "cut from 1" in net_line(app, "broker-2")
            await until(lambda: "✂ 1 cut from 2,3 · zk" in str(app.query_one("#partitions-status", Static).render()),
                        10, "the table's header naming the cut-off broker")
            assert "isolated" in app.last_action
            await pilot.press("H")
            await until(lambda: net_line(app, "broker-1") == "", 15, "the marks gone after heal")
            assert cluster.net.status().rules() == ()
            assert app.last_action.startswith("healed every link")

    try:
        scenario()
    finally:
        source.close()
        cluster.shutdown(graceful=False)
        deadline = time.monotonic() + 20
        while jvms_of(str(spec.state_dir)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not jvms_of(str(spec.state_dir)), "a node or the proxy outlived the test"
