"""A KRaft broker whose start cannot go on by itself is started again, and only then.

Kafka 3.9's broker drops the voters record when its metadata log is truncated in a start-up re-election
and never reads it again: it retries its registration with no controller to send it to, for good. Or its
forwarding channel never learns the active controller while the rest of the broker does: it says
"started", but no idempotent producer gets an id through it. Both races need a contested first election
and cannot be forced on a real quorum, so a stand-in process writes what such a broker logs (the lines
are copied from real logs); the claim here is kafkalab's reaction to it, not Kafka's behaviour.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import psutil
import pytest

from kafkalab.cluster.node import Node, NodeState
from kafkalab.cluster.process import LocalBackend
from kafkalab.cluster.stuck_start import (
    _TRUNCATED,
    _UNSENT_REGISTRATION,
    DEAF_FORWARDING_AFTER_S,
    DEAF_FORWARDING_REASON,
    LOST_VOTERS_AFTER,
    LOST_VOTERS_REASON,
    stuck_reason,
)

READY = "[KafkaRaftServer nodeId=1] Kafka Server started"

FORWARDING = "[broker-1-to-controller-forwarding-channel-manager]: "
HEARTBEAT = "[broker-1-to-controller-heartbeat-channel-manager]: "
KNOWS = "Recorded new KRaft controller, from now on will use node 127.0.0.1:60801 (id: 102 rack: null)"

# Each launch appends its log; launches are counted in a file beside it. The first launch logs the
# lost-voters symptom ("lost"), registration retries without a truncation ("stuck"), or a start whose
# forwarding channel learned no controller ("deaf") and then waits; a later launch starts normally.
STAND_IN = """
import sys, time, pathlib, datetime
node_dir, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
count = node_dir / "launches"
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
log = node_dir / "logs" / "server.log"
def line(text):
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    fh.write(f"[{stamp}] INFO {text}\\n")
with open(log, "a") as fh:
    line("FORWARDING" + "Starting (kafka.server.NodeToControllerRequestThread)")
    if n == 1 and mode in ("lost", "stuck"):
        if mode == "lost":
            line("[RaftManager id=1] TRUNCATED from Fetch response from leader 102")
        for _ in range(RETRIES):
            line("[BrokerLifecycleManager id=1] UNSENT. (kafka.server.BrokerLifecycleManager)")
    else:
        line("HEARTBEAT" + "KNOWS")
        if not (n == 1 and mode == "deaf"):
            line("FORWARDING" + "KNOWS")
        line("READY (kafka.server.KafkaRaftServer)")
time.sleep(120)
""".replace("TRUNCATED", _TRUNCATED).replace("UNSENT", _UNSENT_REGISTRATION).replace("READY", READY).replace(
    "RETRIES", str(LOST_VOTERS_AFTER + 2)).replace("FORWARDING", FORWARDING).replace(
    "HEARTBEAT", HEARTBEAT).replace("KNOWS", KNOWS)


def stand_in_broker(tmp_path: Path, mode: str) -> Node:
    node_dir = tmp_path / "broker-1"
    (node_dir / "logs").mkdir(parents=True)
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return Node("broker-1", [sys.executable, str(script), str(node_dir), mode], node_dir, 19092, LocalBackend(),
                broker_id=1, kraft=True, session_timeout_s=0.0)


def tick_for(node: Node, seconds: float, until: NodeState | None = None) -> tuple[list[int], set[str]]:
    """Tick as the cluster's monitor does; the pids the node ran and the reasons it gave."""
    pids: list[int] = []
    reasons: set[str] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and node.state != until:
        node.tick()
        reasons.add(node.reason)
        if node.pid is not None and node.pid not in pids:
            pids.append(node.pid)
        time.sleep(0.1)
    return pids, reasons


@pytest.mark.parametrize(("mode", "reason"), [("lost", LOST_VOTERS_REASON), ("deaf", DEAF_FORWARDING_REASON)])
def test_a_stuck_broker_is_started_again_and_comes_up(tmp_path: Path, mode: str, reason: str) -> None:
    node = stand_in_broker(tmp_path, mode)
    node.start()
    try:
        pids, reasons = tick_for(node, 30, until=NodeState.RUNNING)
        assert node.state == NodeState.RUNNING, node.reason
        assert f"{reason}: launched again" in reasons, reasons  # the pane says why it restarted
        assert (tmp_path / "broker-1" / "launches").read_text() == "2"
        assert len(pids) == 2 and not psutil.pid_exists(pids[0]), pids
    finally:
        node.kill()
        tick_for(node, 5)


def test_a_broker_whose_channels_all_learned_the_controller_is_ready_at_once(tmp_path: Path) -> None:
    node = stand_in_broker(tmp_path, "healthy")
    node.start()
    try:
        tick_for(node, 10, until=NodeState.RUNNING)
        assert node.state == NodeState.RUNNING, node.reason
        assert (tmp_path / "broker-1" / "launches").read_text() == "1"
    finally:
        node.kill()
        tick_for(node, 5)


def test_a_deaf_forwarding_channel_gets_time_before_it_counts() -> None:
    """A channel merely late (the broker said "started" a moment ago) is not taken for a stuck one."""
    log = (f"[2026-11-23 22:17:42,947] INFO {FORWARDING}Starting (kafka.server.NodeToControllerRequestThread)\n"
           f"[2026-11-23 22:17:45,807] INFO {HEARTBEAT}{KNOWS} (kafka.server.NodeToControllerRequestThread)\n"
           f"[2026-11-23 22:17:46,504] INFO {READY} (kafka.server.KafkaRaftServer)\n")
    said_started = datetime(2026, 11, 23, 22, 17, 46, 504000)
    assert stuck_reason(log, READY, said_started + timedelta(seconds=1)) == ""
    later = said_started + timedelta(seconds=DEAF_FORWARDING_AFTER_S + 0.1)
    assert stuck_reason(log, READY, later) == DEAF_FORWARDING_REASON
    learned = log.replace(READY, f"x\n[2026-11-23 22:17:46,000] INFO {FORWARDING}{KNOWS}\n{READY}")
    assert stuck_reason(learned, READY, later) == ""


def test_registration_retries_without_a_truncation_are_waited_out(tmp_path: Path) -> None:
    """A quorum still electing its first leader looks the same minus the truncation: no restart then."""
    node = stand_in_broker(tmp_path, "stuck")
    node.start()
    try:
        tick_for(node, 4)
        assert node.state == NodeState.STARTING
        assert (tmp_path / "broker-1" / "launches").read_text() == "1"
    finally:
        node.kill()
        tick_for(node, 5)
