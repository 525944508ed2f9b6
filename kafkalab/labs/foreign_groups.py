"""What the brokers say of the groups of a run's foreign consumers, told to each of them.

A foreign consumer's assignment, commits and lag are inside its own process; the brokers know its group's, so a
thread asks the group helper (an admin client in a process of its own) once a second and hands each foreign
consumer its group's partitions of the lab's topic. Several foreign consumers in one group share what the group
holds: the members are not told apart (their client ids are their own business).
"""

from __future__ import annotations

import threading
from pathlib import Path

from kafkalab.admin.group_helper import GroupHelper
from kafkalab.admin.groups import GroupDescription
from kafkalab.clients.foreign import ForeignConsumer, GroupFacts
from kafkalab.errors import KafkalabError

POLL_S = 1.0
ASK_WAIT_S = 5.0


def group_facts(desc: GroupDescription, topic: str) -> GroupFacts:
    held = sorted({p for m in desc.members for t, p in m.partitions if t == topic})
    committed = {p.partition: p.committed for p in desc.partitions if p.topic == topic and p.committed is not None}
    lag = {p.partition: lag for p in desc.partitions if p.topic == topic and (lag := p.lag) is not None}
    return GroupFacts(desc.state, tuple(held), committed, lag)


class ForeignGroupWatch:
    """Started with the first foreign consumer it is given; :meth:`close` ends its thread and helper process."""

    def __init__(self, bootstrap: str, topic: str, log_path: Path) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self._helper = GroupHelper(log_path)
        self._consumers: list[ForeignConsumer] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, consumer: ForeignConsumer) -> None:
        self._consumers.append(consumer)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="kafkalab-foreign-groups", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                described = self._helper.describe_all(self.bootstrap, self, ASK_WAIT_S, ASK_WAIT_S)
            except KafkalabError:
                described = ()  # brokers away: the last facts stand until they answer again
            by_group = {d.group_id: d for d in described}
            for consumer in list(self._consumers):
                if (desc := by_group.get(consumer.config.group_id)) is not None:
                    consumer.observe_group(group_facts(desc, self.topic))
            self._stop.wait(POLL_S)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(ASK_WAIT_S + 1)
        self._helper.close()
