"""A node's end cause: why it is down, typed beside the reason in words, and the state it shows decided from it.

The process is a stand-in that exits when told (no JVM): the claim is kafkalab's state machine, not Kafka's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kafkalab.cluster import EndCause, NodeInfo, NodeKind, NodeState
from kafkalab.cluster.node import Node
from kafkalab.cluster.remote import node_info_of
from kafkalab.labs.recording import node_of, node_row

READY = "[KafkaServer id=1] started"


class StandIn:
    """A node process: ``exit_with`` is what it exits with once signalled (SIGKILL: at once)."""

    pid = 4242

    def __init__(self) -> None:
        self.code: int | None = None
        self.exit_on_term: int | None = 143

    def poll(self) -> int | None:
        return self.code

    def terminate(self) -> None:
        self.code = self.exit_on_term

    def kill(self) -> None:
        self.code = -9

    def pause(self) -> None: ...
    def resume(self) -> None: ...

    def usage(self) -> tuple[float, int]:
        return 0.0, 0


class StandInBackend:
    name = "stand-in"

    def __init__(self) -> None:
        self.launched: list[StandIn] = []

    def launch(self, node_name: str, argv: list[str], stdout_path: Path) -> StandIn:
        log = stdout_path.parent / "server.log"
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"[2024-01-01 00:00:00,000] INFO {READY} (kafka.server.KafkaServer)\n")
        self.launched.append(StandIn())
        return self.launched[-1]

    def reap(self, state_dir: Path) -> list[str]:
        return []

    def net_proxies_refused(self) -> str | None:
        return None

    def close(self) -> None: ...


def running_broker(tmp_path: Path) -> tuple[Node, StandInBackend]:
    backend = StandInBackend()
    node = Node("broker-1", ["java"], tmp_path / "broker-1", 19092, backend, broker_id=1, session_timeout_s=0.0)
    assert node.info().cause == EndCause.NOT_STARTED and node.state == NodeState.STOPPED
    node.start()
    for _ in range(3):
        node.tick()
    assert node.state == NodeState.RUNNING and node.info().cause is None
    return node, backend


def test_a_kill_shows_killed_and_a_stop_stopped(tmp_path: Path) -> None:
    node, _ = running_broker(tmp_path)
    node.kill()
    node.tick()
    assert (node.state, node.info().cause, node.reason) == (NodeState.KILLED, EndCause.KILLED, "killed (SIGKILL)")
    node.start()
    node.tick()
    node.tick()
    node.stop()
    assert (node.state, node.info().cause) == (NodeState.STOPPING, EndCause.STOPPED)
    node.tick()
    assert (node.state, node.info().cause) == (NodeState.STOPPED, EndCause.STOPPED)
    assert node.reason == "stopped (controlled shutdown)"


def test_a_stop_by_the_audit_is_said_to_be_the_audits_and_shows_stopped(tmp_path: Path) -> None:
    """The audit brought the node back to read it, then stopped it again: grey, and typed as the audit's."""
    node, _ = running_broker(tmp_path)
    node.stop(cause=EndCause.AUDIT)
    assert (node.state, node.info().cause) == (NodeState.STOPPING, EndCause.AUDIT)
    node.tick()
    assert (node.state, node.info().cause) == (NodeState.STOPPED, EndCause.AUDIT)
    assert node.reason == "brought back for the audit, then stopped again (controlled shutdown)"


def test_a_stop_past_its_bound_shows_killed_and_an_end_by_kafkalab_stopped(tmp_path: Path) -> None:
    node, backend = running_broker(tmp_path)
    backend.launched[-1].exit_on_term = None  # it ignores SIGTERM
    node.stop(bound_s=0.0)
    node.tick()  # the bound passed: SIGKILL sent
    assert (node.state, node.info().cause) == (NodeState.STOPPING, EndCause.STOP_TIMED_OUT)
    node.tick()
    assert (node.state, node.info().cause) == (NodeState.KILLED, EndCause.STOP_TIMED_OUT)
    node.start()
    node.tick()
    node.tick()
    node.end("run ended")  # a SIGKILL too, but no fault: stopped, with kafkalab's reason
    node.tick()
    assert (node.state, node.info().cause, node.reason) == (NodeState.STOPPED, EndCause.ENDED, "run ended")


def test_a_node_that_exits_by_itself_failed(tmp_path: Path) -> None:
    node, backend = running_broker(tmp_path)
    backend.launched[-1].code = 1
    node.tick()
    assert (node.state, node.info().cause) == (NodeState.FAILED, EndCause.CRASHED)


def test_the_cause_travels_with_the_node_to_the_cli_and_the_recording() -> None:
    info = NodeInfo("broker-2", NodeKind.BROKER, 2, 9093, NodeState.STOPPED, "run ended", None, 0.0, None, None, 1,
                    cause=EndCause.ENDED)
    assert node_of(node_row(info)) == info  # a recording keeps no cpu, memory or node id
    owned = replace(info, cpu_percent=0.0, rss_bytes=0, node_id=2)
    assert node_info_of(owned.as_dict()) == owned  # `kafkalab cluster status` of a cluster another process owns
    # a recording made before nodes had a cause: eight columns
    old = node_of(["zookeeper", "zookeeper", None, 2181, "running", "ready in 2.0s", 11, 0])
    assert (old.kind, old.state, old.cause) == (NodeKind.ZOOKEEPER, NodeState.RUNNING, None)


def test_a_node_that_is_down_has_no_pid_in_its_info_until_reaped_too(tmp_path: Path) -> None:
    """Killed or ended, its process not reaped yet (no tick since): the info says no pid, no usage, no uptime;
    the node itself still knows the pid, for the supervision and the reaping that must end that process."""
    node, backend = running_broker(tmp_path)
    proc = backend.launched[-1]
    proc.usage = lambda: (55.0, 2**30)  # type: ignore[method-assign]
    assert (node.info().pid, node.info().cpu_percent, node.info().rss_bytes) == (4242, 55.0, 2**30)
    node.kill()  # SIGKILL sent, not reaped
    info = node.info()
    assert info.state == NodeState.KILLED and node.pid == 4242
    assert (info.pid, info.cpu_percent, info.rss_bytes, info.uptime_s) == (None, 0.0, 0, 0.0)
    assert info.as_dict()["pid"] is None  # what `kafkalab cluster status` prints
    node.start()
    node.tick()
    node.tick()
    assert node.info().pid == 4242  # running again: a process, a pid
    node.end("run ended")
    assert node.state == NodeState.STOPPED and node.pid == 4242 and node.info().pid is None
