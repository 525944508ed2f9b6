"""The producer's loop without a cluster: no broker answers, so its small buffer fills and its sends block."""

from __future__ import annotations

import csv
import socket
from pathlib import Path
from typing import Any

import pytest

from kafkalab.clients import producer_loop
from kafkalab.clients.options import ProducerConfig
from kafkalab.clients.producer_loop import ProducerLoop
from kafkalab.logformat import MAX_BLOCK_TIMED_OUT

RECORDS = 40


def _closed_port() -> int:
    """A port nothing listens on: every connection to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_send_blocked_past_max_block_fails_its_record_and_the_loop_sends_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(producer_loop, "check_topic", lambda bootstrap, topic: 3)
    cfg = ProducerConfig.from_settings({
        "bootstrap.server": f"127.0.0.1:{_closed_port()}", "producer.num-records-per-roll": str(RECORDS),
        "producer.buffer-memory": "1024", "producer.max-block": "200",
        # the buffered records give up only after the blocked sends: the buffer stays full meanwhile
        "producer.delivery-timeout": "3000", "producer.request-timeout": "1000"})
    events: list[dict[str, Any]] = []
    loop = ProducerLoop(cfg, tmp_path, "run", 1, events.append)
    assert loop.run() == 0
    with (tmp_path / "producer.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == RECORDS == loop.attempted  # every record logged once: the loop went on after each failure
    blocked = [r for r in rows if r["error"] == MAX_BLOCK_TIMED_OUT]
    assert blocked and all(r["status"] == "failed" and r["offset"] == "-1" for r in blocked)
    loop.report_stats()
    assert events[-1]["failed"][MAX_BLOCK_TIMED_OUT] == len(blocked)  # counted by its reason, as the pane shows
    said = [e["detail"] for e in events if e.get("kind") == "error"]
    assert any("max.block.ms=200" in d and MAX_BLOCK_TIMED_OUT in d for d in said)
