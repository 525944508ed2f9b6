"""Each failover said once, as the cluster watch sees the new leader: the run's message, which the console's top
bar and a headless run show ("leader of test-topic/0: broker 2 -> 3 in 2.4 s (killed at 23.0 s)"), in the words
of :mod:`kafkalab.labs.failover`, as Results and the verdict say it later."""

from __future__ import annotations

from collections.abc import Callable, Collection

from kafkalab.labs.events import Event, LeaderChange
from kafkalab.labs.failover import Failover, Leadership, leadership
from kafkalab.labs.timeline import Timeline


class FailoverNews:
    """A timeline listener: on a new leader of the lab's topics, the failovers not said yet, said."""

    def __init__(self, timeline: Timeline, topics: Collection[str], say: Callable[[str], None]) -> None:
        self.timeline = timeline
        self.topics = topics
        self.say = say
        self.said: set[Failover] = set()

    def __call__(self, event: Event) -> None:
        if not isinstance(event, LeaderChange) or event.leader is None or event.topic not in self.topics:
            return
        new = tuple(f for f in leadership(self.timeline.events(), self.topics).failovers if f not in self.said)
        if new:
            self.said.update(new)
            self.say("; ".join(Leadership(failovers=new).lines()))


def narrated(timeline: Timeline, topics: Collection[str], say: Callable[[str], None]) -> Timeline:
    """``timeline``, its failovers of ``topics`` said through ``say`` as they are seen (after the listeners it
    has: a leader change is told before the failover it completes)."""
    timeline.add_listener(FailoverNews(timeline, topics, say))
    return timeline
