"""The headless runner behind `kafkalab run`: a LabSession, its timeline printed, the verdict at the end.

On a terminal a live status line shows the phase, the producer's progress and the elapsed time;
otherwise plain lines. Exit code: 0 when every expectation held, 1 when one did not, 2 for bad input.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from kafkalab.labs.events import ClientRecord, Event, EventKind, PartitionEvent
from kafkalab.labs.loader import catalog, load_lab
from kafkalab.labs.model import Lab
from kafkalab.labs.results import RunMessage, TimelineEvent
from kafkalab.labs.run import PortChoice
from kafkalab.labs.session import LabSession, RunResult, SessionEvent

# timeline kinds worth a line while a run goes on
SHOWN = {EventKind.FAULT, EventKind.FAULT_MISSED, EventKind.FAULT_FAILED, EventKind.CHECK, EventKind.LEADER_CHANGE,
         EventKind.ISR_SHRINK, EventKind.ISR_EXPAND, EventKind.OFFLINE, EventKind.ONLINE,
         EventKind.CONTROLLER_CHANGE, EventKind.PRODUCER_STALLED, EventKind.PRODUCER_RESUMED,
         EventKind.PRODUCER_ERROR, EventKind.PRODUCER_BLOCKED, EventKind.CONSUMER_ASSIGNED,
         EventKind.CONSUMER_REVOKED, EventKind.CONSUMER_LOST, EventKind.CONSUMER_CRASHED, EventKind.CONSUMER_ERROR,
         EventKind.CONSUMER_LAUNCH, EventKind.CONSUMER_HELD, EventKind.CONSUMER_RELEASED, EventKind.NODE,
         EventKind.PHASE}


def said(e: Event) -> str:
    """A timeline line's words: a client's event names the client, unless its words already do (several consumers,
    the processor's instances side by side)."""
    if isinstance(e, ClientRecord) and not e.detail.startswith(e.source):
        return f"{e.source}: {e.detail}"
    return e.detail


class HeadlessRun:
    """Runs one lab once, printing as it goes."""

    def __init__(self, lab: Lab, runs_root: Path, console: Console, seed: int | None = None,
                 spark: Any = None, ports: PortChoice | None = None) -> None:
        """``ports``: every node's port, chosen beforehand (``--free-ports``); else the defaults, free ones
        where taken."""
        self.console = console
        chosen = ports or PortChoice()
        self.session = LabSession(lab, runs_root, seed=seed, spark=spark, zk_port=chosen.zk_port,
                                  broker_ports=list(chosen.broker_ports),
                                  controller_ports=list(chosen.controller_ports))
        self.session.add_listener(self._on_event)
        self._lock = threading.Lock()
        self._jvm_ending: threading.Thread | None = None  # the Spark JVM ended beside a stopped run's teardown

    def _on_event(self, event: SessionEvent) -> None:
        try:
            self._print(event)
        except (OSError, SystemExit):  # stdout closed (`| head`, a closed terminal): the run goes on unprinted
            self.session.remove_listener(self._on_event)

    def _print(self, event: SessionEvent) -> None:
        match event:
            case TimelineEvent(event=e) if e.kind in SHOWN and not internal(e):
                with self._lock:
                    self.console.print(f"[dim]{e.t:7.1f}s[/] {e.kind:<17} {said(e)}", highlight=False)
            case RunMessage(text=text) if not self.console.is_terminal:
                with self._lock:
                    self.console.print(f"        {text}", highlight=False)

    def run(self) -> RunResult:
        """The run to its end; a signal stops it (its files written) and raises
        :class:`~kafkalab.labs.session.Interrupted`, which carries the stopped run's result."""
        lab = self.session.lab
        self.console.print(f"[bold]{lab.id}[/]: {lab.title}", highlight=False)
        if not self.console.is_terminal:
            return self.session.run(on_stop=self._end_jvm_now)
        columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
        with Progress(*columns, console=self.console, transient=True) as bar:
            task = bar.add_task("starting", total=1.0)

            def tick() -> None:
                st = self.session.state()
                done = st.producer.progress if st.producer is not None else 0.0
                bar.update(task, completed=done, description=f"{st.phase}: {st.message}"[:70])

            return self.session.run(on_tick=tick, tick_s=0.25, on_stop=self._end_jvm_now)

    def _end_jvm_now(self) -> None:
        """A signal stopped the run: its Spark JVM is ended now, in a thread beside the run's teardown (a
        stopped run has no analysis to come; ending it after the teardown added its second or so to the exit)."""
        from kafkalab.analysis.spark_session import end_jvm

        self._jvm_ending = threading.Thread(target=end_jvm, name="kafkalab-end-jvm", daemon=True)
        self._jvm_ending.start()

    def close(self) -> None:
        """Whatever ended the run: the Spark session this runner started, and its JVM, ended and waited for
        (no JVM outlives the command, even after a Ctrl-C during the analysis). Not session.close(): its Spark
        stop waits for a warm-up under way (a minute on a loaded machine, after a Ctrl-C during the start)."""
        self.session.stop_run()
        from kafkalab.analysis.spark_session import end_jvm

        if self._jvm_ending is not None:
            self._jvm_ending.join()  # end_jvm's waits are bounded
        end_jvm()


def internal(e: Event) -> bool:
    """An event of Kafka's own topics (``__consumer_offsets``...), not shown while a run goes on."""
    return isinstance(e, PartitionEvent) and e.topic.startswith("__")


def write_json(path: Path, results: list[RunResult]) -> None:
    data = [r.as_dict() for r in results]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data[0] if len(data) == 1 else data, indent=2) + "\n", encoding="utf-8")


def catalog_rows() -> list[dict[str, Any]]:
    """One row per catalog lab: number, id, title, teaches, short, offers (``fix`` for a [fix] table,
    ``incident`` for an [incident]), platforms (every mode and Kafka version it runs on) and runs_on (the same
    as `kafkalab labs` words it)."""
    rows = []
    for number, path in enumerate(catalog(), start=1):
        lab = load_lab(path)
        offers = [name for name, table in (("fix", lab.fix), ("incident", lab.incident)) if table is not None]
        rows.append({"number": number, "id": lab.id, "title": lab.title, "teaches": lab.teaches,
                     "short": lab.short, "offers": offers, "path": str(path),
                     "platforms": [{"mode": m, "kafka_version": v} for m, v in lab.cluster.platforms()],
                     "runs_on": lab.platform_words.splitlines()})
    return rows
