"""The numbers expectations are checked against, gathered from the report, the clients and the timeline."""

from __future__ import annotations

import csv
import fnmatch
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from kafkalab.analysis.report import Report
from kafkalab.clients.payload_log import TOMBSTONE, log_files
from kafkalab.clients.processor import ProcessorStats
from kafkalab.clients.stats import ClientState, ConsumerStats, ProducerStats
from kafkalab.cluster.spec import CONTROLLER_ID_BASE
from kafkalab.labs.events import ClientRecord, EventKind, ProducerResumed, QuorumLeaderChange
from kafkalab.labs.failover import Leadership, leadership, went_away
from kafkalab.labs.measured import Measured, Unmeasured, num
from kafkalab.labs.model import Lab
from kafkalab.labs.results import Phase
from kafkalab.labs.timeline import Timeline
from kafkalab.logformat import CONTROL_VALUES, COURSE_LOG_GLOBS, CourseLine, parse_course_line


def producer_metrics(stats: ProducerStats | None) -> dict[str, float]:
    if stats is None:
        return {}
    out = {"producer.acked": stats.acked, "producer.attempted": stats.attempted,
           "producer.failed": stats.failed_total}
    out |= {f"producer.failed.{name}": count for name, count in stats.failed.items()}
    return {k: float(v) for k, v in out.items()}


def processor_metrics(instances: Sequence[ProcessorStats]) -> dict[str, float]:
    """The processor's counters, summed over its instances (a crashed one's and the one started after)."""
    if not instances:
        return {}
    out = {"processor.consumed": sum(s.received for s in instances),
           "processor.produced": sum(s.produced for s in instances),
           "processor.failed": sum(s.failed for s in instances)}
    if instances[-1].transactional:
        out |= {"processor.transactions.committed": sum(s.transactions_committed for s in instances),
                "processor.transactions.aborted": sum(s.transactions_aborted for s in instances),
                "processor.fenced": sum(s.fenced for s in instances)}
    return {k: float(v) for k, v in out.items()}


def consumer_metrics(instances: Mapping[int, list[ConsumerStats]], groups: Mapping[int, str]) -> dict[str, float]:
    """Per consumer (its latest instance; ``processed`` over all its instances), per group, in total."""
    out: dict[str, float] = {}
    total = 0
    for local_id, stats in instances.items():
        processed = sum(s.processed for s in stats)
        total += processed
        latest = stats[-1]
        out[f"consumer.{local_id}.processed"] = processed
        out[f"consumer.{local_id}.received"] = sum(s.received for s in stats)
        out[f"consumer.{local_id}.partitions"] = len(latest.assignment) if latest.state == ClientState.RUNNING else 0
        if waits := [s.lso_wait_s for s in stats if s.lso_wait_s is not None]:  # read_committed instances only
            out[f"consumer.{local_id}.lso_wait_s"] = max(waits)
        key = f"group.{groups[local_id]}.processed"
        out[key] = out.get(key, 0) + processed
    out["consumers.processed"] = total
    return out


# what only a kafkalab client's internals tell (its callbacks, its delivery reports): not observed when a foreign
# command plays the role, whatever the timeline or its stats would say (fnmatch patterns; {id}: a consumer's id)
PRODUCER_INTERNALS = ("producer.attempted", "producer.failed", "producer.failed.*", "producer.stalls",
                      "producer.longest_stall_s")
CONSUMER_INTERNALS = ("consumer.{id}.assign_wait_s", "consumer.{id}.fatal_error", "consumer.{id}.received",
                      "consumer.{id}.lso_wait_s")
CONSUMER_REPORTED = ("consumer.{id}.assign_wait_s",)  # from its reported rebalances
GROUP_REPORTED = ("group.{group}.revoked", "group.{group}.pause_s", "group.{group}.stopped_s", "timeline.rebalances")
GROUP_INTERNALS = ("group.{group}.revoked", "group.{group}.pause_s",
                   "group.{group}.stopped_s", "timeline.rebalances")


def foreign_blind(lab: Lab, reporting: Collection[str] = ()) -> list[str]:
    """The metrics the lab's expectations (its own and its fix's) name that a foreign role hides from kafkalab.
    ``reporting``: the roles whose client reports what only it knows (clients/foreign.py), as kafkalab's Java
    clients do: a producer's attempts, failures and stalls; a consumer's rebalances (its assignment wait, its
    group's pauses)."""
    patterns: list[str] = []
    if lab.producer.command and "producer" not in reporting:
        patterns += PRODUCER_INTERNALS
    for c in lab.consumers:
        if c.command:
            told = c.name in reporting
            patterns += [p.format(id=c.local_id) for p in CONSUMER_INTERNALS
                         if not (told and p in CONSUMER_REPORTED)]
            patterns += [p.format(group=c.group) for p in GROUP_INTERNALS if not (told and p in GROUP_REPORTED)]
    return sorted(n for n in lab.judged_metrics if any(fnmatch.fnmatchcase(n, p) for p in patterns))


def timeline_metrics(timeline: Timeline, topics: set[str], consumers: Iterable[int]) -> dict[str, Measured]:
    facts = leadership(timeline.events(), topics)
    out: dict[str, Measured] = {
        "timeline.leader_changes": facts.changes.total,
        "timeline.isr_shrinks": timeline.count(EventKind.ISR_SHRINK, topics),
        "timeline.isr_expands": timeline.count(EventKind.ISR_EXPAND, topics),
        "timeline.offline": timeline.count(EventKind.OFFLINE, topics),
        "producer.stalls": timeline.count(EventKind.PRODUCER_STALLED),
        "timeline.controller_changes": timeline.count(EventKind.CONTROLLER_CHANGE),
    }
    stalls = [e.stalled_s for e in timeline.events(EventKind.PRODUCER_RESUMED) if isinstance(e, ProducerResumed)]
    out["producer.longest_stall_s"] = max(stalls, default=0.0)
    if (failover := failover_s(facts)) is not None:
        out["timeline.failover_s"] = failover
    per_client: dict[str, int] = {}
    for e in _assignments(timeline):
        per_client[e.source] = per_client.get(e.source, 0) + 1
    out["timeline.rebalances"] = sum(n - 1 for n in per_client.values())
    for local_id in consumers:
        out[f"consumer.{local_id}.assign_wait_s"] = assign_wait(timeline, f"consumer-{local_id}")
        out[f"consumer.{local_id}.fatal_error"] = 1.0 if fatal_error(timeline, f"consumer-{local_id}") else 0.0
    return out


def failover_s(facts: Leadership) -> Measured | None:
    """The longest failover's seconds; never, when a fault took a leader and no broker took over; None (the
    metric is not observed) when no fault took a leader of the lab's topics."""
    if facts.leaderless:
        return Unmeasured.NEVER
    longest = facts.longest
    return longest.seconds if longest is not None else None


def failover_summary(timeline: Timeline, topics: set[str]) -> str:
    """The run's failovers in words for its verdict, on one line ("" without one): the lines of
    :meth:`~kafkalab.labs.failover.Leadership.lines`, as Results and presenter mode show them."""
    return "; ".join(leadership(timeline.events(), topics).lines())


def assign_wait(timeline: Timeline, name: str) -> Measured:
    """Seconds from the latest launch of consumer ``name`` to its first partitions; never, if none came (not
    observed, if it was never launched)."""
    launches = [e for e in timeline.events(EventKind.CONSUMER_LAUNCH) if e.source == name]
    if not launches:
        return Unmeasured.NOT_OBSERVED
    since = launches[-1].t
    for e in _assignments(timeline, since):
        if e.source == name:
            return round(e.t - since, 2)
    return Unmeasured.NEVER


# librdkafka's name for an error it gave up on (a fatal error: the client can do nothing more, e.g. its
# group refused its group.instance.id); the consumer writes an error as "NAME: text"
FATAL_ERROR = "_FATAL"


def fatal_error(timeline: Timeline, name: str) -> bool:
    """Whether the latest instance of consumer ``name`` (since its latest launch) reported a fatal error."""
    launches = [e.t for e in timeline.events(EventKind.CONSUMER_LAUNCH) if e.source == name]
    since = launches[-1] if launches else float("-inf")
    return any(e.source == name and error_name(e.detail) == FATAL_ERROR
               for e in timeline.events(EventKind.CONSUMER_ERROR, since=since))


def error_name(detail: str) -> str:
    """The error's name in a client's error line ``NAME: text`` (``_FATAL``, ``UNKNOWN_MEMBER_ID``...)."""
    return detail.split(":", 1)[0].strip()


def _assignments(timeline: Timeline, since: float = float("-inf")) -> list[ClientRecord]:
    """Consumers' ``assigned`` events that gave them partitions."""
    return [e for e in timeline.events(EventKind.CONSUMER_ASSIGNED, since=since)
            if isinstance(e, ClientRecord) and e.partitions]


_MEMBERSHIP = (EventKind.CONSUMER_ASSIGNED, EventKind.CONSUMER_REVOKED, EventKind.CONSUMER_LOST)


def rebalance_metrics(timeline: Timeline, groups: Mapping[str, str]) -> dict[str, float]:
    """Per group, from its consumers' assigned / revoked / lost callbacks while the producer runs (from the
    running phase until the run drains; ``groups``: consumer name -> group), what its rebalances stopped:

    - ``group.G.revoked``: partitions taken from a consumer (revoked or lost), each time;
    - ``group.G.pause_s``: the longest a partition then had no consumer, until one was assigned it;
    - ``group.G.stopped_s``: the longest time no consumer of the group held any partition once it had
      begun (a stop-the-world rebalance; 0 when some partitions always kept their consumer).
    """
    phases = timeline.events(EventKind.PHASE)
    since = min((e.t for e in phases if e.detail == Phase.RUNNING), default=float("inf"))
    until = min((e.t for e in phases if e.detail == Phase.DRAINING), default=float("inf"))
    moves = sorted((e for e in timeline.events() if e.kind in _MEMBERSHIP and e.source in groups
                    and since <= e.t < until and isinstance(e, ClientRecord)), key=lambda e: e.t)
    out: dict[str, float] = {}
    for group in sorted(set(groups.values())):
        owner = _owners(timeline, groups, group, since)
        ownerless_since: dict[int, float] = {}
        revoked, pause, stopped = 0, 0.0, 0.0
        empty_since: float | None = None
        for e in (m for m in moves if groups[m.source] == group):
            if e.kind == EventKind.CONSUMER_ASSIGNED:
                for p in e.partitions:
                    owner[p] = e.source
                    if p in ownerless_since:
                        pause = max(pause, e.t - ownerless_since.pop(p))
                if empty_since is not None and owner:
                    stopped, empty_since = max(stopped, e.t - empty_since), None
                continue
            for p in e.partitions:
                if owner.get(p) == e.source:
                    del owner[p]
                    ownerless_since[p] = e.t
                    revoked += 1
            if not owner and ownerless_since:
                empty_since = e.t if empty_since is None else empty_since
        out |= {f"group.{group}.revoked": float(revoked), f"group.{group}.pause_s": round(pause, 3),
                f"group.{group}.stopped_s": round(stopped, 3)}
    return out


def rebalance_summary(values: Mapping[str, Measured]) -> str:
    """The groups' rebalance pauses side by side, from :func:`rebalance_metrics`' values."""
    groups = sorted(k.split(".")[1] for k in values if k.startswith("group.") and k.endswith(".stopped_s"))
    parts = []
    for g in groups:
        stopped = values[f"group.{g}.stopped_s"]
        held = f"no partition held for {seconds(stopped)}" if stopped else "never stopped"
        parts.append(f"{g}: {held}, {num(values[f'group.{g}.revoked'])} partitions revoked, "
                     f"a partition waited up to {seconds(values[f'group.{g}.pause_s'])}")
    return "rebalance pause per group: " + "; ".join(parts) if parts else ""


WAIT_SUFFIXES = (".assign_wait_s", ".fatal_error")


def seconds(value: Measured) -> str:
    """"8.2 s", or "never" / "not observed"."""
    return str(value) if isinstance(value, Unmeasured) else f"{value:.1f} s"


def assign_wait_summary(values: Mapping[str, Measured], groups: Mapping[int, str]) -> str:
    """How long each consumer of ``groups`` (local id -> group, in the order given) waited for its first
    partitions, from :func:`timeline_metrics`' values; one refused by a fatal error is said so."""
    parts = []
    for local_id, group in groups.items():
        wait = values.get(f"consumer.{local_id}.assign_wait_s", Unmeasured.NOT_OBSERVED)
        waited = "never got any" if wait == Unmeasured.NEVER else seconds(wait)
        if values.get(f"consumer.{local_id}.fatal_error"):
            said = "fatal error, " + (waited if isinstance(wait, Unmeasured) else f"yet {waited}")
        else:
            said = waited
        parts.append(f"consumer-{local_id} ({group}) {said}")
    return "how long each consumer waited for its first partitions: " + "; ".join(parts) if parts else ""


def voter_node(node_id: int) -> str:
    """A KRaft voter's node name: a dedicated controller is node 101.. (controller-1..), a combined voter is
    the broker of its id."""
    index = node_id - CONTROLLER_ID_BASE
    return f"controller-{index}" if index > 0 else f"broker-{node_id}"


def controller_summary(timeline: Timeline) -> str:
    """KRaft's active controller changes, for the verdict: from -> to, when, and how long the quorum was left
    without a leader when the timeline shows the old one going down (its kill, stop or pause, or its network
    isolation) before the new one was seen: an upper bound, the new leader being seen by a poll (DescribeQuorum),
    not as elected.
    Empty without a change (and in ZooKeeper mode, whose controller changes are brokers')."""
    events = sorted(timeline.events(), key=lambda e: e.t)
    parts = []
    for change in (e for e in events if isinstance(e, QuorumLeaderChange)):
        epoch = f" (epoch {change.epoch})" if change.epoch is not None else ""
        part = f"{_node(change.previous)} -> {change.controller} at {change.t:.1f} s{epoch}"
        gone = went_away(events, voter_node(change.previous), change.t) if change.previous is not None else None
        if gone is not None:
            part += (f": no active controller for at most {change.t - gone.t:.1f} s "
                     f"({change.previous} {gone.how} at {gone.t:.1f} s)")
        parts.append(part)
    if not parts:
        return ""
    return ("active controller " if len(parts) == 1 else "active controller changes: ") + "; ".join(parts)


def _node(node_id: int | None) -> str:
    return "?" if node_id is None else str(node_id)


def _owners(timeline: Timeline, groups: Mapping[str, str], group: str, until: float) -> dict[int, str]:
    """Partition -> consumer of ``group`` holding it at ``until``."""
    owner: dict[int, str] = {}
    for e in sorted(timeline.events(), key=lambda e: e.t):
        if e.t >= until or e.kind not in _MEMBERSHIP or groups.get(e.source) != group:
            continue
        assert isinstance(e, ClientRecord)
        for p in e.partitions:
            if e.kind == EventKind.CONSUMER_ASSIGNED:
                owner[p] = e.source
            elif owner.get(p) == e.source:
                del owner[p]
    return owner


def report_metrics(report: Report) -> dict[str, Measured]:
    """The report's classes and totals as metrics. A class the analysis could not tell (None: no audit log, or
    course-format logs, which carry no sequence numbers) is not observed, never the 0 an absent count reads as."""
    from kafkalab.labs.expectations import REPORT_METRICS

    out: dict[str, Measured] = {}
    for name in REPORT_METRICS:
        value = report.classes[name] if name in report.classes else report.totals.get(name)
        if isinstance(value, int | float):
            out[name] = float(value)
        elif name in report.classes:
            out[name] = Unmeasured.NOT_OBSERVED
    return out


def group_metrics(run_dir: Path, lab: Lab) -> dict[str, Measured]:
    """``group.G.distinct``: the distinct records each group processed, read from its consumers' payload logs,
    kafkalab's (by message id) and the course format a foreign client writes (by topic, partition, key and
    value). A group with a foreign consumer that left no payload log at all was not observed. With a lab judged on
    it, ``group.G.deleted_kept`` too (:func:`deleted_kept`)."""
    seen: dict[str, set[object]] = {}
    unseen: set[str] = set()
    for group, path in _own_consumer_logs(run_dir, lab):
        seen.setdefault(group, set()).update(_msg_ids(path))
    for c in lab.consumers:
        if c.command:
            logs = [log for pattern in COURSE_LOG_GLOBS for log in (run_dir / c.name).glob(pattern)]
            if logs:  # an empty one is a consumer that processed nothing: 0, observed
                seen.setdefault(c.group, set()).update(r for log in logs for r in _records(log))
            elif (run_dir / c.name).is_dir():  # it ran and logged nothing at all
                unseen.add(c.group)
    out: dict[str, Measured] = {f"group.{group}.distinct": float(len(ids)) for group, ids in seen.items()}
    out |= {f"group.{group}.distinct": Unmeasured.NOT_OBSERVED for group in unseen}
    if any(name.endswith(DELETED_KEPT) for name in lab.judged_metrics):
        out |= deleted_kept(run_dir, lab)
    return out


DELETED_KEPT = ".deleted_kept"


def deleted_kept(run_dir: Path, lab: Lab) -> dict[str, Measured]:
    """``group.G.deleted_kept``: keys of the producer's topic whose last acknowledged write was a tombstone, yet
    whose last record the group processed (the highest offset) has a value: a cache the group feeds still holds
    what was deleted. A key the group never processed is not counted. Not observed without kafkalab's own
    producer, or for a group with a foreign consumer (a course log cannot tell a tombstone)."""
    groups = {c.group for c in lab.consumers}
    foreign = {c.group for c in lab.consumers if c.command}
    if lab.producer.command:
        return {f"group.{g}{DELETED_KEPT}": Unmeasured.NOT_OBSERVED for g in groups}
    deleted = _deleted_keys(run_dir, lab.topic)
    held: dict[str, dict[str, tuple[int, bool]]] = {g: {} for g in groups - foreign}  # key -> (offset, valued)
    for group, path in _own_consumer_logs(run_dir, lab):
        if group not in foreign:
            _last_by_key(path, lab.topic, held[group])
    out: dict[str, Measured] = {f"group.{g}{DELETED_KEPT}": Unmeasured.NOT_OBSERVED for g in foreign}
    for group, last in held.items():
        out[f"group.{group}{DELETED_KEPT}"] = float(sum(1 for k in deleted if last.get(k, (0, False))[1]))
    return out


def _deleted_keys(run_dir: Path, topic: str) -> set[str]:
    """The keys of ``topic`` whose last acknowledged write (in the producer's send order) was a tombstone."""
    last: dict[str, tuple[int, bool]] = {}  # key -> (seq, tombstone)
    for path in log_files(run_dir, "producer"):
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                if row["topic"] == topic and row["status"] == "acked":
                    seq = int(row["seq"])
                    if seq >= last.get(row["key"], (-1, False))[0]:
                        last[row["key"]] = (seq, row["value"] == TOMBSTONE)
    return {key for key, (_, tombstone) in last.items() if tombstone}


def _last_by_key(path: Path, topic: str, last: dict[str, tuple[int, bool]]) -> None:
    """Fold a consumer log's records of ``topic`` into ``last``: key -> (offset, has a value) of the highest
    offset processed (a key stays on its partition)."""
    with open(path, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["topic"] == topic:
                offset = int(row["offset"])
                if offset >= last.get(row["key"], (-1, False))[0]:
                    last[row["key"]] = (offset, row["value"] != TOMBSTONE)


def _own_consumer_logs(run_dir: Path, lab: Lab) -> Iterator[tuple[str, Path]]:
    """kafkalab's consumers' payload logs, consumer-N.csv (consumer.csv: a tail's), each with its group."""
    groups = {c.local_id: c.group for c in lab.consumers}
    for path in log_files(run_dir, "consumer"):
        if path.name.split(".")[0] != "consumer":
            yield groups[int(path.name.split("-")[1].split(".")[0])], path


def _msg_ids(path: Path) -> set[str]:
    with open(path, encoding="utf-8", newline="") as fh:
        return {row["msg_id"] for row in csv.DictReader(fh) if row.get("msg_id")}


def _records(path: Path) -> set[CourseLine]:
    """A course log's processed records (a control record is obeyed, not processed)."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = (parse_course_line(line.rstrip("\r\n")) for line in fh)
        return {r for r in lines if r is not None and r.value not in CONTROL_VALUES}
