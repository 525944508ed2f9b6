"""A node's state change as the run's timeline records it: typed (its state, the one before, its end cause, who
caused it) and in words; and which changes are something done to the node (a kill, stop, pause, start or
resume, or its crash), the ones the chart marks."""

from __future__ import annotations

from dataclasses import replace

from kafkalab.cluster.node import EndCause, Node, NodeState
from kafkalab.labs.actors import Actors
from kafkalab.labs.events import NodeEvent, by_whom

# a node in one of these states was ended by a fault, not by the run's teardown that later shows it stopped
DOWN_BY_FAULT = (NodeState.KILLED, NodeState.FAILED)
_DOWN = (NodeState.STOPPED, NodeState.KILLED, NodeState.FAILED)


def node_event(node: Node, state: NodeState, reason: str, before: NodeState | None, actors: Actors) -> NodeEvent:
    """``node``'s change from ``before`` to ``state`` (with the node's ``reason``), its actor from ``actors``."""
    actor = actors.actor_of(node.name, state, node.cause)
    event = NodeEvent(source=node.name, state=state, was=before, actor=actor, cause=node.cause)
    did = f" {actor.words}" if actor is not None and action_of(event) else ""
    detail = f"{node.name} {state}{did}: {reason}"
    if state in (NodeState.KILLED, NodeState.PAUSED) and node.silence_note:  # the mode's mechanism, named
        detail += f"; {node.silence_note}"
    if state == NodeState.STOPPED and before in DOWN_BY_FAULT:  # ended earlier: the teardown only tidies
        detail = f"{node.name} stopped: it was already down ({before} earlier); {reason}"
    return replace(event, detail=detail)


def action_of(e: NodeEvent) -> str:
    """What was done to the node in this change ('kill', 'stop', 'pause', 'start', 'resume'), 'crash' when it
    failed on its own; '' for a change that follows on its own (a stop ending, the node ready) and for kafkalab
    ending the run's cluster (no fault: it is tidied away)."""
    if e.state == NodeState.FAILED:
        return "crash"
    if e.state == NodeState.KILLED:
        return "kill" if e.cause == EndCause.KILLED else ""  # not a stop's SIGKILL after its bound
    if e.was == NodeState.PAUSED and e.state in (NodeState.RUNNING, NodeState.STARTING):
        return "resume"
    if e.state in (NodeState.STARTING, NodeState.RUNNING):  # not a node's first state: the cluster's start
        return "start" if e.was in _DOWN else ""
    if e.state == NodeState.STOPPED:  # at once, without stopping first: a start cancelled
        return "stop" if e.was not in (NodeState.STOPPING, *_DOWN) and e.cause != EndCause.ENDED else ""
    return {NodeState.STOPPING: "stop", NodeState.PAUSED: "pause"}.get(e.state, "")


def node_label(e: NodeEvent) -> str:
    """The chart's words for a node acted on: 'kill broker-2' (the lab's), 'kill broker-3 by hand', 'broker-2
    failed'."""
    action = action_of(e)
    if action == "crash":
        return f"{e.source} failed"
    return f"{action} {e.source}{by_whom(e.actor)}"
