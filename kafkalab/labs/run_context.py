"""What a run's helpers work with once its cluster and clients are up: :class:`RunContext`.

:class:`~kafkalab.labs.run.LabRun` makes it once, after its cluster started and its clients' handle and
cluster watch exist, and hands it to the audit (:mod:`kafkalab.labs.audit_step`) and to the faults' controls
(:mod:`kafkalab.labs.run_view`): neither holds the whole run, and nothing in it can be missing yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkalab.admin import Admin
from kafkalab.cluster import Cluster, NodeState
from kafkalab.labs.model import Lab
from kafkalab.labs.results import Phase
from kafkalab.labs.run_clients import RunClients
from kafkalab.labs.run_deps import RunDeps
from kafkalab.labs.timeline import ClusterWatch, Timeline


@dataclass(frozen=True)
class RunContext:
    lab: Lab
    run_dir: Path
    deps: RunDeps  # the audit, control words and reassignment it calls; its timing
    cluster: Cluster
    admin: Admin
    clients: RunClients
    watch: ClusterWatch  # its last snapshot
    timeline: Timeline  # the run's events, and its clock (``now``)
    say: Callable[[str], None]  # what the run is doing, in words
    set_phase: Callable[[Phase], None]
    sleep: Callable[[float], None]  # a wait that unwinds the run when it is stopped meanwhile
    wait_node: Callable[[str, tuple[NodeState, ...], float], None]  # (node, states, timeout)
    create_topic: Callable[[str, float], None]  # one of the lab's topics, as it plans it (name, timeout)
