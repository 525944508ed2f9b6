"""One broker's pane: badge, controller mark, partitions led and followed, usage, buttons, log tail."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Button
from textual.widgets.button import ButtonVariant

from kafkalab.cluster import NodeInfo, NodeState
from kafkalab.ui.nodepane import NodePane

# Pane button -> the action a key would take (see bindings.py: s, k, p, r).
BUTTONS: tuple[tuple[str, str, ButtonVariant], ...] = (
    ("stop", "Stop", "warning"), ("kill", "Kill", "error"), ("pause_resume", "Pause", "primary"),
    ("start_restart", "Start", "success"))


class BrokerPane(NodePane):
    class Act(Message):
        """A button of the pane was pressed: act on its broker."""

        def __init__(self, broker_id: int, action: str) -> None:
            super().__init__()
            self.broker_id = broker_id
            self.action = action

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.controller = False
        super().__init__(f"broker-{broker_id}", str(broker_id), id=f"node-broker-{broker_id}")

    def title_forms(self) -> tuple[str, str, str, str]:
        """`[1] broker-1 ★` (★: ZooKeeper's controller, or the active voter in combined KRaft mode) down to
        `1 broker`: the key is the broker's id."""
        mark = " ★" if self.controller else ""
        return (f"[{self.key}] {self.node_name}{mark}", f"[{self.key}] {self.node_name}{mark}",
                f"{self.key} broker{mark.strip()}", f"{self.key} b{mark.strip()}")

    def compose_extra(self) -> ComposeResult:
        with Horizontal(classes="buttons"):
            for action, label, variant in BUTTONS:
                yield Button(label, name=action, compact=True, variant=variant, classes=f"btn-{action}")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.post_message(self.Act(self.broker_id, event.button.name or ""))

    def show_info(self, info: NodeInfo) -> None:
        super().show_info(info)
        self.query_one(".btn-pause_resume", Button).label = "Resume" if info.state == NodeState.PAUSED else "Pause"
        up = info.state in (NodeState.RUNNING, NodeState.STARTING, NodeState.PAUSED)
        self.query_one(".btn-start_restart", Button).label = "Restart" if up else "Start"

    def show_roles(self, controller: bool, leads: int | None, follows: int | None, reachable: bool) -> None:
        if controller != self.controller:
            self.controller = controller
            self.fit_title()
        if leads is None or follows is None:
            self.show_facts(Text("not registered", style="dim"))
            return
        facts = Text.assemble(("leads ", "dim"), (str(leads), "bold"), (" · follows ", "dim"), (str(follows), "bold"))
        if controller:
            facts.append(" ★ctl", style="bold yellow")
        if not reachable:
            facts.stylize("dim")
        self.show_facts(facts)
