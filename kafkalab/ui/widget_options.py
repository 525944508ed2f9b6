"""The keyword arguments every Textual widget takes, typed for widgets that pass them on to their base."""

from __future__ import annotations

from typing import TypedDict


class WidgetOptions(TypedDict, total=False):
    name: str | None
    id: str | None
    classes: str | None
    disabled: bool
