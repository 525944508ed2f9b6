"""A run's audit: every partition of the lab's topic read back from the brokers, for the analysis.

Once the producer has finished and every node runs, the topic holds all it ever will, so the audit reads it
beside the consumers' drain and the report after the drain waits only for Spark. When a node is down, or any
node changed state while the early audit read, it reads after the drain; if a partition cannot be read without
a node that is down, that node is brought back for the read and put back down after it
(:mod:`kafkalab.labs.audit_heal`): the cluster stays as the lab left it.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kafkalab.cluster import NodeState
from kafkalab.labs.audit_heal import AuditHeal
from kafkalab.labs.events import EventKind
from kafkalab.labs.interruptible import in_thread
from kafkalab.labs.results import Phase
from kafkalab.labs.run_context import RunContext


class AuditStep:
    """``start_early`` when the drain begins; ``logs`` after it, for the analysis."""

    def __init__(self, run: RunContext) -> None:
        self.run = run
        self._thread: threading.Thread | None = None
        self._nodes_seen = 0  # node events on the timeline when the early audit began
        self._log: Path | None = None
        self._error: BaseException | None = None

    def start_early(self) -> None:
        """Start reading the topic back now, in a thread, if the lab audits and every node runs."""
        run = self.run
        if not run.lab.audit or any(n.state != NodeState.RUNNING for n in run.cluster.nodes):
            return
        self._nodes_seen = len(run.timeline.events(EventKind.NODE))
        run.say(f"reading every partition of {run.lab.topic} back while the consumers drain")
        self._thread = threading.Thread(target=self._read, name="kafkalab-audit", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        run = self.run
        try:
            self._log = run.deps.audit(run.cluster.bootstrap, run.lab.topic, run.run_dir)
        except BaseException as exc:  # handed to the run's thread by logs()
            self._error = exc

    def logs(self) -> list[Path]:
        """The audit logs for the analysis: the early audit's when it still stands, else one read now."""
        run = self.run
        if not run.lab.audit:
            return []
        if self._thread is not None:
            if self._thread.is_alive():
                run.set_phase(Phase.AUDITING)
                run.say(f"finishing the read of {run.lab.topic} (the audit)")
                while self._thread.is_alive():
                    run.sleep(run.deps.timing.tick_s)
            if len(run.timeline.events(EventKind.NODE)) == self._nodes_seen:  # no node changed state meanwhile
                if self._error is not None:
                    raise self._error
                assert self._log is not None
                return [self._log]
            run.say("a node changed state while the audit read: reading again")
        return [self._late()]

    def _late(self) -> Path:
        run = self.run
        run.set_phase(Phase.AUDITING)
        heal = AuditHeal(run)
        try:
            if run.lab.heal_before_audit:
                heal.bring_back()
            run.say(f"reading every partition of {run.lab.topic} back")
            return in_thread(lambda: run.deps.audit(run.cluster.bootstrap, run.lab.topic, run.run_dir), run.sleep,
                             run.deps.timing.tick_s, "audit")
        finally:  # whatever the read did, even when it failed: the evidence is the lab's state
            heal.put_back()
