"""Keep Textual from leaving stale cells on the terminal when its full widget map is rebuilt lazily.

Textual (seen in 8.2.8, the newest release) paints a layout change by diffing the compositor's full widget
map before and after the change (``Compositor.reflow``); regions whose widgets moved, appeared or went are
repainted. A scroll takes a fast path (``reflow_visible``) that only marks the full map stale, and the next
reader of ``Compositor.full_map`` (any ``widget.region`` of a widget off the visible map, for one) rebuilds it
from the DOM as it is at that moment. When that read comes after a widget was removed but before the layout
refresh the removal asked for, the rebuilt map already lacks the widget, the refresh finds no difference,
and the widget's old cells are never repainted: the console's "screenshot saved" and "report ready" toasts
stayed on the terminal for good after a lab run (Textual's toast rack scrolls itself on every new toast,
and removing a toast reads the rack's region before the layout refresh).

The fix: when ``full_map`` is rebuilt lazily, the regions that differ from the map it replaces are marked
dirty, as ``reflow`` marks them, so the next screen update repaints them from what is there now.

Textual is pinned to 8.2.x in pyproject.toml, the range this was checked against. No upstream report of it was
found in Textual's tracker (https://github.com/Textualize/textual/issues) when it was pinned;
tests/test_ui_repaint.py shows both halves: with the patch the toast is repainted away, and without it the pinned
Textual still leaves it (that test fails once Textual fixes it: then remove this module and widen the pin).
"""

from __future__ import annotations

from collections.abc import Callable

from textual._compositor import Compositor, CompositorMap

# the property's getter through __dict__: read as an attribute of the class, mypy types a property as its getter
lazy_full_map: Callable[[Compositor], CompositorMap] = Compositor.__dict__["full_map"].fget  # Textual's own


def _full_map_marking_changes(self: Compositor) -> CompositorMap:
    if self.root is None or not self._full_map_invalidated:
        return lazy_full_map(self)
    before = self._full_map
    after = lazy_full_map(self)
    screen_region = self.size.region
    if screen_region not in self._dirty_regions:
        changed = (geometry.clip.intersection(geometry.region) for _, geometry in after.items() ^ before.items())
        self._dirty_regions.update(region for region in changed if region)
    return after


def install() -> None:
    """Make every screen's compositor mark what a lazy rebuild of its full map changed (idempotent)."""
    if Compositor.__dict__["full_map"].fget is not _full_map_marking_changes:
        patched = property(_full_map_marking_changes)
        Compositor.full_map = patched  # type: ignore[method-assign,assignment]  # replacing Textual's property on purpose
