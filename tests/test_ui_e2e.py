"""End to end: the real `kafkalab console` in tmux; a key kills the leader, the table shows the new one,
ctrl+q quits, and no process of the console's cluster is left."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from kafkalab.cluster.process import marked_processes, reap_marked_processes
from tests.conftest import TEST_STATE_ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]

KAFKALAB = Path(sys.executable).with_name("kafkalab")
TOPIC = "e2e-topic"


class Tmux:
    """One tmux server on its own socket, so nothing else's sessions are touched."""

    def __init__(self, name: str) -> None:
        self.socket = name
        self.session = name

    def run(self, *args: str, check: bool = True) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        if check and out.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {out.stderr}")
        return out.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.session, check=False)

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.socket, "has-session", "-t", self.session],
                              capture_output=True, timeout=20).returncode == 0

    def wait_for(self, check: Callable[[str], bool], timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.3)
        raise AssertionError(f"{what} not on screen within {timeout:.0f}s; screen:\n{screen}")


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    t = Tmux(f"kafkalab-e2e-{os.getpid()}")
    yield t
    t.run("kill-server", check=False)


def leader_of(screen: str, partition: str) -> str | None:
    match = re.search(rf"{re.escape(partition)}\s+(\d+|none)\s", screen)
    return match.group(1) if match else None


def test_kafkalab_console_kill_key_moves_leader_and_quit_leaves_nothing(tmux: Tmux) -> None:
    state_dir = TEST_STATE_ROOT / "console-e2e"
    state_dir.mkdir(parents=True, exist_ok=True)
    # COLUMNS/LINES inherited from the test process would pin the console to 80x24 whatever the pane's size
    command = f"env -u COLUMNS -u LINES {KAFKALAB} console --no-lab --free-ports --state-dir {state_dir}"
    tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "36", command)
    try:
        tmux.wait_for(lambda s: "g runs a producer" in s, 180, "the console ready")
        subprocess.run([str(KAFKALAB), "topic", "create", TOPIC, "--partitions", "3", "--replication-factor", "3",
                        "--state-dir", str(state_dir)], check=True, capture_output=True, timeout=90)
        screen = tmux.wait_for(lambda s: (leader_of(s, f"{TOPIC}/0") or "none") != "none", 60, "the topic's leader")
        leader = leader_of(screen, f"{TOPIC}/0")
        assert leader is not None
        tmux.run("send-keys", "-t", tmux.session, leader, "k")
        tmux.wait_for(lambda s: "KILLED" in s, 30, "the KILLED badge")
        tmux.wait_for(lambda s: leader_of(s, f"{TOPIC}/0") not in (leader, "none", None), 90, "a new leader")
        owner = [p for p in psutil.process_iter(["cmdline"]) if str(state_dir) in " ".join(p.info["cmdline"] or [])
                 and "console" in (p.info["cmdline"] or [])]
        assert owner, "the console process is not running"
        tmux.run("send-keys", "-t", tmux.session, "C-q")
        deadline = time.monotonic() + 90
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not tmux.alive(), "the console did not exit within 90s of ctrl+q"
        assert marked_processes(state_dir) == []
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in owner)
    finally:
        reap_marked_processes(state_dir)
