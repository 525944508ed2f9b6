"""`kafkalab diff` on a real Spark standalone cluster (a master and one worker from pyspark's jars), with
the logs given as file:// URIs and globs, against the report of the same logs in local mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from kafkalab.analysis.job import CLASSES
from tests.analysis_scenarios import Scenario, Send, write_scenario
from tests.spark_standalone import standalone_cluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(3600)]  # two Spark runs and a cluster, on a loaded machine

FATES = ["ok", "missed", "broker_lost", "acks0_ok", "acks0_lost", "duplicated", "redelivered",
         "recovered_failed", "recovered_unknown", "failed", "unknown", "failed_no_partition", "aborted_read"]


def kafkalab_diff(args: list[str], out: Path, env: dict[str, str]) -> tuple[dict[str, Any], str]:
    """The real command; its JSON report and its text report (stdout)."""
    proc = subprocess.run([sys.executable, "-m", "kafkalab", "diff", *args, "--json", str(out)],
                          capture_output=True, text=True, timeout=1500, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """Everything the job decides; samples as sets (ties may come back in another order), inputs by name."""
    return {
        **{key: report[key] for key in ("run", *CLASSES, "totals", "per_partition", "verdict")},
        "samples": {name: {tuple(s.values()) for s in found} for name, found in report["samples"].items()},
        "malformed": report["inputs"]["malformed"],
        "files": sorted((Path(f["path"]).name, f["kind"], f["size_bytes"], f["malformed"], tuple(f["malformed_lines"]))
                        for f in report["inputs"]["files"]),
    }


def test_diff_on_a_standalone_cluster_reports_exactly_what_local_mode_does(tmp_path: Path) -> None:
    sends = [Send("p1", "t1", i % 3, fate) for i, fate in enumerate(FATES * 4)]
    sends += [Send("p2", "t1", 0, "ok"), Send("p2", "t1", 0, "reordered")] * 3
    sends += [Send("p2", "t1", 1, "ok", key="a"), Send("p2", "t1", 0, "ok", key="a")]  # key_reordered (c1: 0, then 1)
    logs = tmp_path / "logs"
    written = write_scenario(Scenario(sends, second_group=True, foreign_rows=2, no_id_rows=1,
                                      garbage_in_consumer=2, garbage_in_producer=1), logs)
    env = {**os.environ, "COLUMNS": "200", "SPARK_LOCAL_IP": "127.0.0.1"}
    local, _ = kafkalab_diff(["--producer", *map(str, written.producer_logs),
                              "--consumer", *map(str, written.consumer_logs),
                              "--audit", *map(str, written.audit_logs), "--spark-master", "local[2]"],
                             tmp_path / "local.json", env)
    # every class message ids tell is in the corpus; consumed_twice is content identity's (None here)
    assert local["consumed_twice"] is None and all(local[n] > 0 for n in CLASSES if n != "consumed_twice"), local
    assert local["inputs"]["malformed"] == 3
    assert local["spark"]["executors"] == 0

    cluster_dir = tmp_path / "spark"
    with standalone_cluster(cluster_dir, cores=1, memory="1g") as cluster:
        remote, text = kafkalab_diff(
            ["--producer", f"file://{logs}/producer-*.csv", "--consumer", f"file://{logs}/consumer-*.csv",
             "--audit", f"file://{logs}/audit.csv", "--spark-master", cluster.url,
             "--spark-conf", "spark.executor.memory=512m", "--spark-conf", "spark.cores.max=1"],
            tmp_path / "cluster.json", env)
        started = [cluster.master_pid, cluster.worker_pid,
                   *(p.pid for p in psutil.Process(cluster.worker_pid).children(recursive=True))]
    assert not [p for p in started if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]

    assert comparable(remote) == comparable(local)
    version = local["spark"]["version"]
    assert remote["spark"] == {"master": cluster.url, "version": version, "executors": 1, "cores": 1}
    assert all(f["path"].startswith("file:/") for f in remote["inputs"]["files"])
    assert f"on {cluster.url} (Spark {version}, 1 executor, 1 core)" in text
    # the worker launched the job's executor with the --spark-conf memory, its output in files
    assert '"-Xmx512M"' in (cluster_dir / "worker.err").read_text()
    assert list((cluster_dir / "work").glob("app-*/0/stderr"))
