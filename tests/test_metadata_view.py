"""Whose metadata kafkalab shows, and the broker it leaves out (isolated: it answers from a view the live brokers
no longer share), said in the same words by `kafkalab cluster status` and by the console's partition table, whole
words at 100 and 160 columns."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from kafkalab.admin import ClusterSnapshot, MetadataView
from kafkalab.cli import cluster_cmds
from kafkalab.ui.partitions import PartitionsPane
from tests.screen_text import svg_rows
from tests.test_ui_app import console, settle, sync
from tests.test_ui_feed import FakeSource

ZOMBIE = MetadataView(answered_by=3, left_out=(2,))
SENTENCE = "view of broker 3 · broker 2 left out: still answering, but dropped by the live brokers"
SIZES = {100: 30, 160: 48}  # columns: rows


class ViewSource(FakeSource):
    """The fake feed's snapshots, as broker ``view.answered_by`` sees the cluster: ``view.left_out`` not alive."""

    def __init__(self, view: MetadataView) -> None:
        super().__init__()
        self.view = view

    def snapshot(self) -> ClusterSnapshot:
        snap = super().snapshot()
        if not snap.reachable:
            return snap
        alive = tuple(b for b in snap.brokers if b not in self.view.left_out)
        return replace(snap, brokers=alive, answered_by=self.view.answered_by, disowned=self.view.left_out)


def status_text(view: MetadataView, width: int) -> str:
    """`cluster status` as printed to a ``width``-column terminal, for a snapshot with ``view``."""
    out = io.StringIO()
    node = {"broker_id": 1, "name": "broker-1", "state": "RUNNING", "pid": 4242, "port": 9092, "uptime_s": 60.0,
            "cpu_percent": 1.0, "rss_bytes": 2**28, "reason": ""}
    snap = replace(ViewSource(view).snapshot(), taken_at=0.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cluster_cmds, "console", Console(file=out, width=width, highlight=False))
        cluster_cmds._print_status(Path("/tmp/kafkalab-test"), [node], snap)
    return out.getvalue()


async def table_caption(view: MetadataView, width: int) -> list[str]:
    """The rows the console's partition pane gives to whose view it shows, at ``width`` columns."""
    app = console(ViewSource(view))
    async with app.run_test(size=(width, SIZES[width])) as pilot:
        await settle(pilot)
        line = app.query_one(PartitionsPane).query_one("#partitions-view").region
        rows = svg_rows(app.export_screenshot(), SIZES[width], width)
        return [rows[y][line.x:line.right].strip() for y in range(line.y, line.bottom)]


def said_in(lines: list[str]) -> str:
    """The words of ``lines`` as one line: a word cut at a line's end would show as two."""
    return " ".join(" ".join(lines).split())


def test_a_left_out_broker_is_named_with_why_and_nobody_left_out_names_none() -> None:
    assert ZOMBIE.said() == SENTENCE
    assert MetadataView(1, (2, 4)).said() == ("view of broker 1 · brokers 2, 4 left out: still answering, but "
                                              "dropped by the live brokers")
    assert MetadataView(3).said() == "view of broker 3"
    assert MetadataView(None).said() == ""  # unreachable: no broker's view


@pytest.mark.parametrize("width", sorted(SIZES))
def test_cluster_status_and_the_console_s_table_say_the_same_whole_words(width: int) -> None:
    @sync
    async def caption() -> None:
        rows = await table_caption(ZOMBIE, width)
        assert said_in(rows) == SENTENCE, rows
        assert all(len(row) <= width for row in rows)

    caption()
    out = status_text(ZOMBIE, width)
    lines = [line for line in out.splitlines() if "view of" in line or "live brokers" in line]
    assert said_in(lines) == SENTENCE, out
    assert "brokers alive: [1, 3]" in out and all(len(line) <= width for line in out.splitlines()), out


@sync
async def test_the_console_s_table_names_whose_view_and_no_left_out_when_all_agree() -> None:
    rows = await table_caption(MetadataView(3), 100)
    assert said_in(rows) == "view of broker 3", rows


def test_cluster_status_names_whose_view_and_no_left_out_when_all_agree() -> None:
    out = status_text(MetadataView(3), 100)
    assert "view of broker 3" in out and "left out" not in out, out
