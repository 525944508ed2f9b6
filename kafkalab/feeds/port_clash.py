"""A bare console with another kafkalab cluster in its way: the console asks what to do first.

The other cluster runs in the state dir the console resolved to (with no --state-dir, the one cluster running),
or holds its default ports. Free ports (a cluster of its own beside the other, in a state dir of its own),
attach (show and drive the running cluster through its owner's control socket: node keys, the partition table
from its bootstrap, the default workload on it), or quit. Until the answer the source shows nothing and its
boot waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkalab.admin import ClusterSnapshot
from kafkalab.cluster import NodeAction
from kafkalab.cluster.control_socket import read_cluster_file
from kafkalab.cluster.netwiring import NetRequest
from kafkalab.cluster.remote import RemoteCluster
from kafkalab.feeds.cluster_source import ClusterSource
from kafkalab.feeds.frames import PORTS_TAKEN, NodesFrame, RunFrame
from kafkalab.feeds.source import Choice, HasBootstrap, NotOffered, Question, Source

SHAPE_FIELDS = ("brokers", "mode", "controllers", "combined")


def attached_source(state_dir: Path) -> ClusterSource:
    """The console's source on the cluster a kafkalab process runs in ``state_dir`` (KafkalabError if none)."""
    remote = RemoteCluster(state_dir)
    return ClusterSource(remote, title=f"kafkalab · attached to {state_dir}", owned=False,
                         label=f"attached: {state_dir.name}",
                         note=f"attached to the cluster in {state_dir} (kafkalab pid {remote.owner_pid}): node keys "
                              "act through its owner; quitting leaves it running")


def cluster_shape(facts: dict[str, Any]) -> tuple[object, ...]:
    return tuple(facts.get(name) for name in SHAPE_FIELDS)


class PortClashSource(Source):
    """Asks (:meth:`question`), then is the chosen source: every call goes to it once chosen. ``taken``: the
    default ports ``owner``'s cluster holds (empty: it runs in the state dir this console would have used)."""

    reports = False  # either choice is a bare console's source

    def __init__(self, own: ClusterSource, owner: Path, taken: list[int]) -> None:
        self.own, self.owner, self.taken = own, owner, taken
        self.chosen: ClusterSource | None = None
        self._answered = threading.Event()
        spec = own.cluster.spec
        facts = read_cluster_file(owner)
        self.can_attach = cluster_shape(facts) == (spec.brokers, spec.mode, spec.controllers, spec.combined)
        self.shape = (f"{facts.get('brokers')} brokers, {facts.get('mode')} mode")
        self.title, self.label = own.title, own.label  # offers nothing until answered
        self.platform = own.platform

    @property
    def _picked(self) -> ClusterSource:
        if self.chosen is None:
            raise NotOffered("answer the question first: free ports, attach or quit")
        return self.chosen

    @property
    def closing(self) -> str:
        return (self.chosen or self.own).closing

    @property
    def after_quit(self) -> str:
        return self.chosen.after_quit if self.chosen is not None else ""

    def question(self) -> Question | None:
        """Free ports, attach (when the other cluster has this console's shape) or quit, until answered."""
        if self._answered.is_set():
            return None
        ports = ", ".join(map(str, self.taken))
        title = f"Ports {ports} are taken" if self.taken else f"A cluster already runs in {self.owner}"
        detail = (f"The kafkalab cluster in {self.owner} ({self.shape}) "
                  + (f"listens on {ports}.\n" if self.taken else "runs already (`kafkalab cluster up`).\n")
                  + f"f: start this console's own cluster in {self.own.cluster.spec.state_dir} on free ports "
                    "beside it.\n")
        choices = [Choice("f", "Free ports", "free")]
        if self.can_attach:
            detail += "a: attach: show and drive that cluster (quitting leaves it running).\n"
            choices.append(Choice("a", "Attach", "attach"))
        else:
            detail += f"It differs from this console's panes: `kafkalab console --attach {self.owner}` shows it.\n"
        detail += "q: quit."
        return Question(title, detail, (*choices, Choice("q", "Quit", "quit")))

    def choose(self, answer: str) -> None:
        """``free``, ``attach`` (KafkalabError when the other cluster is gone meanwhile: ask again) or ``quit``."""
        if answer == "attach":
            self.chosen = attached_source(self.owner)
        elif answer == "free":
            self.chosen = self.own
        if self.chosen is not None:
            self.title, self.label, self.offers = self.chosen.title, self.chosen.label, self.chosen.offers
            self.platform = self.chosen.platform
        self._answered.set()

    def cluster_now(self) -> HasBootstrap | None:
        return self.chosen.cluster_now() if self.chosen is not None else None

    def boot(self, progress: Callable[[str], None]) -> None:
        progress(PORTS_TAKEN)
        self._answered.wait()
        if self.chosen is not None:
            self.chosen.boot(progress)

    def nodes(self) -> NodesFrame:
        return self.chosen.nodes() if self.chosen is not None else NodesFrame(())

    def snapshot(self) -> ClusterSnapshot:
        if self.chosen is None:
            return ClusterSnapshot(time.time(), False, error=PORTS_TAKEN)
        return self.chosen.snapshot()

    def run(self) -> RunFrame:
        return self.chosen.run() if self.chosen is not None else RunFrame()

    def node_action(self, node: str, action: NodeAction) -> None:
        self._picked.node_action(node, action)

    def net_request(self, request: NetRequest) -> str:
        return self._picked.net_request(request)

    def start_run(self) -> None:
        self._picked.start_run()

    def stop_run(self) -> None:
        self._picked.stop_run()

    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
        return self._picked.alter_topic(topic, replication_factor, min_isr)

    def reassign_topic(self, topic: str, replication_factor: int) -> str:
        return self._picked.reassign_topic(topic, replication_factor)

    def close(self) -> None:
        self._answered.set()  # a boot still waiting returns
        if self.chosen is not None:
            self.chosen.close()
