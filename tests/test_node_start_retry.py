"""A ZooKeeper-mode broker whose session was lost while it started is started again, a few times at most.

On a busy machine ZooKeeper can answer a starting broker too late: the broker's session expires before its
start is done and Kafka exits "due to fatal exception during startup". Such a start cannot be forced on a real
cluster, so a stand-in process writes what that broker logs (the lines are copied from a real log); the claim
here is kafkalab's reaction to it, not Kafka's behaviour.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psutil

from kafkalab.cluster.node import SESSION_LOST_RETRIES, EndCause, Node, NodeState
from kafkalab.cluster.process import LocalBackend
from tests.test_node_stuck_start import tick_for

# Each launch appends its log and is counted beside it; the first FAILS launches lose their session.
STAND_IN = """
import sys, time, pathlib, datetime
node_dir, fails = pathlib.Path(sys.argv[1]), int(sys.argv[2])
count = node_dir / "launches"
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
with open(node_dir / "logs" / "server.log", "a") as fh:
    if n <= fails:
        fh.write(f"[{stamp}] ERROR Exiting Kafka due to fatal exception during startup. (kafka.Kafka$)\\n")
        fh.write("org.apache.zookeeper.KeeperException$SessionExpiredException: KeeperErrorCode = Session "
                 "expired for /consumers\\n")
        fh.flush()
        sys.exit(1)
    fh.write(f"[{stamp}] INFO [KafkaServer id=1] started (kafka.server.KafkaServer)\\n")
time.sleep(120)
"""


def stand_in_broker(tmp_path: Path, fails: int) -> Node:
    node_dir = tmp_path / "broker-1"
    (node_dir / "logs").mkdir(parents=True)
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return Node("broker-1", [sys.executable, str(script), str(node_dir), str(fails)], node_dir, 19092,
                LocalBackend(), broker_id=1, session_timeout_s=0.0)


def test_a_broker_that_lost_its_session_while_starting_is_started_again(tmp_path: Path) -> None:
    node = stand_in_broker(tmp_path, fails=1)
    node.start()
    try:
        pids, reasons = tick_for(node, 30, until=NodeState.RUNNING)
        assert node.state == NodeState.RUNNING, node.reason
        assert any("session was lost while it started (a busy machine): retrying" in r for r in reasons), reasons
        assert (tmp_path / "broker-1" / "launches").read_text() == "2"
        assert len(pids) == 2 and not psutil.pid_exists(pids[0]), pids
    finally:
        node.kill()
        tick_for(node, 5)


def test_a_broker_that_loses_its_session_at_every_start_fails_after_a_few_tries(tmp_path: Path) -> None:
    node = stand_in_broker(tmp_path, fails=99)
    node.start()
    try:
        tick_for(node, 30, until=NodeState.FAILED)
        assert node.state == NodeState.FAILED and node.cause == EndCause.CRASHED, node.reason
        assert node.reason.startswith("KeeperException$SessionExpiredException: KeeperErrorCode = Session expired")
        assert (tmp_path / "broker-1" / "launches").read_text() == str(SESSION_LOST_RETRIES)
    finally:
        node.kill()
        tick_for(node, 5)
