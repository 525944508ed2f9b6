"""The ZooKeeper pane: state, pid, uptime, CPU, memory, connected clients, log tail."""

from __future__ import annotations

from rich.text import Text

from kafkalab.ui.nodepane import NodePane


class ZooKeeperPane(NodePane):
    def __init__(self) -> None:
        super().__init__("zookeeper", "0", id="node-zookeeper")

    def show_connections(self, connections: int | None, brokers: int) -> None:
        if connections is None:
            self.show_facts(Text("clients: unknown", style="dim"))
        else:
            self.show_facts(Text.assemble(("clients ", "dim"), str(connections), (" · brokers ", "dim"), str(brokers)))
