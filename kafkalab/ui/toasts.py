"""The console's toasts by kind: one toast per kind on screen, the newest replacing the one before."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from textual.notifications import Notification


class ToastKind(StrEnum):
    """What a toast is about: one toast per kind is shown, the newest replacing the one before (a kill, its
    leader moves and a restart stacked six toasts over the partition table at 100x30)."""

    NODE = "node"  # a node's state changed
    NET = "net"  # the network faults in force changed (a key, a lab's fault, `kafkalab net`)
    LEADERS = "leaders"  # partition leaders moved
    TRUNCATED = "truncated"  # a broker's log says it truncated records
    RUN = "run"  # a run's report or grade
    EXERCISE = "exercise"  # a hint taken, a cause named
    NEWS = "news"  # anything else: a key's answer, an action's outcome


@dataclass
class KindNotification(Notification):
    """A notification that knows its :class:`ToastKind`."""

    kind: ToastKind = ToastKind.NEWS


def toast_kind(notification: Notification) -> ToastKind:
    """The kind of a toast; a plain notification (one Textual posts itself) is news."""
    return notification.kind if isinstance(notification, KindNotification) else ToastKind.NEWS
