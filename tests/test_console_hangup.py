"""A console whose terminal closes (SIGHUP: tmux kill-server, a dropped ssh session) exits in every state, and
the console log says why (issue 44, item 11): one was found running 22 minutes after its terminal had gone,
behind the question a bare console asks when another kafkalab cluster runs.

The real `kafkalab console` runs in tmux, on a state root of the test's own; the other cluster is a fake that
holds a state dir's lock and writes its cluster.json (what makes kafkalab count a cluster as running), so no JVM
starts."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from kafkalab.cluster.supervision import StateDirLock
from kafkalab.paths import state_root
from tests.test_ui_e2e import KAFKALAB, Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux: the console runs in a terminal")
EXIT_WITHIN_S = 10.0


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The state root of this test alone (its registry of running clusters, the console log)."""
    path = tmp_path / "state"
    monkeypatch.setenv("KAFKALAB_STATE", str(path))
    return path


@pytest.fixture
def other_cluster(root: Path) -> Iterator[Path]:
    """A kafkalab cluster running as far as any command can tell: its state dir locked by this process, which
    is alive, and its cluster.json written."""
    state_dir = root / "clusters" / "other"
    lock = StateDirLock(state_dir)
    lock.acquire()
    (state_dir / "cluster.json").write_text(json.dumps({
        "state_dir": str(state_dir), "bootstrap": "127.0.0.1:1", "client_bootstrap": "127.0.0.1:2", "brokers": 3,
        "mode": "zookeeper", "controllers": 1, "combined": False, "owner_pid": os.getpid()}))
    try:
        yield state_dir
    finally:
        lock.release()


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    """A tmux server of the test's own; whatever ran in it is gone after the test, even when it failed."""
    t = Tmux(f"kafkalab-hup-{os.getpid()}")
    yield t
    pids = t.run("list-panes", "-a", "-F", "#{pane_pid}", check=False).split()
    t.run("kill-server", check=False)
    for pid in map(int, pids):
        with contextlib.suppress(psutil.NoSuchProcess):
            psutil.Process(pid).kill()


def console_in(tmux: Tmux, root: Path, *args: str) -> int:
    """`kafkalab console ARGS` in a tmux pane of its own; returns the console's pid."""
    command = f"exec env KAFKALAB_STATE={root} {KAFKALAB} console {' '.join(args)}"
    tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "36", command)
    return int(tmux.run("display-message", "-p", "-t", tmux.session, "#{pane_pid}").strip())


def assert_gone_after_hangup(tmux: Tmux, pid: int, root: Path) -> None:
    """The terminal closes (tmux sends the pane SIGHUP): the console exits within seconds and says why."""
    console = psutil.Process(pid)
    tmux.run("kill-server")
    try:
        console.wait(EXIT_WITHIN_S)
    except psutil.TimeoutExpired:
        console.kill()  # this test's own console: leave no orphan behind a failure
        pytest.fail(f"the console (pid {pid}) still ran {EXIT_WITHIN_S:.0f}s after its terminal closed")
    log = (root / "console.log").read_text()
    assert f"pid {pid}: SIGHUP" in log and "the terminal closed" in log, log


def test_a_console_asking_about_the_port_clash_exits_when_its_terminal_closes(
        tmux: Tmux, root: Path, other_cluster: Path, tmp_path: Path) -> None:
    pid = console_in(tmux, root, "--no-lab", "--no-spark-warmup")
    tmux.wait_for(lambda s: "Free ports (f)" in s and "Quit (q)" in s, 90,
                  "the port-clash question")
    assert_gone_after_hangup(tmux, pid, root)


def test_an_idle_console_exits_when_its_terminal_closes(tmux: Tmux, root: Path, tmp_path: Path) -> None:
    pid = console_in(tmux, root, "leader-failover", "--no-spark-warmup", "--runs-dir", str(tmp_path / "runs"))
    tmux.wait_for(lambda s: "run: idle" in s, 90, "the console")
    assert_gone_after_hangup(tmux, pid, root)


def test_a_console_not_started_yet_exits_on_sighup_and_says_so(root: Path, tmp_path: Path) -> None:
    """SIGHUP while the console prepares its cluster (before its app runs): Python's default ended it with no
    word in any log."""
    script = textwrap.dedent("""
        import os, signal, sys, time
        from kafkalab.cli import console_cmd, main

        def slow_preparation(args):
            os.kill(os.getpid(), signal.SIGHUP)  # the terminal closes while the console prepares
            time.sleep(30)
            raise AssertionError("SIGHUP did not end the console")

        console_cmd._bare_source = slow_preparation
        sys.exit(main(["console", "--no-lab"]))
        """)
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "KAFKALAB_STATE": str(root)}, cwd=tmp_path)
    assert time.monotonic() - started < 20 and out.returncode == 128 + signal.SIGHUP, (out.returncode, out.stderr)
    log = (state_root() / "console.log").read_text()
    assert "SIGHUP" in log and "before the console's screen was up" in log, log
