"""Where a lab runs, as a stranger reads it: `kafkalab labs`' "runs on" column, `labs --show`'s command for each
platform, the console's Lab tab (this run's platform, the others with their commands), the top bar's Kafka, the
verdict's "what moved"; and `console --no-lab --kafka-version 4.4.0` building a KRaft 4.4.0 cluster."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from kafkalab.cli import main
from kafkalab.cli.console_cmd import _bare_source, console_args
from kafkalab.feeds.cluster_source import ClusterSource
from kafkalab.feeds.frames import LabView, ReportView
from kafkalab.feeds.lab_source import lab_view
from kafkalab.labs import catalog, load_lab
from kafkalab.labs.loader import find_lab
from kafkalab.ui.app import LabConsole
from tests.screen_text import svg_rows
from tests.test_ui_app import settle, sync
from tests.test_ui_feed import FakeSource


def flags_on(flags: tuple[str, ...]) -> tuple[str | None, str | None]:
    """(--mode, --kafka-version) as `kafkalab run` would parse ``flags``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode")
    parser.add_argument("--kafka-version")
    args = parser.parse_args(list(flags))
    return args.mode, args.kafka_version


def test_each_platforms_command_runs_the_lab_there_whatever_platform_it_is_on_now() -> None:
    """The Lab tab builds the commands from the lab as this run has it (moved to its platform): the same
    commands as from the lab file, and each one, given to `run`, lands on its platform."""
    for path in catalog():
        lab = load_lab(path)
        for here in lab.cluster.platforms():
            moved = lab.on(*here)
            for mode, version in lab.cluster.platforms():
                flags = moved.run_flags(mode, version)
                assert flags == lab.run_flags(mode, version), (lab.id, here)
                ran = lab.on(*flags_on(flags)).cluster
                assert (ran.mode, ran.kafka_version) == (mode, version), (lab.id, flags)


def test_platform_words_is_a_line_per_kafka_with_its_modes() -> None:
    assert load_lab(find_lab("leader-failover")).platform_words == "3.9 ZK · KRaft\n4.4 KRaft"
    assert load_lab(find_lab("new-rebalance-protocol")).platform_words == "4.4 KRaft"


@pytest.mark.parametrize("width", [80, 100])
def test_labs_has_a_runs_on_column_that_fits(width: int, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["labs"]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= width
    assert "runs on" in out.splitlines()[1]  # one table: the column beside the id, not a second table below
    row = next(line for line in out.splitlines() if " leader-failover " in line)
    assert "3.9 ZK · KRaft" in row
    assert "4.4 KRaft" in out.splitlines()[out.splitlines().index(row) + 1]


def test_show_names_every_platform_with_its_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["labs", "--show", "leader-failover"]) == 0
    out = capsys.readouterr().out
    tail = out[out.index("Runs on"):].splitlines()
    assert tail[1:] == ["  ZooKeeper mode on Kafka 3.9.2 (a plain run's)",
                        "      kafkalab run leader-failover --mode zookeeper",
                        "  KRaft mode on Kafka 3.9.2", "      kafkalab run leader-failover --mode kraft",
                        "  KRaft mode on Kafka 4.4.0", "      kafkalab run leader-failover --kafka-version 4.4.0"]


# ---- the console -----------------------------------------------------------------------------------------
class KraftFourSource(FakeSource):
    """The fake feed, as a lab's run on KRaft and Kafka 4.4.0 that moved two partitions' leaders."""

    platform = "KRaft · Kafka 4.4.0"

    def __init__(self) -> None:
        super().__init__(with_run=True)
        lab = load_lab(find_lab("leader-failover")).on("kraft", "4.4.0")
        view: LabView = lab_view(lab, [])
        report = ReportView("no anomaly: every acknowledged record was processed, once and in order", True, {},
                            {str(p): {"acknowledged": 100, "consumed_rows": 100,
                                      "leader_changes": 2 if p in (0, 4) else 0} for p in range(8)})
        self.run_frame = dataclasses.replace(self.run_frame, lab=view, report=report)


def screen(app: LabConsole) -> list[str]:
    return svg_rows(app.export_screenshot(), app.size.height, app.size.width)


@sync
async def test_lab_tab_top_bar_and_verdict_say_the_platform_and_what_moved() -> None:
    feed = KraftFourSource()
    app = LabConsole(feed, [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert "KRaft · Kafka 4.4.0" in screen(app)[0]  # the top bar
        await pilot.press("l")
        await settle(pilot)
        text = "\n".join(screen(app))
        assert "THIS RUN  KRaft mode on Kafka 4.4.0" in text
        lab = app.query_one("#lab")
        lab.scroll_end(animate=False)
        await settle(pilot)
        text = "\n".join(screen(app))
        assert "RUNS ON" in text
        for command in ("kafkalab run leader-failover --mode zookeeper", "kafkalab run leader-failover --mode kraft",
                        "kafkalab run leader-failover --kafka-version 4.4.0"):
            assert command in text
        assert "▶ KRaft mode on Kafka 4.4.0  (this run)" in text
        await pilot.press("v")
        await settle(pilot)
        text = "\n".join(screen(app))
        assert "no anomaly" in text and "what moved  the leaders of partitions 0 (2×) and 4 (2×)" in text


@sync
async def test_top_bar_keeps_the_platform_at_100_columns() -> None:
    app = LabConsole(KraftFourSource(), [1, 2, 3], boot=False, poll_s=0.15, clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert "leader-failover" in screen(app)[0] and "KRaft · Kafka 4.4.0" in screen(app)[0]


# ---- the bare cluster on Kafka 4.4.0 ---------------------------------------------------------------------
def test_bare_console_on_kafka_4_is_a_kraft_cluster_of_4_4_0(tmp_path: Path) -> None:
    source, brokers, panes = _bare_source(console_args(["--no-lab", "--kafka-version", "4.4.0", "--free-ports",
                                                        "--state-dir", str(tmp_path / "c")]))
    assert isinstance(source, ClusterSource)
    spec = source.cluster.spec
    assert spec.mode == "kraft" and spec.kraft and brokers == [1, 2, 3]
    assert source.cluster.dist.version() == "4.4.0"
    assert panes.controllers == 1  # a controller pane, no ZooKeeper's
    assert source.platform == "KRaft · Kafka 4.4.0"
    assert not (tmp_path / "c").exists() or not any((tmp_path / "c").iterdir())  # nothing started

