"""The new-rebalance-protocol lab end to end on a real Kafka 4.4 KRaft cluster, through `kafkalab run`: the
classic group stops on each rebalance, the consumer-protocol group (KIP-848) never does."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import kafka_install
from kafkalab.errors import KafkalabError
from kafkalab.labs import find_lab, load_lab
from tests.test_labs_cluster import run_headless

pytestmark = pytest.mark.cluster


def test_new_rebalance_protocol_runs_headless_and_shows_its_lesson(tmp_path: Path) -> None:
    version = load_lab(find_lab("new-rebalance-protocol")).cluster.kafka_version
    try:
        kafka_install.locate(version=version)
    except KafkalabError as exc:
        pytest.fail(f"{exc} (make setup fetches it)")
    result, out = run_headless("new-rebalance-protocol", tmp_path, 900)
    held = {e["text"]: e["held"] for e in result["expectations"]}
    assert held["group.classic.stopped_s > 0"] and held["group.kip848.stopped_s == 0"], held
    assert result["metrics"]["group.classic.revoked"] > result["metrics"]["group.kip848.revoked"]
    assert "rebalance pause per group: classic: no partition held for" in result["verdict"]
    assert "kip848: never stopped" in result["verdict"]
    assert "rebalance pause per group" in out, "the comparison is printed"
