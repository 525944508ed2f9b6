"""A node that fails to start is reported by the line of its log that names the cause, not by Kafka's "Exiting
Kafka due to fatal exception" that comes before it.

The logs in tests/recorded/broker-start-failure are server.log files of real Kafka 3.9.2 brokers (ZooKeeper
mode) that kafkalab started with ``offsets.topic.replication.factor=one`` (bad-value.log, which kafkalab now
refuses before a start) and ``inter.broker.listener.name=FOO`` (bad-listener.log: Kafka's ConfigDef takes that
value and KafkaConfig refuses it later, so a node can still fail this way). A stand-in process writes one and
exits as that broker did; the claim is kafkalab's reading of it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from kafkalab.cluster.cause_line import cause_line
from kafkalab.cluster.node import EndCause, Node, NodeState, wait_ready
from kafkalab.cluster.process import LocalBackend
from kafkalab.errors import KafkalabError
from tests.test_node_stuck_start import tick_for

RECORDED = Path(__file__).parent / "recorded" / "broker-start-failure"
BAD_VALUE = ("ConfigException: Invalid value one for configuration offsets.topic.replication.factor: "
             "Not a number of type SHORT")
BAD_LISTENER = ("ConfigException: Listener with name FOO defined in inter.broker.listener.name not found in "
                "listener.security.protocol.map.")
STAND_IN = """
import pathlib, shutil, sys
shutil.copyfile(sys.argv[1], pathlib.Path(sys.argv[2]) / "logs" / "server.log")
sys.exit(1)
"""


@pytest.mark.parametrize(("log", "cause"), [("bad-value.log", BAD_VALUE), ("bad-listener.log", BAD_LISTENER)])
def test_a_broker_that_fails_to_start_is_reported_by_its_cause(tmp_path: Path, log: str, cause: str) -> None:
    node_dir = tmp_path / "broker-1"
    (node_dir / "logs").mkdir(parents=True)
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    node = Node("broker-1", [sys.executable, str(script), str(RECORDED / log), str(node_dir)], node_dir, 19092,
                LocalBackend(), broker_id=1, session_timeout_s=0.0)
    node.start()
    try:
        tick_for(node, 30, until=NodeState.FAILED)
        assert (node.state, node.cause) == (NodeState.FAILED, EndCause.CRASHED), node.reason
        assert node.info().reason == cause  # the node's pane
        with pytest.raises(KafkalabError) as err:  # a run's error, which its grade card quotes
            wait_ready([node], time.monotonic() + 5)
        assert str(err.value).startswith(f"broker-1 failed to start: {cause} (log: ")
    finally:
        node.kill()
        tick_for(node, 5)


def test_the_cause_is_the_exception_under_the_last_problem_line() -> None:
    log = (RECORDED / "bad-value.log").read_text()
    assert cause_line(log) == BAD_VALUE
    assert cause_line(log + "[2026-11-28 03:22:11,000] INFO shutting down (kafka.Kafka$)\n") == BAD_VALUE
    plain = "[2026-11-28 03:22:10,295] ERROR Shutdown broker because all log dirs in /x have failed (LogManager)"
    assert cause_line(log + plain + "\n") == plain  # a problem logged without an exception is its own cause
    assert cause_line("[2026-11-28 03:22:08,831] INFO Registered kafka (kafka.utils.Log4jControllerRegistration$)\n"
                      "org.apache.kafka.common.KafkaException: not under a problem line\n") == ""
