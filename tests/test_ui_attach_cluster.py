"""Attach from a bare console, on a real detached cluster (issue 33 #5): `kafkalab cluster up --detach`, then
`kafkalab console --no-lab` with no --state-dir offers free ports / attach / quit; attached, a node key acts
through the owner, and quitting leaves the cluster up. The detached cluster is stopped by its state dir."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Button

from kafkalab.cluster.control_socket import read_cluster_file
from kafkalab.cluster.supervision import is_driven
from kafkalab.feeds.port_clash import PortClashSource
from kafkalab.feeds.workload import DEMO_TOPIC
from kafkalab.ui.app import LabConsole
from kafkalab.ui.broker import BrokerPane
from kafkalab.ui.modals import ChoiceScreen
from tests.test_ui_app import sync
from tests.test_ui_cluster import until

pytestmark = pytest.mark.cluster


def kafkalab(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalab", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def test_a_bare_console_with_no_state_dir_attaches_to_the_detached_cluster_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKALAB_STATE", str(tmp_path / "root"))  # only this test's cluster is "running"
    state = (tmp_path / "A").resolve()
    try:
        up = kafkalab("cluster", "up", "--detach", "--free-ports", "--state-dir", str(state))
        assert up.returncode == 0, up.stdout + up.stderr
        from kafkalab.cli.console_cmd import _bare_source, console_args

        source, broker_ids, metadata = _bare_source(console_args(["--no-lab"]))  # was: exit 2, 'already runs'
        assert isinstance(source, PortClashSource) and source.owner == state

        @sync
        async def scenario() -> None:
            app = LabConsole(source, broker_ids, metadata=metadata)
            async with app.run_test(size=(100, 30)) as pilot:
                await until(lambda: isinstance(app.screen, ChoiceScreen), 30, "the question")
                assert [str(b.label) for b in app.screen.query(Button)] == ["Free ports (f)", "Attach (a)",
                                                                            "Quit (q)"]
                await pilot.press("a")
                await until(lambda: app.ready and app.snapshot is not None and bool(app.snapshot.topic(DEMO_TOPIC)),
                            90, "the attached cluster's demo topic in the table")
                assert app.title == f"kafkalab · attached to {state}"
                await pilot.press("2", "p")
                pane = app.query_one("#node-broker-2", BrokerPane)
                await until(lambda: pane.has_class("-paused"), 30, "broker-2 paused through its owner")
                await pilot.press("p")
                await until(lambda: not pane.has_class("-paused"), 30, "broker-2 resumed")
                await pilot.press("ctrl+q")
                await until(lambda: not app.is_running, 60, "the console quit")

        scenario()
        assert is_driven(state), "quitting the attached console ended the detached cluster"
        assert read_cluster_file(state)["brokers"] == 3
        assert not source.own.cluster.nodes or not any(n.state.alive for n in source.own.cluster.nodes)
    finally:
        down = kafkalab("cluster", "down", "--state-dir", str(state), timeout=120)
        assert down.returncode == 0 or not is_driven(state), down.stdout + down.stderr
