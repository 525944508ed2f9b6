"""Moving replicas: a plan that raises a topic's replication factor, and the reassignment carrying it out.

Raising a replication factor needs a partition reassignment, which confluent-kafka's AdminClient lacks;
Kafka's own Admin API does it, run from the broker jars as a single-file Java program (JDK 11+), so
nothing beyond the jars already in the cache is needed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from kafkalab.admin.client import Admin
from kafkalab.admin.snapshot import PartitionState
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install import Distribution, java_binary, java_helper_argv
from kafkalab.paths import package_file

REASSIGN_SOURCE = package_file("kafkalab.admin", "Reassign.java")


def plan_replicas(partitions: Sequence[PartitionState], brokers: Sequence[int], rf: int) -> dict[int, list[int]]:
    """New replica lists with ``rf`` replicas: current replicas kept in order, more added round-robin."""
    if rf > len(brokers):
        raise KafkalabError(f"replication factor {rf} needs {rf} live brokers, the cluster has {len(brokers)}")
    plan: dict[int, list[int]] = {}
    ordered = sorted(brokers)
    for p in partitions:
        replicas = list(p.replicas[:rf])
        i = p.partition
        while len(replicas) < rf:
            candidate = ordered[i % len(ordered)]
            if candidate not in replicas:
                replicas.append(candidate)
            i += 1
        plan[p.partition] = replicas
    return plan


def replication_plan(admin: Admin, topic: str, rf: int) -> dict[int, list[int]]:
    """:func:`plan_replicas` for ``topic`` as the cluster has it now, on the brokers up now."""
    snapshot = admin.snapshot(offsets=False)
    return plan_replicas(snapshot.topic(topic), snapshot.brokers, rf)


def reassign(dist: Distribution, bootstrap: str, topic: str, plan: dict[int, list[int]], timeout: float = 90) -> str:
    """Submit ``plan`` (partition -> replicas); returns the tool's line. Completion shows in the ISR."""
    args = [f"{p}={','.join(map(str, r))}" for p, r in sorted(plan.items())]
    cmd = [java_binary(), "-Xmx128m", *java_helper_argv(dist, REASSIGN_SOURCE), bootstrap, topic, *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise KafkalabError(f"reassigning {topic} took over {timeout:.0f}s: check the brokers") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if "Exception" in ln or "rror" in ln] or ["no output"]
        raise KafkalabError(f"reassigning {topic} failed: {lines[-1].strip()[:300]}")
    return done.stdout.strip()
