"""The producer pane: settings in effect, progress with ETA, rate, a send blocked on the full buffer, failed
records by reason, a transactional producer's transactions, throughput."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import ProgressBar, Sparkline

from kafkalab.clients.error_words import error_sentence, failure_words
from kafkalab.clients.stats import ConsumerStats, ProducerStats
from kafkalab.labs.failover import Leadership
from kafkalab.ui.line import Line
from kafkalab.ui.nodepane import duration

# course option name -> how the pane labels it
SHOWN_SETTINGS = (("producer.acks", "acks"), ("producer.idempotent", "idempotent"),
                  ("producer.max-inflight", "in-flight"), ("producer.linger", "linger ms"))


def settings_line(settings: Mapping[str, str]) -> Text:
    line = Text()
    for key, label in SHOWN_SETTINGS:
        if key in settings:
            line.append(f"{label} ", style="dim").append(f"{settings[key]}  ", style="bold")
    return line or Text("defaults", style="dim")


def counts_parts(stats: ProducerStats) -> list[Text]:
    """State, how long a send has been blocked (its buffer full), acknowledged of total and, while it runs, rate,
    ETA (when there is one) and records in flight."""
    parts = [Text(f" {stats.state.upper()} ", "bold reverse")]
    if stats.blocked_s:
        parts.append(Text.assemble(("send() blocked ", "yellow"), (f"{stats.blocked_s:.1f} s", "bold yellow"),
                                   (": buffer full", "yellow")))
    parts.append(Text.assemble((f"{stats.acked:,}", "bold"), ("/", "dim"), f"{stats.total:,}", (" acked", "dim")))
    if not stats.state.ended:
        parts.append(Text(f"{stats.rate:,.0f}/s"))
        remaining = max(0, stats.total - stats.acked - stats.failed_total - stats.unknown)
        if stats.rate > 0 and remaining:
            parts.append(Text.assemble(("ETA ", "dim"), duration(remaining / stats.rate)))
        parts.append(Text.assemble(("in flight ", "dim"), f"{stats.in_flight:,}"))
    return parts


def failures_line(stats: ProducerStats) -> Text:
    if stats.foreign:  # its failures are its own to report: its last output line says what it says
        said = Text("its output: ", style="dim").append(stats.output[-1] if stats.output else "(none yet)")
        return Text(error_sentence(stats.error), style="red") if stats.error else said
    if not stats.failed and not stats.unknown and not stats.error:
        return Text("no failures", style="dim green")
    line = Text()
    for name, count in sorted(stats.failed.items(), key=lambda kv: (-kv[1], kv[0])):
        line.append(f"{count:,} failed", style="bold red").append(f": {failure_words(name)}  ")
    if stats.unknown:
        line.append("unknown ", style="bold yellow").append(f"{stats.unknown:,}  ")
    if stats.error:  # in words: the raw librdkafka line, cut to the pane, lost its start (it stays in the log)
        line.append(error_sentence(stats.error), style="red")
    return line


def transactions_parts(stats: ProducerStats) -> list[Text]:
    """A transactional producer's transactions: committed, aborted and the open one's records the brokers hold
    (acked only once it commits)."""
    parts = [Text.assemble(("transactions ", "dim"), (f"{stats.transactions_committed:,}", "bold"),
                           (" committed", "dim")),
             Text.assemble((f"{stats.transactions_aborted:,}", "bold red" if stats.transactions_aborted else ""),
                           (" aborted", "dim"))]
    if stats.transactions_open:
        parts.append(Text.assemble(("open, ", "yellow"), f"{stats.uncommitted:,}", (" written", "dim")))
    return parts


def presenter_line(stats: ProducerStats | None, consumers: tuple[ConsumerStats, ...],
                   facts: Leadership | None = None) -> Text:
    """The run in one line for presenter mode, whose side pane (the clients) is hidden: first, in large, the
    election under way or the last failover (``facts``: the core's, as Results and the verdict say them); then
    the producer's progress, its failures and what the consumers processed."""
    if stats is None:
        return Text("no run yet: g starts one", style="dim")
    news = failover_badge(facts or Leadership())
    return (news + Text("  ") if news.plain else Text()) + producer_summary(stats, consumers)


def failover_badge(facts: Leadership) -> Text:
    """' FAILOVER  electing a leader for test-topic/0 (broker 2 killed 1.2 s ago) ', then once elected ' FAILOVER
    leader of test-topic/0: broker 2 -> 3 in 2.4 s (killed at 23.0 s) '; empty without either."""
    if facts.elections:
        return Text.assemble((" FAILOVER ", "bold reverse"), (f" {facts.elections[0].line} ", "bold black on yellow"))
    if lines := facts.lines():
        return Text.assemble((" FAILOVER ", "bold reverse"), (f" {lines[-1]} ", "bold black on cyan"))
    return Text()


def producer_summary(stats: ProducerStats, consumers: tuple[ConsumerStats, ...]) -> Text:
    """The producer's progress and failures, what the consumers processed, on one line."""
    line = Text.assemble((f" {stats.state.upper()} ", "bold reverse"), " ", (f"{stats.acked:,}", "bold"), ("/", "dim"),
                         f"{stats.total:,}", (" acked  ", "dim"), f"{stats.rate:,.0f}/s")
    failed = stats.failed_total + stats.unknown
    line.append("  failed ", style="dim").append(f"{failed:,}", style="bold red" if failed else "green")
    if consumers:
        line.append("  consumed ", style="dim").append(f"{sum(c.processed for c in consumers):,}", style="bold")
        lag = sum(c.total_lag for c in consumers)  # as the consumers pane's "unread" (not the Groups tab's lag)
        unmeasured = " or more" if any(set(c.assignment) - set(c.lag) for c in consumers) else ""  # not "+?"
        line.append("  unread ", style="dim").append(f"{lag:,}{unmeasured}",
                                                     style="yellow" if lag or unmeasured else "")
    return line


class ProducerPane(Vertical):
    def __init__(self) -> None:
        super().__init__(id="producer")
        self.border_title = "producer"
        self.shown = False  # a producer's counts are on the pane

    def compose(self) -> ComposeResult:
        yield Line(id="producer-settings")
        yield ProgressBar(total=1, show_eta=False, id="producer-progress")
        yield Line("not started", id="producer-counts")
        yield Line(id="producer-failures")
        transactions = Line(id="producer-transactions")
        transactions.display = False  # until a transactional producer runs
        yield transactions
        yield Sparkline([], id="producer-sparkline")

    def show(self, stats: ProducerStats | None, settings: Mapping[str, str], throughput: list[float]) -> None:
        self.query_one("#producer-settings", Line).show(settings_line(settings))
        if stats is None:  # no producer in this run yet (a fresh cluster starting): the last run's counts go
            if self.shown:
                self.shown = False
                self.query_one(ProgressBar).update(total=1, progress=0)
                self.query_one("#producer-counts", Line).show("not started")
                self.query_one("#producer-failures", Line).show("")
                self.query_one("#producer-transactions", Line).display = False
                self.query_one(Sparkline).data = []
            return
        self.shown = True
        title = "producer" if stats.name == "producer" else f"producer {stats.name}"
        title += " · your command" if stats.foreign else ""
        if self.border_title != title:  # a title set repaints the pane: only on a change
            self.border_title = title
        self.query_one(ProgressBar).update(total=max(1, stats.total), progress=stats.acked + stats.failed_total)
        self.query_one("#producer-counts", Line).show_parts(counts_parts(stats))
        self.query_one("#producer-failures", Line).show(failures_line(stats))
        transactions = self.query_one("#producer-transactions", Line)
        if transactions.display != stats.transactional:  # shown for a transactional producer only
            transactions.display = stats.transactional
        if stats.transactional:
            transactions.show_parts(transactions_parts(stats))
        self.query_one(Sparkline).data = throughput[-120:]
