"""A toast that expires after a scroll is repainted away (kafkalab/ui/repaint_fix.py).

Textual paints in headless mode too, up to the terminal write: every screen update renders the compositor's
dirty regions, so recording them shows what would have reached the terminal.
"""

from __future__ import annotations

import asyncio

import pytest
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static
from textual.widgets._toast import Toast

from kafkalab.ui import repaint_fix
from tests.test_ui_app import sync


class Scrolling(App[None]):
    def compose(self) -> ComposeResult:
        with VerticalScroll(id="scroll"):
            yield from (Static(f"line {i}") for i in range(200))


def cells(region: Region) -> set[tuple[int, int]]:
    return {(x, y) for y in range(region.y, region.bottom) for x in range(region.x, region.right)}


async def toast_cells_left_after_a_scroll() -> set[tuple[int, int]]:
    """The cells of an expired toast that no screen update repainted, after a scroll left the full map stale."""
    app = Scrolling()
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        app.notify("a toast that expires " * 3, timeout=60)
        for _ in range(100):
            await pilot.pause(0.01)
            if (toasts := app.screen.query(Toast)) and (region := toasts.first().region):
                break
        else:
            raise AssertionError("the toast was not laid out")
        compositor = app.screen._compositor
        scroll = app.query_one("#scroll", VerticalScroll)
        for _ in range(20):  # a scroll takes the fast path, which leaves the full map to be rebuilt on a read
            scroll.scroll_to(y=0 if scroll.scroll_y else scroll.max_scroll_y, animate=False, immediate=True)
            await pilot.pause()
            if compositor._full_map_invalidated:
                break
        else:
            raise AssertionError("no scroll left the full map stale")
        painted: set[tuple[int, int]] = set()
        render_update = compositor.render_update

        def recording(*args: object, **kwargs: object) -> object:
            for region in compositor._dirty_regions:
                painted.update(cells(region))
            return render_update(*args, **kwargs)  # type: ignore[arg-type]

        compositor.render_update = recording  # type: ignore[method-assign]
        toasts.first()._expire()  # what the toast's timer calls when its time is up
        await pilot.pause(0.3)
        assert not app.screen.query(Toast), "the toast did not go"
        return cells(region) - painted


@sync
async def test_a_toast_that_expires_after_a_scroll_is_painted_away() -> None:
    repaint_fix.install()
    missed = await toast_cells_left_after_a_scroll()
    assert not missed, f"{len(missed)} of the toast's cells were never repainted after it went"


def test_the_pinned_textual_still_needs_the_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the patch the pinned Textual leaves the toast on screen; when this fails, Textual fixed it:
    remove repaint_fix and widen the pin."""
    monkeypatch.setattr(Compositor, "full_map", property(repaint_fix.lazy_full_map))
    assert asyncio.run(toast_cells_left_after_a_scroll()), "Textual repaints the toast by itself now"
