"""End to end: the real `kafkalab console` in tmux through a whole lab run, Spark's report included, and
nothing on the terminal that the console did not draw.

Each pane capture is compared row by row with the console's own export of the same frame (F12 writes it
as SVG): a child process writing to the terminal (Spark's JVM, a node, a client) leaves text that no
export of the app holds, and it stays there until the app redraws that region.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from kafkalab.analysis.verdict import CLEAN
from kafkalab.cluster.process import reap_marked_processes
from tests.conftest import TEST_STATE_ROOT
from tests.screen_text import svg_rows
from tests.test_ui_e2e import KAFKALAB, Tmux

pytestmark = [pytest.mark.cluster, pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]

COLS, ROWS = 120, 36
ROUNDS = 6
MIN_STABLE_ROWS = ROWS // 2


def pane_rows(tmux: Tmux) -> list[str]:
    lines = tmux.screen().split("\n")[:ROWS]
    return [ln.rstrip() for ln in lines] + [""] * (ROWS - len(lines))


def foreign_rows(tmux: Tmux, shots: Path) -> tuple[list[str], int]:
    """Rows the pane shows that the app's export of the same moment does not, and how many rows compared.

    A row is compared when the pane showed it the same before the export and after (the toast the export
    raises gone again): a row redrawn in between was live, and an export cannot pin it.
    """
    before = pane_rows(tmux)
    known = set(shots.glob("*.svg"))
    tmux.run("send-keys", "-t", tmux.session, "F12")
    deadline = time.monotonic() + 90
    while not (new := set(shots.glob("*.svg")) - known) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert new, f"F12 wrote no screenshot within 90 s; screen:\n{tmux.screen()}"
    drawn = svg_rows(next(iter(new)).read_text(), ROWS, COLS)
    tmux.wait_for(lambda s: "screenshot saved" not in s, 90, "the screenshot toast gone")  # 5 s; longer when busy
    after = pane_rows(tmux)
    stable = [i for i in range(ROWS) if before[i] == after[i]]
    bad = [f"row {i}: pane {after[i]!r}\n        app  {drawn[i]!r}" for i in stable if after[i] != drawn[i]]
    return bad, len(stable)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    t = Tmux(f"kafkalab-screen-{os.getpid()}")
    yield t
    t.run("kill-server", check=False)


def descendants(pid: int) -> set[psutil.Process]:
    try:
        return set(psutil.Process(pid).children(recursive=True))
    except psutil.NoSuchProcess:
        return set()


@pytest.mark.timeout(1500)
def test_lab_run_with_spark_report_leaves_only_the_consoles_own_text_on_the_terminal(tmux: Tmux) -> None:
    work = TEST_STATE_ROOT / "screen-e2e"
    runs = work / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    # COLUMNS/LINES inherited from the test process would pin the console to 80x24 whatever the pane's size
    command = f"env -u COLUMNS -u LINES {KAFKALAB} console setup-check --no-spark-warmup --runs-dir {runs}"
    tmux.run("new-session", "-d", "-s", tmux.session, "-x", str(COLS), "-y", str(ROWS), "-c", str(work), command)
    children: set[psutil.Process] = set()
    try:
        pane_pid = int(tmux.run("display-message", "-p", "-t", tmux.session, "#{pane_pid}").strip())
        tmux.wait_for(lambda s: "run: idle" in s, 60, "the lab console")
        tmux.run("send-keys", "-t", tmux.session, "g")
        deadline = time.monotonic() + 1200  # a cold Spark on a busy machine takes minutes
        while (CLEAN not in (screen := tmux.screen()) and "run: error" not in screen
               and time.monotonic() < deadline):
            children |= descendants(pane_pid)  # Spark's JVM and the nodes, to end them if the test fails
            time.sleep(1)
        assert CLEAN in screen, f"no clean verdict (the run failed, or 1200 s passed); screen:\n{screen}"
        assert (runs / "spark.log").read_text().strip(), "Spark's JVM wrote nothing to its log file"
        failures: list[str] = []
        for _ in range(ROUNDS):
            bad, compared = foreign_rows(tmux, work)
            if not bad and compared >= MIN_STABLE_ROWS:
                break
            failures = bad or [f"only {compared} rows held still"]
        else:
            pytest.fail("text on the terminal that the console did not draw:\n" + "\n".join(failures))
        tmux.run("send-keys", "-t", tmux.session, "C-q")
        deadline = time.monotonic() + 90
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not tmux.alive(), "the console did not exit within 90 s of ctrl+q"
    finally:
        tmux.run("kill-server", check=False)
        for run_dir in runs.glob("setup-check-*"):
            reap_marked_processes(run_dir / "cluster")
        for proc in children:
            if proc.is_running():
                proc.kill()
        psutil.wait_procs(list(children), timeout=10)
