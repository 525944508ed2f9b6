"""A KRaft broker that lost the quorum's voter set at start-up is started again, and only then.

Kafka 3.9's broker drops the voters record when its metadata log is truncated in a start-up re-election
and never reads it again: it retries its registration with no controller to send it to, for good. The
race needs a contested first election and cannot be forced on a real quorum, so a stand-in process
writes what such a broker logs; the claim here is kafkalab's reaction to it, not Kafka's behaviour.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psutil

from kafkalab.cluster.node import (
    _TRUNCATED,
    _UNSENT_REGISTRATION,
    LOST_VOTERS_AFTER,
    LOST_VOTERS_REASON,
    Node,
    NodeState,
)
from kafkalab.cluster.process import LocalBackend

READY = "[KafkaRaftServer nodeId=1] Kafka Server started"

# Each launch appends its log; launches are counted in a file beside it. The first launch logs the
# lost-voters symptom (or, with STUCK_ONLY, registration retries without a truncation) and then waits.
STAND_IN = """
import sys, time, pathlib
node_dir, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
count = node_dir / "launches"
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
log = node_dir / "logs" / "server.log"
with open(log, "a") as fh:
    if n == 1:
        if mode == "lost":
            fh.write("INFO [RaftManager id=1] TRUNCATED from Fetch response from leader 102\\n")
        for _ in range(RETRIES):
            fh.write("INFO [BrokerLifecycleManager id=1] UNSENT. (kafka.server.BrokerLifecycleManager)\\n")
    else:
        fh.write("INFO READY (kafka.server.KafkaRaftServer)\\n")
time.sleep(120)
""".replace("TRUNCATED", _TRUNCATED).replace("UNSENT", _UNSENT_REGISTRATION).replace("READY", READY).replace(
    "RETRIES", str(LOST_VOTERS_AFTER + 2))


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


def test_a_broker_that_lost_the_voters_is_started_again_and_comes_up(tmp_path: Path) -> None:
    node = stand_in_broker(tmp_path, "lost")
    node.start()
    try:
        pids, reasons = tick_for(node, 30, until=NodeState.RUNNING)
        assert node.state == NodeState.RUNNING, node.reason
        assert f"{LOST_VOTERS_REASON}: launched again" in reasons, reasons  # the pane says why it restarted
        assert (tmp_path / "broker-1" / "launches").read_text() == "2"
        assert len(pids) == 2 and not psutil.pid_exists(pids[0]), pids
    finally:
        node.kill()
        tick_for(node, 5)


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
