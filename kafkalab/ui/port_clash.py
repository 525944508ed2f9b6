"""A bare console whose default ports another kafkalab cluster holds: the console asks what to do first.

Free ports (a cluster of its own beside the other), attach (show and drive the running cluster through its
owner's control socket: node keys, the partition table from its bootstrap, the default workload on it), or
quit. Until the answer the source shows nothing and its boot waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkalab.admin import ClusterSnapshot
from kafkalab.cluster.control import read_cluster_file
from kafkalab.cluster.remote import RemoteCluster
from kafkalab.ui.source import PORTS_TAKEN, ClusterSource, NodesFrame, RunFrame

SHAPE_FIELDS = ("brokers", "mode", "controllers", "combined")


def attached_source(state_dir: Path) -> ClusterSource:
    """The console's source on the cluster a kafkalab process runs in ``state_dir`` (KafkalabError if none)."""
    remote = RemoteCluster(state_dir)
    return ClusterSource(remote, title=f"kafkalab · attached to {state_dir}", owned=False,  # type: ignore[arg-type]
                         label=f"attached: {state_dir.name}",
                         note=f"attached to the cluster in {state_dir} (kafkalab pid {remote.owner_pid}): node keys "
                              "act through its owner; quitting leaves it running")


def cluster_shape(facts: dict[str, Any]) -> tuple[object, ...]:
    return tuple(facts.get(name) for name in SHAPE_FIELDS)


class PortClashSource:
    """Asks (``question``), then behaves as the chosen source; every other attribute is the chosen one's."""

    reports = False  # either choice is a bare console's source

    def __init__(self, own: ClusterSource, owner: Path, taken: list[int]) -> None:
        self.own, self.owner, self.taken = own, owner, taken
        self.chosen: ClusterSource | None = None
        self._answered = threading.Event()
        spec = own.cluster.spec
        facts = read_cluster_file(owner)
        self.can_attach = cluster_shape(facts) == (spec.brokers, spec.mode, spec.controllers, spec.combined)
        self.shape = (f"{facts.get('brokers')} brokers, {facts.get('mode')} mode")

    @property
    def title(self) -> str:
        return (self.chosen or self.own).title

    @property
    def offers(self) -> frozenset[str]:
        return self.chosen.offers if self.chosen is not None else frozenset()

    def question(self) -> tuple[str, str, list[tuple[str, str, str]]]:
        """(question, detail, choices as (key, label, answer)) for the console's modal."""
        ports = ", ".join(map(str, self.taken))
        detail = (f"The kafkalab cluster in {self.owner} ({self.shape}) listens on {ports}.\n"
                  "f: start this console's own cluster on free ports beside it.\n")
        choices = [("f", "Free ports", "free")]
        if self.can_attach:
            detail += "a: attach: show and drive that cluster (quitting leaves it running).\n"
            choices.append(("a", "Attach", "attach"))
        else:
            detail += f"It differs from this console's panes: `kafkalab console --attach {self.owner}` shows it.\n"
        detail += "q: quit."
        return f"Ports {ports} are taken", detail, [*choices, ("q", "Quit", "quit")]

    def choose(self, answer: str) -> None:
        """``free``, ``attach`` (KafkalabError when the other cluster is gone meanwhile: ask again) or ``quit``."""
        if answer == "attach":
            self.chosen = attached_source(self.owner)
        elif answer == "free":
            self.chosen = self.own
        self._answered.set()

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

    def __getattr__(self, name: str) -> Any:
        chosen = self.__dict__.get("chosen")
        if chosen is None:
            raise AttributeError(name)
        return getattr(chosen, name)

    def close(self) -> None:
        self._answered.set()  # a boot still waiting returns
        if self.chosen is not None:
            self.chosen.close()
