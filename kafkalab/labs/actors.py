"""Who did what to a node or the network: said by the code that acts, read by the run as the change is recorded.

A node's state changes in the thread that acted on it (a kill, a stop's SIGTERM, a start, a pause), and
then on its own in the cluster's monitor thread (a stop ending, a node ready, a restart's start, a crash).
So the code that acts names itself around the call (:meth:`Actors.acting`): a lab's fault, a console key or
`kafkalab broker` / `kafkalab net` in another terminal, the audit. The changes it makes there are that actor's;
a change nobody claimed is the end of what the node's last action began (a stop ending, the node ready), unless
its end cause says who (a crash: nobody; ended by kafkalab, or stopped again after the audit: kafkalab). Any
other change nobody claimed has no actor: it is never put down to someone who did not do it.

Why not the node's end cause alone? It says why a node is down, not who started it again: the audit's
restart of broker-3 and a person's `start` look the same to the node.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from kafkalab.cluster.node import EndCause, NodeAction, NodeState
from kafkalab.labs.events import Actor

# the end causes that say who ended a node whoever asked: kafkalab's teardown, the audit putting a node back down
_CAUSE_ACTOR: dict[EndCause, Actor | None] = {EndCause.CRASHED: None, EndCause.ENDED: Actor.KAFKALAB,
                                              EndCause.AUDIT: Actor.KAFKALAB}
# actions whose start may come later, from the monitor: a restart of a running node, a start while it stops
_LATER_START = (NodeAction.START, NodeAction.RESTART)
_ON_THE_WAY_TO_START = (NodeState.STOPPING, NodeState.STOPPED)  # a restart's stop, before the start it owes
_READY = (NodeState.STARTING, NodeState.RUNNING)


class Actors:
    """Thread-safe: who acts now on each node (per acting thread), and who acted last."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now: dict[tuple[int, str], Actor] = {}
        self._last: dict[str, Actor | None] = {}
        self._state: dict[str, NodeState | None] = {}
        self._start_owed: dict[str, Actor] = {}  # a start asked for that the node makes later

    @contextmanager
    def acting(self, subject: str, actor: Actor, action: NodeAction | None = None) -> Iterator[None]:
        """What ``subject`` (a node's name, or the network: :data:`~kafkalab.cluster.control_socket.NETWORK`) does
        during the block is ``actor``'s; a start that ``action`` asks for and the node makes later (after a
        restart's stop) is theirs too."""
        key = (threading.get_ident(), subject)
        with self._lock:
            self._now[key] = actor
            if action in _LATER_START:
                self._start_owed[subject] = actor
        try:
            yield
        finally:
            with self._lock:
                self._now.pop(key, None)

    def actor_of(self, subject: str, state: NodeState | None = None, cause: EndCause | None = None) -> Actor | None:
        """Who caused ``subject``'s change, now, to ``state`` (with the node's end ``cause``); remembered as its
        last actor, whom the changes that follow on their own are put down to."""
        with self._lock:
            actor = self._now.get((threading.get_ident(), subject))
            before, self._state[subject] = self._state.get(subject), state
            owed = self._start_owed.pop(subject, None)
            if state == NodeState.STARTING:
                actor = actor or owed
            elif state in _ON_THE_WAY_TO_START and owed is not None:  # a restart's stop: its start is still owed
                self._start_owed[subject] = owed
            if actor is None and cause in _CAUSE_ACTOR:
                actor = _CAUSE_ACTOR[cause]
            elif actor is None and (before == NodeState.STOPPING or (before, state) == _READY):
                actor = self._last.get(subject)  # the end of what the last action began
            self._last[subject] = actor
            return actor
