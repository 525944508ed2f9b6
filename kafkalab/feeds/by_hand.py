"""What a person does to a lab's cluster (a console key, `kafkalab broker` or `kafkalab net` in another terminal),
recorded as theirs: the current run's timeline, its chart and its failover lines then say "by hand"."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from kafkalab.cluster import NodeAction
from kafkalab.cluster.control_socket import Attribution
from kafkalab.errors import KafkalabError
from kafkalab.labs.events import Actor
from kafkalab.labs.session import LabSession


def by_hand(session: LabSession) -> Attribution:
    """Wraps a person's action on a node (its name) or on the network: the current run's changes are theirs."""

    def acting(subject: str, action: NodeAction | None) -> AbstractContextManager[object]:
        run = session.current
        return nullcontext() if run is None else run.timeline.actors.acting(subject, Actor.ATTENDEE, action)

    return acting


def act_by_hand(session: LabSession, node: str, action: NodeAction) -> None:
    """``action`` done to ``node`` of the session's cluster, by a person."""
    cluster = session.cluster
    if cluster is None:
        raise KafkalabError("no cluster yet: the lab's cluster starts with the run (press g)")
    target = cluster.node(node)
    with by_hand(session)(target.name, action):
        action.apply(target)
