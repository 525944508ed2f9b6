"""An offset Kafka does not know yet (OFFSET_INVALID, -1001, as librdkafka's ListOffsets answers just after a leader
died; an error and -1 on the wire, as the snapshot asks the leader itself) is shown as not known, never as a
sentinel number."""

from __future__ import annotations

import struct
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import OFFSET_INVALID, TopicPartition
from rich.console import Console

from kafkalab.admin import Admin, broker_wire
from kafkalab.cli import cluster_cmds


def answered(value: Any) -> Future[Any]:
    fut: Future[Any] = Future()
    fut.set_result(value)
    return fut


def just_after_a_kill(address: str, api: tuple[int, int], body: bytes, timeout_s: float) -> broker_wire._Reader:
    """Broker 1's replies (after their correlation id) right after broker 2 was killed: its metadata (v7), and its
    end offsets (ListOffsets v4), partition 0's not known yet (OFFSET_NOT_AVAILABLE, offset -1)."""
    if api == broker_wire.METADATA:
        partition = struct.pack(">hiii", 0, 0, 1, 1) + ids(1, 2) + ids(1) + ids()
        reply = struct.pack(">ii", 0, 1) + struct.pack(">i", 1) + text("127.0.0.1") + struct.pack(">ih", 1, -1)
        reply += struct.pack(">hii", -1, 1, 1) + struct.pack(">h", 0) + text("orders") + struct.pack(">bi", 0, 2)
        reply += partition + partition.replace(struct.pack(">hi", 0, 0), struct.pack(">hi", 0, 1), 1)
    else:
        reply = struct.pack(">ii", 0, 1) + text("orders") + struct.pack(">i", 2)
        reply += struct.pack(">ihqqi", 0, 78, -1, -1, -1) + struct.pack(">ihqqi", 1, 0, -1, 42, 1)
    return broker_wire._Reader(reply)


def ids(*brokers: int) -> bytes:
    return struct.pack(f">i{len(brokers)}i", len(brokers), *brokers)


def text(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


class JustAfterAKill:
    """An admin client as librdkafka answers right after a broker kill: partition 0's end offset not known yet."""

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Future[Any]]:
        return {}

    def list_offsets(self, request: dict[TopicPartition, Any], request_timeout: float) -> dict[Any, Future[Any]]:
        return {tp: answered(SimpleNamespace(offset=OFFSET_INVALID if tp.partition == 0 else 42)) for tp in request}


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> Admin:
    monkeypatch.setattr(broker_wire, "_exchange", just_after_a_kill)
    admin = Admin("127.0.0.1:1", timeout_s=1.0)
    admin._client = JustAfterAKill()  # type: ignore[assignment]
    return admin


def test_end_offsets_leave_out_an_offset_not_known(admin: Admin) -> None:
    assert admin.end_offsets([("orders", 0), ("orders", 1)]) == {("orders", 1): 42}
    ends = {p.partition: p.end_offset for p in admin.snapshot().partitions}
    assert ends == {0: None, 1: 42}


def test_cluster_status_says_an_end_offset_is_not_known(admin: Admin, monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Console(width=100, record=True, force_terminal=False)
    monkeypatch.setattr(cluster_cmds, "console", screen)
    cluster_cmds._print_partitions(admin.snapshot())
    out = screen.export_text()
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()[:1] in (["0"], ["1"])}
    assert rows["0"][4] == "?" and rows["1"][4] == "42", out
    assert "-1001" not in out and str(OFFSET_INVALID) not in out
