"""The ZooKeeper pane: state, pid, uptime, CPU, memory, connected clients, log tail."""

from __future__ import annotations

from rich.text import Text

from kafkalab.ui.nodepane import NodePane

# the console's own `cons` question (its client count, every few seconds): not news about ZooKeeper
OWN_QUESTIONS = ("Processing cons command",)


class ZooKeeperPane(NodePane):
    def __init__(self) -> None:
        super().__init__("zookeeper", "0", id="node-zookeeper")

    def title_forms(self) -> tuple[str, str, str, str]:
        return "[0] zookeeper", "[0] zookeeper", "0 zookeeper", "0 zk"

    def add_log(self, lines: tuple[str, ...]) -> None:
        """The log's lines, less those the console's own questions wrote."""
        super().add_log(tuple(line for line in lines if not any(q in line for q in OWN_QUESTIONS)))

    def show_connections(self, connections: int | None, brokers: int) -> None:
        if connections is None:
            self.show_facts(Text("clients: unknown", style="dim"))
        else:
            self.show_facts(Text.assemble(("clients ", "dim"), str(connections), (" · brokers ", "dim"), str(brokers)))
