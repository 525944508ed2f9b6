"""The processor pane: its mode (at-least-once or exactly once), its input lag, records in and out, and its
transactions (open, committed, aborted); shown beside the producer pane while a lab has a processor."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from kafkalab.clients.error_words import error_sentence
from kafkalab.clients.processor import ProcessorStats
from kafkalab.clients.stats import HELD_SHOWN_AFTER_S, ClientState
from kafkalab.ui.line import Line


def mode_line(stats: ProcessorStats) -> Text:
    if stats.transactional:
        return Text.assemble(("exactly once", "bold green"), (": output and input offsets in one transaction",
                                                              "dim"))
    return Text.assemble(("at-least-once", "bold yellow"), (": output sent, then input offsets committed", "dim"))


def counts_parts(instances: Sequence[ProcessorStats]) -> list[Text]:
    """The live instance's state and input lag, then records in and out over every instance (a killed one's and
    the one started after it), and the live one's rate."""
    live = instances[-1]
    parts = [Text(f" {live.state.upper()} ", "bold reverse")]
    if len(instances) > 1:
        parts.append(Text(f"instance {len(instances)}", style="dim"))
    if beside := [n for n, s in enumerate(instances[:-1], 1) if s.state == ClientState.PAUSED]:
        parts.append(Text(f"{'/'.join(map(str, beside))} paused beside it", style="bold yellow"))
    unmeasured = " or more" if set(live.assignment) - set(live.lag) else ""
    lag = live.total_lag
    parts.append(Text.assemble(("input lag ", "dim"), (f"{lag:,}{unmeasured}", "yellow" if lag or unmeasured else "")))
    if live.held_s >= HELD_SHOWN_AFTER_S:
        parts.append(Text.assemble(("held ", "bold yellow"), (f"{live.held_s:.0f}s", "bold yellow"),
                                   (" behind an open transaction", "dim")))
    parts.append(Text.assemble(("in ", "dim"), (f"{sum(s.received for s in instances):,}", "bold")))
    out = Text.assemble(("out ", "dim"), (f"{sum(s.produced for s in instances):,}", "bold"))
    if failed := sum(s.failed for s in instances):
        out.append(f" +{failed:,} failed", style="bold red")
    parts.append(out)
    if not live.state.ended:
        parts.append(Text(f"{live.rate:,.0f}/s"))
    return parts


def transactions_parts(instances: Sequence[ProcessorStats]) -> list[Text]:
    """Transactions committed and aborted over every instance, whether the live one has one open, and which
    earlier instances were fenced (exactly once working: not an error)."""
    aborted = sum(s.transactions_aborted for s in instances)
    parts = [Text.assemble(("transactions ", "dim"), (f"{sum(s.transactions_committed for s in instances):,}", "bold"),
                           (" committed", "dim")),
             Text.assemble((f"{aborted:,}", "bold red" if aborted else ""), (" aborted", "dim"))]
    if instances[-1].transactions_open:
        parts.append(Text("1 open", style="yellow"))
    if fenced := [n for n, s in enumerate(instances[:-1], 1) if s.fenced]:  # a zombie, ended by the newer one
        parts.append(Text(f"instance {'/'.join(map(str, fenced))} fenced", style="bold green"))
    return parts


class ProcessorPane(Vertical):
    """Hidden until a run has a processor."""

    def __init__(self) -> None:
        super().__init__(id="processor")
        self.border_title = "processor"
        self.display = False

    def compose(self) -> ComposeResult:
        yield Line(id="processor-mode")
        yield Line(id="processor-counts")
        yield Line(id="processor-transactions")
        yield Line(id="processor-error")

    def show(self, instances: Sequence[ProcessorStats]) -> None:
        if self.display != bool(instances):
            self.display = bool(instances)
        if not instances:
            return
        live = instances[-1]
        self.query_one("#processor-mode", Line).show(mode_line(live))
        self.query_one("#processor-counts", Line).show_parts(counts_parts(instances))
        transactions = self.query_one("#processor-transactions", Line)
        if transactions.display != live.transactional:
            transactions.display = live.transactional
        if live.transactional:
            transactions.show_parts(transactions_parts(instances))
        self.query_one("#processor-error", Line).show(Text(error_sentence(live.error), style="red") if live.error
                                                      else "")
