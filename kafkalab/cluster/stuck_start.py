"""Kafka 3.9 KRaft broker start-ups that cannot go on by themselves: a new JVM is their way out.

Both are races of a quorum's first election that kafkalab cannot prevent, only notice in the broker's log
and answer by starting the broker again (:meth:`kafkalab.cluster.node.Node.tick`).
"""

from __future__ import annotations

import re
from datetime import datetime

# The broker loses the quorum's voter set when its metadata log is truncated at start-up (it followed a
# leader whose first records a re-election overwrote: the voters record goes, and is never read again),
# so it can never find the active controller and retries its registration forever. A new JVM reads the
# voters from its log again. Seen as: a truncation, then registration requests that found no controller.
_TRUNCATED = "Truncated to offset"
_UNSENT_REGISTRATION = "Unable to register the broker because the RPC got timed out before it could be sent"
LOST_VOTERS_AFTER = 8
LOST_VOTERS_REASON = "lost the quorum's voters in a start-up re-election (a Kafka 3.9 bug): started again"

# The broker's forwarding channel (what carries AllocateProducerIds and the clients' CreateTopics to the
# controller) can start so that it never learns the active controller, while the broker's other channels
# do: the broker says "started", but an idempotent producer never gets an id and no topic can be created
# through it. Seen twice in about 190 starts; in every other start the channel learned the controller
# before the broker said "started". Kafka 3.9 names the channel in that line; 4.x does not, and is not
# checked.
_FORWARDING_STARTED = "-to-controller-forwarding-channel-manager]: Starting"
_FORWARDING_KNOWS = "-to-controller-forwarding-channel-manager]: Recorded new"
_HEARTBEAT_KNOWS = "-to-controller-heartbeat-channel-manager]: Recorded new"
DEAF_FORWARDING_AFTER_S = 5.0
DEAF_FORWARDING_REASON = ("its forwarding channel never learned the active controller (a Kafka 3.9 race): "
                          "started again")
_STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def lost_voters(log: str) -> bool:
    """The start-up log shows the lost voter set (see ``_TRUNCATED``)."""
    cut = log.rfind(_TRUNCATED)
    return cut >= 0 and log.count(_UNSENT_REGISTRATION, cut) >= LOST_VOTERS_AFTER


def deaf_forwarding(log: str) -> bool:
    """The broker's other channels learned the controller, its forwarding channel did not (yet)."""
    return _FORWARDING_STARTED in log and _HEARTBEAT_KNOWS in log and _FORWARDING_KNOWS not in log


def stuck_reason(log: str, ready_marker: str, now: datetime | None = None) -> str:
    """Why this start can only go on in a new JVM, or "" while it may still go on by itself.

    A deaf forwarding channel counts once the broker said it started at least ``DEAF_FORWARDING_AFTER_S``
    ago (by the log's own clock), so a channel that is merely late is not taken for a stuck one.
    """
    if lost_voters(log):
        return LOST_VOTERS_REASON
    at = log.find(ready_marker)
    if at < 0 or not deaf_forwarding(log):
        return ""
    stamp = _STAMP.match(log, log.rfind("\n", 0, at) + 1)
    started = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f") if stamp else None
    late = started is None or ((now or datetime.now()) - started).total_seconds() >= DEAF_FORWARDING_AFTER_S
    return DEAF_FORWARDING_REASON if late else ""
