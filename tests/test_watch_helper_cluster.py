"""A lab run's cluster watch on a real cluster, its snapshots asked in a helper process: a SIGSEGV there costs the
watch one poll (seen as an unreachable cluster, as librdkafka's crash would be), the next poll starts a new helper,
a later leader change is still on the timeline, and closing leaves no helper behind."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.cluster import Cluster, NodeState
from kafkalab.labs.events import EventKind, LeaderChange
from kafkalab.labs.run_deps import HelperWatchSnapshots
from kafkalab.labs.timeline import ClusterWatch, Timeline
from tests.helpers import process_gone, wait_until

pytestmark = pytest.mark.cluster


def test_a_sigsegv_in_the_watchs_helper_costs_one_poll_and_a_later_leader_change_is_seen(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    topic = topic_factory(partitions=1)
    snapshots = HelperWatchSnapshots(cluster.bootstrap, tmp_path)
    taken: list[ClusterSnapshot] = []

    def watched() -> ClusterSnapshot:
        taken.append(snapshots.snapshot())
        return taken[-1]

    timeline = Timeline("watch-helper")
    watch = ClusterWatch(timeline, watched, lambda: None)

    def settled() -> PartitionState | None:
        p = watch.last.partition(topic, 0) if watch.last is not None else None
        return p if p is not None and p.leader is not None and len(p.isr) == 3 else None

    pids: list[int] = []
    stopped: int | None = None
    try:
        watch.start()
        first = wait_until(settled, 60, what=f"{topic}/0 led, 3 in sync, in the watch's snapshot")
        assert first.end_offset is None, "the watch asks no end offsets: offsets=False did not reach the helper"
        crashed = snapshots.helper.pid
        assert crashed is not None
        pids.append(crashed)
        os.kill(crashed, signal.SIGSEGV)  # as librdkafka's crash ends its process
        dead = wait_until(lambda: next((s for s in taken if s.helper_failed), None), 30, what="a poll told the death")
        assert not dead.reachable and "died of SIGSEGV" in dead.error
        assert watch.last is not dead, "the helper's death replaced the last snapshot the watch saw"

        assert first.leader is not None
        stopped = first.leader
        cluster.node(stopped).stop()  # a controlled shutdown moves its leaderships at once
        change = wait_until(lambda: [e for e in timeline.events(EventKind.LEADER_CHANGE)
                                     if isinstance(e, LeaderChange) and e.topic == topic], 60,
                            what="the leader change after the helper's death")
        assert change[0].previous == stopped and change[0].leader not in (None, stopped)
        assert change[0].ts > dead.taken_at
        restarted = snapshots.helper.pid
        assert restarted is not None and restarted != crashed, "the next poll did not start a new helper"
        pids.append(restarted)
    finally:
        watch.stop()
        snapshots.close()
        if stopped is not None:
            cluster.node(stopped).start()
            cluster.wait_state(stopped, NodeState.RUNNING, timeout=90)
    assert snapshots.helper.pid is None and len(pids) == 2
    assert all(process_gone(pid) for pid in pids), "a helper outlived the watch's close"
