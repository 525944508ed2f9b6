"""Shared benchmark plumbing: medians, machine facts, JSON results in benchmarks/results/."""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import psutil

from kafkalab.errors import KafkalabError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafkalab.labs import Lab

RESULTS = Path(__file__).resolve().parent / "results"
COURSE_TABLE = "labs-platforms-course"  # every lesson on every platform, merged from the sittings (course_matrix.py)


def summary(samples: list[float]) -> dict[str, Any]:
    """Median, min, max and the samples (rounded), the shape every benchmark reports."""
    return {
        "median": round(statistics.median(samples), 3) if samples else None,
        "min": round(min(samples), 3) if samples else None,
        "max": round(max(samples), 3) if samples else None,
        "runs": len(samples),
        "samples": [round(s, 3) for s in samples],
    }


def write_results(name: str, results: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "benchmark": name,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
                    "python": platform.python_version(), "platform": platform.platform()},
        **results,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def floor_job_s(session: SparkSession, producer_logs: list[Path], consumer_logs: list[Path]) -> float:
    """Seconds of the least Spark job that compares the logs (the analysis' CSV reader, rows grouped by
    message id, ids not seen exactly twice counted): what `diff` tells, none of the why."""
    from kafkalab.analysis.job import read_log
    from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS

    start = time.monotonic()
    ids = read_log(session, producer_logs, PRODUCER_COLUMNS).select("msg_id").unionAll(
        read_log(session, consumer_logs, CONSUMER_COLUMNS).select("msg_id"))
    ids.groupBy("msg_id").count().where("count != 2").count()
    return time.monotonic() - start


# KAFKALAB_CLUSTER_LOCK names another lock: a second sitting of a benchmark whose runs mostly wait on the
# lab's timeline (load under 1 on 2 cores) may share the machine; its results say so in the docs.
CLUSTER_LOCK = Path(os.environ.get("KAFKALAB_CLUSTER_LOCK", "/tmp/kafkalab-cluster.lock"))


@contextmanager
def cluster_lock() -> Iterator[None]:
    """The machine-wide lock, held for one run: one cluster at a time on this machine, so a benchmark's
    timings are its own and other clusters (tests, trials) get their turn between its runs."""
    with CLUSTER_LOCK.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def result_key(lab: Lab) -> str:
    """The lab's id, with the mode and version where not the lab's own (``leader-failover --mode kraft``)."""
    c = lab.cluster
    mode = "" if c.mode == c.modes[0] else f" --mode {c.mode}"
    version = "" if c.kafka_version == c.kafka_versions[0] else f" --kafka-version {c.kafka_version}"
    return f"{lab.id}{mode}{version}"


def on_platforms(labs: list[Lab], wanted: str) -> list[Lab]:
    """Each lab on each of its platforms that ``wanted`` names ("all", or e.g. "kraft/3.9.2,kraft/4.4.0")."""
    names = None if wanted == "all" else {tuple(w.split("/", 1)) for w in wanted.split(",")}
    return [lab.on(m, v) for lab in labs for m, v in lab.cluster.platforms() if names is None or (m, v) in names]


def played_by(labs: list[Lab], clients: str) -> list[Lab]:
    """``labs`` with their producer and consumers played by ``clients``: python (kafkalab's own, as shipped) or
    java (kafkalab's Java clients, the fidelity runs of docs/foreign-clients.md). A lab they cannot play is left
    out, saying why on stderr."""
    if clients == "python":
        return labs
    from kafkalab.feeds.players import java_templates

    played: list[Lab] = []
    for lab in labs:
        try:
            played.append(lab.with_commands(*java_templates(lab)))
        except KafkalabError as exc:
            print(f"left out: {exc}", file=sys.stderr)
    return played


def add_clients_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", choices=("python", "java"), default="python",
                        help="java: kafkalab's own Java clients play every producer and consumer (fidelity)")


def lab_hash(lab: Lab) -> str:
    """The lab file's hash: results of an earlier version of the file are not counted with this one's."""
    return hashlib.sha256(lab.source.read_bytes()).hexdigest()[:16] if lab.source else ""


def fix_labs(wanted: str, refuse: Callable[[str], NoReturn]) -> list[Lab]:
    """The catalog's labs with a [fix], only those ``wanted`` names (comma-separated ids) when given;
    ``refuse`` (argparse's error) for an id that is not one of them."""
    from kafkalab.labs import catalog, load_lab

    labs = [lab for lab in (load_lab(p) for p in catalog()) if lab.fix is not None]
    if not wanted:
        return labs
    ids = wanted.split(",")
    if unknown := sorted(set(ids) - {lab.id for lab in labs}):
        refuse(f"--labs: {', '.join(unknown)} has no [fix] table (or no such lab)")
    return [lab for lab in labs if lab.id in ids]

