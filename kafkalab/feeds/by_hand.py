"""What a person does to a lab's cluster (a console key, `kafkalab broker` or `kafkalab net` in another terminal),
recorded as theirs: the current run's timeline, its chart and its failover lines then say "by hand". And the
console's keys that do what a `kafkalab` command does (add partitions, abort a transaction), through the same
functions."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from kafkalab.admin import Admin
from kafkalab.admin.transactions import (
    READ_PAST,
    OpenTransaction,
    abort_transactions,
    aborted_line,
    helper_distribution,
    open_transactions,
)
from kafkalab.cluster import NodeAction
from kafkalab.cluster.control_socket import Attribution
from kafkalab.errors import KafkalabError
from kafkalab.feeds.source import HasBootstrap
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


def _bootstrap(cluster: HasBootstrap | None) -> str:
    if cluster is None:
        raise KafkalabError("no cluster yet: a lab's cluster starts with its run (press g)")
    return cluster.bootstrap


def add_partitions(cluster: HasBootstrap | None, topic: str, total: int) -> str:
    """``topic`` grown to ``total`` partitions, as `kafkalab topic alter --partitions` does; says what changed."""
    return f"{topic}: {Admin(_bootstrap(cluster), timeout_s=5).add_partitions(topic, total)}"


def open_transactions_now(cluster: HasBootstrap | None) -> list[OpenTransaction]:
    """Every transaction open on the cluster's partitions (an abort's choices), as `kafkalab txn` finds them."""
    return open_transactions(helper_distribution(), _bootstrap(cluster))


def abort_by_hand(cluster: HasBootstrap | None, chosen: OpenTransaction) -> str:
    """The chosen open transaction aborted, as `kafkalab txn abort --topic --partition --start-offset` does."""
    aborted = abort_transactions(helper_distribution(), _bootstrap(cluster), chosen.topic, chosen.partition,
                                 chosen.start_offset)
    return "; ".join(aborted_line(t) for t in aborted) + f": {READ_PAST}"
