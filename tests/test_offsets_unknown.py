"""An offset Kafka does not know yet (OFFSET_INVALID, -1001, as ListOffsets answers just after a leader died) is
shown as not known, never as Kafka's sentinel number."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import OFFSET_INVALID, TopicPartition
from rich.console import Console

from kafkalab.admin import Admin
from kafkalab.cli import cluster_cmds


def answered(value: Any) -> Future[Any]:
    fut: Future[Any] = Future()
    fut.set_result(value)
    return fut


class JustAfterAKill:
    """An admin client as librdkafka answers right after a broker kill: partition 0's end offset not known yet."""

    def list_topics(self, timeout: float) -> Any:
        parts = {p: SimpleNamespace(leader=1, replicas=[1, 2], isrs=[1]) for p in (0, 1)}
        return SimpleNamespace(topics={"orders": SimpleNamespace(partitions=parts)}, controller_id=1,
                               brokers={1: None}, orig_broker_id=1)

    def describe_configs(self, resources: list[Any], request_timeout: float) -> dict[Any, Future[Any]]:
        return {}

    def list_offsets(self, request: dict[TopicPartition, Any], request_timeout: float) -> dict[Any, Future[Any]]:
        return {tp: answered(SimpleNamespace(offset=OFFSET_INVALID if tp.partition == 0 else 42)) for tp in request}


@pytest.fixture
def admin() -> Admin:
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
