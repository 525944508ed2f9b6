"""The audit leaves the cluster as the lab left it, on a real cluster (ZooKeeper and KRaft mode).

A small lab in the shape of consumer-receives-nothing: three brokers, broker 3 down from the start, so
``__consumer_offsets`` (replication factor 3) cannot be created and the consumer never gets a coordinator;
then broker 2, which holds one partition of the topic alone, is stopped once the producer is done. The audit
must bring broker 2 back to read that partition, and then stop it again; broker 3 holds nothing of the topic,
so it stays down, and the offsets topic stays uncreated: the incident's evidence, which the group commands
show. The Spark analysis is left out (this test claims the cluster's state and the audit's read, not the
report).
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from kafkalab import kafka_install
from kafkalab.admin import Admin, Groups
from kafkalab.admin.groups import GroupUnreachable
from kafkalab.cluster import EndCause, NodeState
from kafkalab.labs import LabSession, load_lab
from kafkalab.labs.run_deps import real_deps
from tests.lab_fakes import clean_report
from tests.test_labs_cluster import leftovers

pytestmark = pytest.mark.cluster

LAB = """\
[lab]
id = "audit-keeps-state"
title = "The audit puts back what it brought back"
teaches = "the cluster after a run is the one the lab left"
why = "broker 3 is down throughout and broker 2 once the producer is done"
instructions = "run it"
max_duration = 90
drain = 2

[cluster]
mode = "{mode}"
brokers = 3
stopped = [3]

[[topic]]
name = "test-topic"
partitions = 2
replication_factor = 1

[producer]
"producer.num-records-per-roll" = 200

[[consumer]]
local_id = 1
wait_assigned = false

[[fault]]
at = "producer finished"
do = "stop"
on = "broker 2"

[expect]
"producer.acked" = 200
"""


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_the_audit_reads_a_stopped_brokers_partition_and_leaves_the_lab_state(
        mode: str, distribution: kafka_install.Distribution, tmp_path: Path) -> None:
    path = tmp_path / "audit-keeps-state.toml"
    path.write_text(textwrap.dedent(LAB).format(mode=mode))
    deps = replace(real_deps(distribution), analyze=lambda _d, _a, _l: clean_report("not analysed here"))
    session = LabSession(load_lab(path), tmp_path / "runs", deps=deps, keep_cluster=True)
    try:
        result = session.run()
        assert result.passed, (result.error, result.failures)
        cluster = session.cluster
        assert cluster is not None
        # the audit read both partitions, broker 2's too
        assert len((result.run_dir / "audit.csv").read_text().splitlines()) == 1 + 200
        states = {n.name: (n.state, n.cause) for n in cluster.brokers}
        assert states["broker-1"] == (NodeState.RUNNING, None)
        assert states["broker-2"] == (NodeState.STOPPED, EndCause.AUDIT)  # brought back, read, stopped again
        assert states["broker-3"][0] == NodeState.STOPPED and states["broker-3"][1] != EndCause.AUDIT  # untouched
        topics = {p.topic for p in Admin(cluster.bootstrap).snapshot(offsets=False, internal=True).partitions}
        assert topics == {"test-topic"}, "the audit created an internal topic the lab's state did not have"
        # what `kafkalab group list` and `group describe` show: no group, and why its consumer never joined one
        groups = Groups(Admin(cluster.bootstrap, timeout_s=5.0))
        assert groups.list() == []
        with pytest.raises(GroupUnreachable, match=r"test-app .*: its coordinator did not answer"):
            groups.require("test-app")
    finally:
        session.close()
    assert leftovers(tmp_path / "runs") == []
