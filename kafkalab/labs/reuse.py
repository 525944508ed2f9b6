"""Whether the cluster a console kept after a run can carry the next run, and cleaning it for that run.

A kept cluster is reused when it was built from the same plan (brokers, mode, controllers, settings) and
every node runs; the lab's topics are then deleted and recreated and its consumer groups deleted, so the
run's analysis reads only what this run produced. A lab whose lesson depends on a cluster that has not yet
grown (``[cluster] stopped = [...]``: the brokers missing when ``__consumer_offsets`` and the topics are
created) always takes a fresh one: on a reused cluster ``__consumer_offsets`` exists already.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kafkalab.admin import Admin
from kafkalab.cluster import Cluster, ClusterSpec, NodeState
from kafkalab.errors import KafkalabError
from kafkalab.labs.model import Lab

TOPIC_GONE_TIMEOUT_S = 60.0
GROUP_EMPTY_TIMEOUT_S = 60.0  # longer than the consumers' default session timeout (45 s)
GROUP_WAITS = {  # a group deletion's refusal that passes -> what the run waits for
    "not empty": "the last run's members to time out",
    "Timed out": "the group coordinator",
    "COORDINATOR": "the group coordinator",
}


def why_fresh(kept: Cluster | None, lab: Lab, wanted: ClusterSpec) -> str:
    """Why the next run of ``lab`` needs a fresh cluster rather than ``kept``; "" when ``kept`` fits."""
    if kept is None:
        return "no cluster is running"
    if lab.cluster.stopped:
        return f"lab {lab.id} starts before brokers {', '.join(map(str, lab.cluster.stopped))} join"
    have = kept.spec
    for what, old, new in (("brokers", have.brokers, wanted.brokers), ("mode", have.mode, wanted.mode),
                           ("controllers", have.controllers, wanted.controllers),
                           ("combined", have.combined, wanted.combined),
                           ("network-fault proxies", have.net_proxies, wanted.net_proxies),
                           ("broker settings", have.overrides, wanted.overrides),
                           ("per-broker settings", have.broker_overrides, wanted.broker_overrides)):
        if old != new:
            return f"the lab's {what} differ from the running cluster's"
    for node in kept.nodes:
        if node.state != NodeState.RUNNING:
            return f"{node.name} is {'down' if node.state in (NodeState.STOPPED, NodeState.KILLED) else node.state}"
    return ""


def clean_for(lab: Lab, admin: Admin, sleep: Callable[[float], None],
              say: Callable[[str], None] = lambda _message: None) -> None:
    """The lab's topics deleted (recreated by the run as it would on a fresh cluster) and its groups deleted."""
    names = {t.name for t in lab.topics} | {lab.topic}
    present = sorted(names & set(admin.topics()))
    for name in present:
        admin.delete_topic(name)
    deadline = time.monotonic() + TOPIC_GONE_TIMEOUT_S
    while present and set(present) & set(admin.topics()):  # deletion is asynchronous: wait until it is done
        if time.monotonic() > deadline:
            raise KafkalabError(f"topics {', '.join(present)} were not deleted after {TOPIC_GONE_TIMEOUT_S:.0f}s: "
                                "press n (reset) for a fresh cluster")
        sleep(0.2)
    delete_groups_when_empty(sorted(lab.groups), admin, sleep, say)


def delete_groups_when_empty(groups: list[str], admin: Admin, sleep: Callable[[float], None],
                             say: Callable[[str], None]) -> None:
    """Delete the groups once Kafka can: a member the last run left behind (a consumer ended without leaving)
    keeps its group "not empty" until its session times out, and a run stopped while `__consumer_offsets`
    was being created leaves no coordinator to answer for a while (the request times out). Wait for both."""
    deadline = time.monotonic() + GROUP_EMPTY_TIMEOUT_S
    told = ""
    while True:
        try:
            admin.delete_groups(groups)
            return
        except KafkalabError as exc:
            why = next((w for k, w in GROUP_WAITS.items() if k in str(exc)), "")
            if not why or time.monotonic() > deadline:
                raise
        if why != told:
            told = why
            say(f"group {', '.join(groups)}: waiting for {why} (up to {GROUP_EMPTY_TIMEOUT_S:.0f}s) to delete it")
        sleep(1.0)


def create_after_delete(name: str, create: Callable[[str], None], sleep: Callable[[float], None]) -> None:
    """Create a topic just deleted: Kafka refuses it as "marked for deletion" until the deletion is done
    (ZooKeeper mode), though the metadata no longer lists it; try again until then."""
    deadline = time.monotonic() + TOPIC_GONE_TIMEOUT_S
    while True:
        try:
            create(name)
            return
        except KafkalabError as exc:
            if "marked for deletion" not in str(exc) or time.monotonic() > deadline:
                raise
        sleep(0.5)
