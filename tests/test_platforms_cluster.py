"""The short lab on every platform a lab declares, through the real `kafkalab run`: ZooKeeper on 3.9.2 is
test_labs_cluster's; here KRaft on the course's Kafka and on Kafka 4.4 (which has no ZooKeeper)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_labs_cluster import finish, kafkalab, leftovers

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize(("flags", "mode", "version"), [
    (["--mode", "kraft"], "kraft", "3.9.2"),
    (["--kafka-version", "4.4.0"], "kraft", "4.4.0"),  # 4.x implies KRaft
])
def test_setup_check_passes_on_each_kraft_platform(tmp_path: Path, flags: list[str], mode: str,
                                                    version: str) -> None:
    runs = tmp_path / "runs"
    proc = kafkalab("run", "setup-check", *flags, "--headless", "--free-ports", "--runs-dir", str(runs),
                    "--json", str(tmp_path / "result.json"), cwd=tmp_path)
    out = finish(proc, 300)
    assert proc.returncode == 0, out[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["passed"] and (result["mode"], result["kafka_version"]) == (mode, version)
    cluster = Path(result["run_dir"]) / "cluster"
    assert (cluster / "controller-1").is_dir() and not (cluster / "zookeeper").exists()
    started = re.findall(r"Kafka version: (\S+)", (cluster / "broker-1" / "logs" / "server.log").read_text())
    assert started and set(started) == {version}  # the broker that ran is the release asked for
    assert leftovers(runs) == []
