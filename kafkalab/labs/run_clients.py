"""One run's producer, processor and consumers: started, stopped, waited for, drained and closed.

A consumer (or the processor) started again (a ``start`` fault after a crash) is a new instance of its plan: its
instances are kept in order, the latest is the live one, and counters sum over all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafkalab.clients import ClientEvent, ClientState, Consumer, ConsumerStats, Producer, ProducerStats
from kafkalab.clients.child_client import ChildClient
from kafkalab.clients.foreign import STOP_GRACE_S, ForeignConsumer, ForeignProducer
from kafkalab.clients.foreign_command import RoleValues
from kafkalab.clients.processor import Processor, ProcessorStats
from kafkalab.clients.processor_logs import instance_log_name, settle
from kafkalab.cluster.netwiring import PRODUCER
from kafkalab.errors import KafkalabError
from kafkalab.labs import metrics
from kafkalab.labs.events import EventKind
from kafkalab.labs.failover import lab_topics
from kafkalab.labs.foreign_groups import ForeignGroupWatch
from kafkalab.labs.measured import Measured, Unmeasured
from kafkalab.labs.model import ConsumerPlan, Lab
from kafkalab.labs.run_deps import RunDeps
from kafkalab.labs.timeline import Timeline

CLEAN_CLOSE_S = 1.5  # an ended run's consumers close cleanly within this, or are killed
# a stopped run's clients end (logs written, no close) within this, or are killed: a Ctrl-C's exit is ~1-2 s;
# their own end takes 0.3-1 s on 2 loaded cores (a Python process exiting, niced for the producer)
STOPPED_END_S = 1.2
# the states a drain waits on: a client started again just before (a `start` fault) is waited for too
_DRAINED = (ClientState.STARTING, ClientState.RUNNING)


def act_on(client: Consumer | ForeignConsumer | Processor, action: str) -> None:
    """A fault's ``stop``, ``crash``, ``pause`` or ``resume`` on a running consumer or processor."""
    {"stop": client.stop, "crash": client.crash, "pause": client.pause, "resume": client.resume}[action]()


@dataclass
class RunClients:
    lab: Lab
    run_dir: Path
    bootstrap: str
    timeline: Timeline
    deps: RunDeps
    sleep: Callable[[float], None]  # waits; raises when the run is stopped
    say: Callable[[str], None]  # tells what the run is doing
    producer: Producer | ForeignProducer | None = None
    consumers: dict[int, list[Consumer | ForeignConsumer]] = field(default_factory=dict)
    processors: list[Processor] = field(default_factory=list)  # the lab's processor's instances, the live one last
    # told each client process as it starts (its name, its pid): the network-fault proxy's names for them
    on_started: Callable[[str, int], None] | None = None
    admin_bootstrap: str = ""  # kafkalab's own path to the brokers (not through the proxies): foreign groups' facts
    _groups: ForeignGroupWatch | None = None

    # ---- the producer ----------------------------------------------------------------------------
    def make_producer(self, seed: int) -> None:
        plan = self.lab.producer
        if plan.command is not None:
            values = self._role_values("producer", plan.config.topic, plan.settings)
            self.producer = ForeignProducer(plan.config, plan.command, values, self.timeline.add_client_event)
            return
        self.producer = self.deps.producer(plan, self.run_dir, self.bootstrap, self.timeline.add_client_event, seed)

    def _role_values(self, role: str, topic: str, settings: Mapping[str, str]) -> RoleValues:
        """What a foreign command playing ``role`` is told: the lab's bootstrap (through the proxies), its topic,
        and its course options (the cluster's bootstrap and the topic among them, as the course's apps read them)."""
        options = {"bootstrap.server": self.bootstrap, f"{role}.topic": topic, **settings}
        return RoleValues(self.bootstrap, topic, options, self.run_dir)

    def start_producer(self) -> None:
        producer = self.producer
        if producer is not None and producer.stats().state == ClientState.STARTING and not producer.running:
            self.say("producer started")
            producer.start()
            self._started(PRODUCER, producer)

    def stop_producer(self) -> None:
        if self.producer is not None:
            self.producer.stop(drain=True)

    def producer_stats(self) -> ProducerStats | None:
        return self.producer.stats() if self.producer is not None else None

    def wait_producer(self, past_deadline: Callable[[], bool]) -> None:
        """Until the producer ended; KafkalabError when it failed or the lab ran past its time limit."""
        if self.producer is None:
            return
        while self.producer.running:
            if past_deadline():
                self.producer.stop(drain=False)
                raise KafkalabError(f"the lab ran past its {self.lab.max_duration_s:.0f}s limit with the "
                                    "producer still sending")
            self.sleep(self.deps.timing.tick_s * 2)
        stats = self.producer.stats()
        if stats.state == ClientState.FAILED:
            raise KafkalabError(f"the producer failed: {stats.error}")

    # ---- the consumers ---------------------------------------------------------------------------
    def start_consumer(self, plan: ConsumerPlan) -> bool:
        """A new instance of ``plan`` unless one is running; True when one was started."""
        instances = self.consumers.setdefault(plan.local_id, [])
        if instances and instances[-1].running:
            return False
        consumer: Consumer | ForeignConsumer
        if plan.command is not None:
            values = self._role_values("consumer", plan.config.topic, plan.settings)
            consumer = ForeignConsumer(plan.config, plan.command, values, self.timeline.add_client_event)
            if self._groups is None:
                self._groups = ForeignGroupWatch(self.admin_bootstrap or self.bootstrap, self.lab.topic,
                                                 self.run_dir / "foreign-groups.log")
            self._groups.watch(consumer)
        else:
            consumer = self.deps.consumer(plan, self.run_dir, self.bootstrap, self.timeline.add_client_event)
        instances.append(consumer)
        self.timeline.say(EventKind.CONSUMER_LAUNCH, plan.name, f"{plan.name} started (group {plan.group})")
        consumer.start()
        self._started(plan.name, consumer)
        return True

    def _started(self, name: str, client: ChildClient) -> None:
        if self.on_started is not None and client.pid is not None:
            self.on_started(name, client.pid)

    def act_on_consumer(self, local_id: int, action: str) -> bool:
        """A fault's stop, crash, pause or resume on the running instance of consumer ``local_id``; False when
        none runs."""
        instances = self.consumers.get(local_id)
        if not instances or not instances[-1].running:
            return False
        act_on(instances[-1], action)
        return True

    def wait_assigned(self, local_id: int) -> None:
        self._wait_assigned(self.consumers[local_id][-1])

    def _wait_assigned(self, client: Consumer | ForeignConsumer | Processor) -> None:
        timeout = self.deps.timing.assign_timeout_s
        deadline = time.monotonic() + timeout
        while not (stats := client.stats()).assignment:
            if stats.state.ended:
                raise KafkalabError(f"{client.name} ended before it got partitions: {stats.error or stats.state}")
            if time.monotonic() > deadline:
                raise KafkalabError(f"{client.name} got no partitions within {timeout:.0f}s")
            self.sleep(self.deps.timing.tick_s)

    # ---- the processor ---------------------------------------------------------------------------
    def start_processor(self, wait_assigned: bool = False) -> bool:
        """A new instance of the lab's processor unless one runs unpaused; True when one was started. Beside a
        paused one (a zombie: it wakes later) the new one takes over its partitions once the paused one's group
        session lapses. With ``wait_assigned``, returns once it has partitions."""
        plan = self.lab.processor
        if plan is None or any(p.running and not p.paused for p in self.processors):
            return False
        processor = Processor(plan.config, self.run_dir, self.bootstrap, self.timeline.add_client_event,
                              log_name=self._next_log_name(plan.config.name))
        self.processors.append(processor)
        beside = " beside the paused one" if any(p.paused for p in self.processors) else ""
        self.say(f"processor started{beside} ({plan.config.topic} -> {plan.config.output_topic})")
        processor.start()  # not named to the network-fault proxy: no fault takes the processor as a source
        if wait_assigned:
            self._wait_assigned(processor)
        return True

    def _next_log_name(self, name: str) -> str:
        """The logs a new instance writes: the last instance's when no running one holds them (appended, as a
        restarted app appends), else logs of its own (:func:`~kafkalab.clients.processor_logs.instance_log_name`)."""
        if not self.processors:
            return name
        last = self.processors[-1].log_name
        held = {p.log_name for p in self.processors if p.running}
        return instance_log_name(name, len(self.processors) + 1) if last in held else last

    def processor_action(self, action: str) -> bool:
        """A fault's ``start``, ``stop``, ``crash``, ``pause`` or ``resume`` on the processor: ``resume`` wakes every
        paused instance, the others act on the live (latest running) one; False when there is nothing to do."""
        if action == "start":
            return self.start_processor()
        running = [p for p in self.processors if p.running]
        targets = [p for p in running if p.paused] if action == "resume" else running[-1:]
        for processor in targets:
            act_on(processor, action)
        return bool(targets)

    def processor_stats(self) -> list[ProcessorStats]:
        """Each instance's, the live one last."""
        return [p.stats() for p in list(self.processors)]

    def latest_stats(self) -> dict[str, ConsumerStats]:
        """Each consumer's live (latest) instance, by name."""
        return {c.name: c.stats() for cs in list(self.consumers.values()) for c in cs[-1:]}

    def consumed(self, local_id: int | None) -> int:
        """Records processed by consumer ``local_id`` (every consumer when None), over all its instances."""
        return sum(c.stats().processed for i, cs in list(self.consumers.items()) if local_id in (None, i) for c in cs)

    def assignment(self, local_id: int) -> tuple[int, ...]:
        instances = self.consumers.get(local_id)
        return instances[-1].stats().assignment if instances else ()

    def drain(self) -> None:
        """Let the processor, then the running consumers, catch up (lag 0, nothing new for a while), at most the
        lab's ``drain_s`` in all; each then closed (the processor before the consumers wait for its output)."""
        deadline = time.monotonic() + self.lab.drain_s
        self._end_paused()
        if processors := self._running_processor():
            self.say("draining the processor: it catches up, then closes")
            self._catch_up(deadline, lambda: [p.stats() for p in processors])
            self._close_drained(processors)
            self._settle_processor_logs()
        running = [cs[-1] for cs in self.consumers.values() if cs and cs[-1].running]
        self.say(f"draining {len(running)} consumer{'s' if len(running) != 1 else ''}: they catch up, then close")
        self._catch_up(deadline, lambda: [c.stats() for c in running])
        self._quit_foreign([c for c in running if isinstance(c, ForeignConsumer)])
        self._close_drained(running)

    def _catch_up(self, deadline: float, stats_of: Callable[[], Sequence[ConsumerStats | ProcessorStats]]) -> None:
        """Until every running one's assigned partitions have a known lag of 0, its group owns every partition,
        and nothing new was processed for ``drain_quiet_s``; or ``deadline``."""
        timing = self.deps.timing
        last, quiet_since = -1, time.monotonic()
        while (stats := stats_of()) and time.monotonic() < deadline:
            processed = sum(s.processed if isinstance(s, ConsumerStats) else s.received for s in stats)
            if processed != last:
                last, quiet_since = processed, time.monotonic()
            caught_up = all(  # every assigned partition's lag known and zero; one still starting has none yet
                s.assignment and set(s.assignment) <= set(s.lag) and s.total_lag == 0
                for s in stats if s.state in _DRAINED) and self._groups_cover(stats)
            if caught_up and time.monotonic() - quiet_since >= timing.drain_quiet_s:
                break
            self.sleep(timing.drain_poll_s)

    @staticmethod
    def _close_drained(running: Sequence[Consumer | ForeignConsumer | Processor]) -> None:
        for c in running:
            c.stop()
        for c in running:
            if not c.join(20):
                c.crash()
                c.join(5)

    def _quit_foreign(self, foreign: list[ForeignConsumer]) -> None:
        """Foreign consumers end as the course ends its consumers: a ``quit`` record to every partition. One that
        has not ended within its grace is stopped (SIGTERM, then SIGKILL), and the timeline says it ignored quit."""
        if not foreign:
            return
        try:
            self.deps.send_control(self.admin_bootstrap or self.bootstrap, self.lab.topic, "quit")
        except KafkalabError as exc:
            self.say(f"could not send quit to the foreign consumers ({exc}): stopping them by signal")
            return
        deadline = time.monotonic() + STOP_GRACE_S
        for c in foreign:
            if not c.join(max(0.0, deadline - time.monotonic())):
                self.timeline.add_client_event(ClientEvent(time.time(), c.name, "note",
                                                           f"{c.name} did not end on quit within "
                                                           f"{STOP_GRACE_S:.0f}s: stopped by signal"))

    def _groups_cover(self, stats: Sequence[ConsumerStats | ProcessorStats]) -> bool:
        """Each group with a running member owns every partition of its topic: partitions a crashed member
        held are someone's again (after its session timed out) before the drain may end, or its records
        would count as lost when the lesson is their redelivery."""
        partitions = {t.name: t.partitions for t in self.lab.topics}
        topic_of = {c.group: c.config.topic for c in self.lab.consumers}  # a group reads one topic
        owned: dict[str, set[int]] = {}
        for s in stats:
            if s.state == ClientState.RUNNING:
                owned.setdefault(s.group, set()).update(s.assignment)
        return all(len(parts) >= partitions.get(topic_of.get(group, self.lab.topic), 0)
                   for group, parts in owned.items())

    # ---- both ------------------------------------------------------------------------------------
    def live_metrics(self) -> dict[str, Measured]:
        """What is known while the run goes on: clients' counters and the timeline's counts."""
        out: dict[str, Measured] = {**metrics.producer_metrics(self.producer_stats())}
        instances = {i: [c.stats() for c in cs] for i, cs in list(self.consumers.items()) if cs}
        groups = {c.local_id: c.group for c in self.lab.consumers}
        out |= metrics.consumer_metrics(instances, groups)
        out |= metrics.timeline_metrics(self.timeline, lab_topics(self.lab),
                                        [c.local_id for c in self.lab.consumers])
        out |= metrics.rebalance_metrics(self.timeline, {c.name: c.group for c in self.lab.consumers})
        if self.lab.processor is not None:
            out |= metrics.processor_metrics(self.processor_stats())
        out |= dict.fromkeys(metrics.foreign_blind(self.lab, self._reporting()), Unmeasured.NOT_OBSERVED)
        return out

    def _reporting(self) -> set[str]:
        """The roles whose foreign client reports what only it knows (every instance of a consumer did)."""
        reporting = {"producer"} if (stats := self.producer_stats()) is not None and stats.reports else set()
        for instances in list(self.consumers.values()):
            if instances and all(c.stats().reports for c in instances):
                reporting.add(instances[-1].name)
        return reporting

    def close(self, clean_s: float = CLEAN_CLOSE_S) -> None:
        """Whatever happened: the producer ended without draining; running consumers asked to close cleanly
        (their leave-group and final commit), crashed if not closed within ``clean_s`` (a paused broker can
        hold a close for its session timeout)."""
        self._end_paused()
        if self.producer is not None and self.producer.running:
            self.producer.stop(drain=False)
        running = [*self._running_consumers(), *self._running_processor()]
        for c in running:
            c.stop()
        deadline = time.monotonic() + clean_s
        for c in running:
            if not c.join(max(0.0, deadline - time.monotonic())):
                c.crash()
                c.join(5)
        if self.producer is not None and self.producer.running:
            self.producer.join(15)
        self._close_groups()
        self._settle_processor_logs()

    def _end_paused(self) -> None:
        """A client the lab left paused can neither catch up nor close (it is hung, as the lab left it): killed, and
        said so, rather than waited for."""
        clients: list[ChildClient] = [*self._running_consumers(), *self._running_processor()]
        if self.producer is not None:
            clients.append(self.producer)
        for client in clients:
            if client.paused:
                self.say(f"{client.name} is still paused at the run's end: killed (a hung process cannot close)")
                client.kill()
                client.join(5)

    def _running_consumers(self) -> list[Consumer | ForeignConsumer]:
        return [c for instances in self.consumers.values() for c in instances if c.running]

    def _settle_processor_logs(self) -> None:
        """Once every processor instance has ended: one row per message id over the produced logs of instances that
        ran side by side (:func:`~kafkalab.clients.processor_logs.settle`)."""
        plan = self.lab.processor
        if plan is None or all(p.log_name == plan.config.name for p in self.processors):
            return
        if any(p.running for p in self.processors):  # one a stop could not end: its file is still being written
            return
        if moved := settle(self.run_dir, plan.config.name):
            self.say(f"{moved} output records were sent by two processor instances side by side, so each is in the "
                     f"output topic twice: the later one's rows kept apart ({plan.config.name}.N-sent-again.csv)")

    def _running_processor(self) -> list[Processor]:
        return [p for p in self.processors if p.running]

    def _close_groups(self) -> None:
        if self._groups is not None:
            self._groups.close()
            self._groups = None

    def end_stopped(self, bound_s: float = STOPPED_END_S) -> None:
        """The run was stopped (Ctrl-C, the console's stop): every client ends now, its log written, none
        waited for past ``bound_s``. Consumers end without their close (a stop needs their files, not a
        leave-group or a commit on brokers being ended); the producer purges. One still running at the bound is
        killed, and said to have ended with the stop (a stop is not a crash: the timeline must not call it one)."""
        consumers = [*self._running_consumers(), *self._running_processor()]
        for consumer in consumers:
            consumer.end()
        clients: list[ChildClient] = list(consumers)
        if self.producer is not None and self.producer.running:
            self.producer.stop(drain=False)
            clients.append(self.producer)
        deadline = time.monotonic() + bound_s
        for c in clients:
            if not c.join(max(0.0, deadline - time.monotonic())):
                c.kill_stopped()
        for c in clients:
            c.join(2)
        self._close_groups()
        self._settle_processor_logs()
