"""KRaft mode's metadata panes: one per controller in place of ZooKeeper's, the active one marked.

The app keeps one :class:`MetadataPanes`; it composes ZooKeeper's pane or the controllers' and renders
each nodes frame's ZooKeeper facts or quorum into them, announcing a new active controller (an election).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widget import Widget

from kafkalab.admin.snapshot import ClusterSnapshot
from kafkalab.cluster.quorum import QuorumState
from kafkalab.cluster.spec import CONTROLLER_ID_BASE
from kafkalab.feeds.frames import NodesFrame
from kafkalab.ui.bindings import CONTROLLER_KEYS
from kafkalab.ui.line import Line
from kafkalab.ui.nodepane import FittedTitle, NodePane, TitleLevel
from kafkalab.ui.zookeeper import ZooKeeperPane

ACTIVE_STYLE = "bold black on magenta"


def quorum_role(quorum: QuorumState | None, node_id: int) -> list[Text]:
    """One voter's place in the quorum, in parts a narrow pane breaks between (:meth:`Line.show_parts`):
    ACTIVE, its epoch and high watermark; or follower, its lag and last fetch."""
    if quorum is None or not quorum.reachable:
        why = quorum.error if quorum is not None else "not asked yet"
        return [Text("quorum: unknown", style="dim"), Text(f"({why[:60]})", style="dim")]
    if quorum.leader == node_id:
        return [Text(" ACTIVE ", ACTIVE_STYLE), Text.assemble(("epoch ", "dim"), str(quorum.epoch)),
                Text.assemble(("hw ", "dim"), str(quorum.high_watermark))]
    me = quorum.replica(node_id)
    if me is None or me.lag is None:
        return [Text("follower", "dim"), Text("not fetching", "yellow")]
    fetched = f"{me.last_fetch_ms_ago / 1000:.1f}s ago" if me.last_fetch_ms_ago is not None else "never"
    return [Text("follower", "dim"), Text.assemble(("lag ", "dim"), (str(me.lag), "bold" if me.lag else "")),
            Text.assemble(("fetched ", "dim"), fetched)]


class ControllerPane(NodePane):
    """A dedicated KRaft controller: its role in the quorum (active with the epoch, or follower with its lag).
    Its own key picks it (``!`` ``@`` ``#``, :data:`CONTROLLER_KEYS`); its title names the key and the node id
    the logs, the quorum and the verdict use, ★ on the active one."""

    def __init__(self, index: int) -> None:
        self.node_id = CONTROLLER_ID_BASE + index
        self.active = False
        super().__init__(f"controller-{index}", CONTROLLER_KEYS[index][1], id=f"node-controller-{index}")
        self.add_class("controller-pane")

    def title_forms(self) -> tuple[str, str, str, str]:
        """`[!] controller 101 ★` down to `! c101★`."""
        mark = " ★" if self.active else ""
        return (f"[{self.key}] controller {self.node_id}{mark}", f"[{self.key}] ctl {self.node_id}{mark}",
                f"{self.key} ctl {self.node_id}{mark.strip()}", f"{self.key} c{self.node_id}{mark.strip()}")

    def show_quorum(self, quorum: QuorumState | None) -> None:
        active = quorum is not None and quorum.reachable and quorum.leader == self.node_id
        if active != self.active:
            self.active = active
            self.fit_title()
        self.set_class(self.active, "-active-controller")
        if self.info is None:  # before the lab's cluster exists: as the brokers say, not 'quorum: unknown'
            self.show_facts(Text())
            return
        self.query_one(".facts-line", Line).show_parts(quorum_role(quorum, self.node_id))


class QuorumPane(Vertical, FittedTitle):
    """Combined mode's quorum, where ZooKeeper's pane stands: the voters live inside brokers 1..N (which key
    0 picks in turn), so their roles are listed here, a line per voter. Not a node: nothing to act on."""

    def __init__(self, voters: int) -> None:
        super().__init__(classes="node-pane quorum-pane", id="quorum")
        self.voters = list(range(1, voters + 1))
        self.active: int | None = None
        self.show_title(TitleLevel.FULL)

    def title_forms(self) -> tuple[str, str, str, str]:
        brokers = f"{self.voters[0]}..{self.voters[-1]}"
        return (f"[0] quorum · voters in brokers {brokers}", f"[0] quorum: brokers {brokers}",
                f"[0] quorum {brokers}", "0 quorum")

    def compose(self) -> ComposeResult:
        for voter in self.voters:
            yield Line(classes="voter-line", id=f"voter-{voter}")

    def show_quorum(self, quorum: QuorumState | None) -> None:
        self.active = quorum.leader if quorum is not None and quorum.reachable else None
        for voter in self.voters:
            self.query_one(f"#voter-{voter}", Line).show_parts([Text(f"broker-{voter}", "bold"),
                                                                *quorum_role(quorum, voter)])


class MetadataPanes:
    """ZooKeeper's pane (``controllers`` None), or a pane per dedicated KRaft controller.

    ``controllers`` 0 is KRaft with the voters combined into the brokers: no pane of their own, one
    :class:`QuorumPane` listing them.
    """

    def __init__(self, controllers: int | None = None, voters: int = 0) -> None:
        self.controllers = controllers
        self.voters = voters or controllers or 0
        self._leader: int | None = None
        self._turn = 0

    @classmethod
    def for_nodes(cls, names: Iterable[str], voters: int = 0) -> MetadataPanes:
        """The panes for a cluster known by its nodes' names (a replay): controller-N nodes are KRaft's
        dedicated controllers; neither them nor ZooKeeper is KRaft with ``voters`` voters in the brokers."""
        names = list(names)
        controllers = sum(n.startswith("controller-") for n in names)
        if controllers:
            return cls(controllers)
        return cls() if "zookeeper" in names or not names else cls(0, voters)

    def compose(self) -> Iterator[Widget]:
        if self.controllers is None:
            yield ZooKeeperPane()
            return
        if not self.controllers and self.voters:
            yield QuorumPane(self.voters)
        for index in range(1, self.controllers + 1):
            yield ControllerPane(index)

    def has_key(self, number: object) -> bool:
        """Whether a node key's number (an action's parameter) picks a metadata node here: 0 always, a
        controller's id if it exists."""
        return number == 0 or (isinstance(number, int) and 1 <= number - CONTROLLER_ID_BASE <= (self.controllers or 0))

    def keys_hint(self) -> str:
        """The metadata nodes' keys, for the top bar: the controllers' own, else 0."""
        return "".join(CONTROLLER_KEYS[i][1] for i in range(1, (self.controllers or 0) + 1)) or "0"

    def node_for_key(self, number: int) -> str | None:
        """The node a node key's number picks, if a metadata node: 0 as :meth:`next_name` says, a controller's
        id (its own key, bindings.py) that controller; None for a broker's."""
        if number == 0:
            return self.next_name()
        index = number - CONTROLLER_ID_BASE
        return f"controller-{index}" if self.controllers and 1 <= index <= self.controllers else None

    def next_name(self) -> str:
        """What key 0 selects: ZooKeeper, or the controllers in turn (0 again moves to the next); with
        combined voters the brokers hosting them."""
        if self.controllers is None or not self.voters:
            return "zookeeper"
        self._turn = self._turn % self.voters + 1
        return f"controller-{self._turn}" if self.controllers else f"broker-{self._turn}"

    def controller(self, snapshot: ClusterSnapshot) -> tuple[str, int | None]:
        """Who to name as the controller, and as what. In ZooKeeper mode the broker the metadata names. In
        KRaft mode the metadata's controller id is only a broker picked at random to take admin requests, so
        the quorum's active controller (a broker's own id in combined mode, none of the brokers otherwise)."""
        if self.controllers is None:
            return "controller", snapshot.controller
        return "active controller", self._leader

    def show(self, app: App[Any], frame: NodesFrame, brokers: int) -> None:
        if self.controllers is None:
            app.query_one(ZooKeeperPane).show_connections(frame.zk_connections, brokers)
            return
        for pane in app.query(ControllerPane):
            pane.show_quorum(frame.quorum)
        for quorum_pane in app.query(QuorumPane):
            quorum_pane.show_quorum(frame.quorum)
        quorum = frame.quorum
        if quorum is None or quorum.leader is None or quorum.leader == self._leader:
            return
        if self._leader is not None:
            app.notify(f"election: active controller {self._leader} -> {quorum.leader} (epoch {quorum.epoch})",
                       severity="warning", timeout=6)
        self._leader = quorum.leader
