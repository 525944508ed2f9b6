"""What the console saw during a run, kept in the run dir so the run can be replayed without a cluster.

``recording.jsonl`` beside ``timeline.json`` and ``report.json``: one JSON object a line, each with ``ts``
(epoch seconds; the replay puts it on the timeline's clock) and ``kind``:

- ``snapshot``: ``reachable``, ``controller``, ``brokers``, ``partitions`` as ``[topic, partition, leader,
  replicas, isr, min_isr]``, written only when a leader, an ISR, the controller or the live brokers changed;
- ``nodes``: ``[name, kind, broker_id, port, state, reason, pid, restarts, cause]`` per node, when one changed
  (``cause``: why it is down or stopping, null while it starts, runs or is paused; absent in older runs);
- ``quorum`` (KRaft): the DescribeQuorum answer as ``QuorumState.as_dict`` gives it, when it became reachable
  or not, its active controller or epoch changed, or a voter's log end offset became known or unknown;
- ``clients``: the producer's and consumers' stats, every ``SAMPLE_S`` while they change: the fields that
  changed only (``consumers`` by name), the first line has them all;
- ``processor`` (a lab with a processor): its instances' stats the same way, ``instances`` by their number
  (0 the first; instances side by side share a name);
- ``phase`` / ``message``: the run's phase and what it said it was doing;
- ``throughput``: a point of the run's throughput chart, ``t`` (seconds into the run) and ``rate``
  (acknowledged records/s), sampled here every ``SAMPLE_S`` while the run is under way: the live console shows
  these same points (the session's state carries them), the replay draws them, none recomputes them;
- ``faults``: the lab's fault list with each fault's state, when one changed;
- ``net`` (a cluster with network-fault proxies): ``rules`` in force (each as the proxy's control socket writes
  a rule: ``kind``, ``source``, ``target``, ``direction``, its amounts) and ``nodes`` (those the proxy forwards
  to), every ``SAMPLE_S`` when they changed.

Internal topics are left out (the console's table does not show them either).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Protocol

from kafkalab.admin import ClusterSnapshot, PartitionState
from kafkalab.analysis.report import Report
from kafkalab.clients.processor import ProcessorStats
from kafkalab.clients.stats import ClientState, ConsumerStats, ProducerStats
from kafkalab.clients.throughput import THROUGHPUT_POINTS, ThroughputSampler
from kafkalab.cluster import Cluster, EndCause, NodeInfo, NodeKind, NodeState
from kafkalab.cluster.quorum import QuorumReplica, QuorumState
from kafkalab.errors import KafkalabError
from kafkalab.labs.results import (
    FaultStatus,
    Phase,
    PhaseChanged,
    RunFinished,
    RunMessage,
    RunResult,
    SessionEvent,
)
from kafkalab.labs.run import LabRun
from kafkalab.labs.session_state import SessionState
from kafkalab.netfaults import Rule
from kafkalab.netfaults.rules import rule_from_json, rule_to_json

RECORDING = "recording.jsonl"
SAMPLE_S = 0.5
SNAPSHOT_SAMPLE_S = 0.1  # the cluster watch replaces its snapshot every 0.5 s: none is missed
FINAL_PHASES = (Phase.DONE, Phase.STOPPED, Phase.ERROR)

JsonLine = dict[str, Any]  # one line of recording.jsonl


def snapshot_line(snap: ClusterSnapshot) -> JsonLine:
    parts = [[p.topic, p.partition, p.leader, list(p.replicas), list(p.isr), p.min_isr]
             for p in snap.partitions if not p.topic.startswith("__")]
    return {"kind": "snapshot", "reachable": snap.reachable, "controller": snap.controller,
            "brokers": list(snap.brokers), "partitions": parts}


def snapshot_of(line: JsonLine, taken_at: float) -> ClusterSnapshot:
    parts = tuple(PartitionState(topic, partition, leader, tuple(replicas), tuple(isr), None, min_isr)
                  for topic, partition, leader, replicas, isr, min_isr in line["partitions"])
    return ClusterSnapshot(taken_at, line["reachable"], line["controller"], tuple(line["brokers"]), parts)


def quorum_line(quorum: QuorumState) -> JsonLine:
    return {"kind": "quorum", **quorum.as_dict()}


def quorum_of(line: JsonLine, taken_at: float) -> QuorumState:
    replicas = tuple(QuorumReplica(r["node_id"], voter, r["log_end_offset"], r["lag"], r["last_fetch_ms_ago"],
                                   r["last_caught_up_ms_ago"])
                     for voter, key in ((True, "voters"), (False, "observers")) for r in line[key])
    return QuorumState(taken_at, line["reachable"], line["leader"], line["epoch"], line["high_watermark"], replicas,
                       line["error"])


def node_row(info: NodeInfo) -> list[Any]:
    return [info.name, str(info.kind), info.broker_id, info.port, str(info.state), info.reason, info.pid,
            info.restarts, None if info.cause is None else str(info.cause)]


def node_of(row: list[Any]) -> NodeInfo:
    """The node a row has; uptime, cpu and memory are not recorded (0 and unknown)."""
    name, kind, broker_id, port, state, reason, pid, restarts, *later = row
    cause = later[0] if later else None  # a run recorded before nodes had a cause has none
    return NodeInfo(name, NodeKind(kind), broker_id, port, NodeState(state), reason, pid, 0.0, None, None, restarts,
                    cause=EndCause(cause) if cause else None)


def _quorum_shape(line: JsonLine) -> tuple[object, ...]:
    """What makes a quorum line worth writing (lags and fetch times move on every answer)."""
    known = tuple((r["node_id"], r["log_end_offset"] is not None) for r in (*line["voters"], *line["observers"]))
    return line["reachable"], line["leader"], line["epoch"], known


class RecordedSession(Protocol):
    """What the recorder reads of the :class:`~kafkalab.labs.session.LabSession` it listens to."""

    @property
    def current(self) -> LabRun | None: ...
    @property
    def cluster(self) -> Cluster | None: ...
    def state(self) -> SessionState: ...


class RunRecorder:
    """Listens to a :class:`~kafkalab.labs.session.LabSession`: starts sampling when a run starts, writes its
    last lines and closes the file when the run's result is in (before ``session.wait`` returns)."""

    def __init__(self, session: RecordedSession) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: dict[str, Any] = {}
        self._throughput = ThroughputSampler()  # the run's chart: one sampler for the live console and the replay

    def throughput(self) -> tuple[tuple[float, float], ...]:
        """The chart's points of the run recorded last (or under way)."""
        with self._lock:
            return self._throughput.points

    def on_event(self, event: SessionEvent) -> None:
        match event:
            case PhaseChanged(phase=Phase.STARTING):
                self._begin()
            case PhaseChanged(phase=phase) if self._file is not None:
                self._write({"kind": "phase", "phase": str(phase)})
            case RunMessage(text=text) if self._file is not None:
                self._write({"kind": "message", "message": text})
            case RunFinished():
                self._end()

    def _begin(self) -> None:
        self._end()
        run = self.session.current
        if run is None:
            return
        self._file = open(run.run_dir / RECORDING, "w", encoding="utf-8")  # noqa: SIM115 (closed by _end)
        self._last = {}
        with self._lock:
            self._throughput.clear()
        self._stop.clear()
        self._write({"kind": "phase", "phase": str(Phase.STARTING)})
        self._thread = threading.Thread(target=self._sample_loop, name="kafkalab-recorder", daemon=True)
        self._thread.start()

    def _end(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        self._thread = None
        if self._file is not None:
            try:
                self._sample(clients=True)
            finally:
                with self._lock:
                    self._file.close()
                    self._file = None

    def _sample_loop(self) -> None:
        ticks = round(SAMPLE_S / SNAPSHOT_SAMPLE_S)
        n = 0
        while not self._stop.wait(SNAPSHOT_SAMPLE_S):
            n += 1
            try:
                self._sample(clients=n % ticks == 0)
            except Exception:  # a recording gap must never break the run
                continue

    def _sample(self, clients: bool) -> None:
        run = self.session.current
        snapshot = run.snapshot() if run is not None else None
        if snapshot is not None:
            self._changed("snapshot", snapshot_line(snapshot))
        quorum = run.watch.last_quorum if run is not None and run.watch is not None else None
        if quorum is not None:
            line = quorum_line(quorum)
            self._changed("quorum", line, _quorum_shape(line))
        cluster = self.session.cluster
        if cluster is not None:
            self._changed("nodes", {"kind": "nodes", "nodes": [node_row(i) for i in cluster.infos()]})
        if clients:
            self._net(cluster)
            state = self.session.state()
            faults = [f.as_dict() for f in state.faults]
            self._changed("faults", {"kind": "faults", "faults": faults})
            producer = dataclasses.asdict(state.producer) if state.producer is not None else None
            consumers = {c.name: dataclasses.asdict(c) for c in state.consumers.values()}
            self._clients(producer, consumers)
            self._processor(state.processor)
            self._chart_point(state)

    def _chart_point(self, state: SessionState) -> None:
        """The producer's acknowledgements per second since the last point, while the run is under way."""
        if state.producer is None or state.phase in (Phase.IDLE, *FINAL_PHASES):
            return
        with self._lock:
            point = self._throughput.add(state.elapsed_s, state.producer.acked)
        if point is not None:
            self._write({"kind": "throughput", "t": point[0], "rate": point[1]})

    def _net(self, cluster: Cluster | None) -> None:
        """The network faults in force, when the cluster has proxies; a proxy that does not answer is skipped
        (the next sample asks again), never a gap in the other lines."""
        net = cluster.net if cluster is not None else None
        if net is None or net.pid is None:
            return
        try:
            status = net.status()
        except KafkalabError:
            return
        self._changed("net", {"kind": "net", "rules": [rule_to_json(r) for r in status.rules()],
                              "nodes": [t.name for t in status.targets]})

    def _clients(self, producer: dict[str, Any] | None, consumers: dict[str, dict[str, Any]]) -> None:
        """Only the fields that changed since the last clients line (the first one has them all)."""
        before_p, before_c = self._last.get("clients", (None, {}))
        if (producer, consumers) == (before_p, before_c):
            return
        self._last["clients"] = (producer, consumers)
        line: JsonLine = {"kind": "clients",
                      "producer": _delta(before_p, producer) if producer is not None else None,
                      "consumers": {name: _delta(before_c.get(name), c) for name, c in consumers.items()
                                    if c != before_c.get(name)}}
        self._write(line)

    def _processor(self, instances: tuple[ProcessorStats, ...]) -> None:
        """The processor's instances: only the fields that changed, by instance number."""
        now = [dataclasses.asdict(p) for p in instances]
        before: list[dict[str, Any]] = self._last.get("processor", [])
        if not now or now == before:
            return
        self._last["processor"] = now
        self._write({"kind": "processor", "instances": {
            str(i): _delta(before[i] if i < len(before) else None, p) for i, p in enumerate(now)
            if i >= len(before) or p != before[i]}})

    def _changed(self, key: str, line: JsonLine, shape: object = None) -> None:
        """Write ``line`` when it (or its ``shape``, when given) differs from the last of ``key``."""
        compared = line if shape is None else shape
        if self._last.get(key) != compared:
            self._last[key] = compared
            self._write(line)

    def _write(self, line: JsonLine) -> None:
        with self._lock:
            if self._file is not None:
                self._file.write(json.dumps({"ts": round(time.time(), 3), **line}, separators=(",", ":")) + "\n")
                self._file.flush()


def _delta(before: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in now.items() if before is None or before.get(k) != v}


def _full_clients(lines: list[tuple[float, JsonLine]]) -> list[tuple[float, JsonLine]]:
    """Clients lines with every field, folded from the changes each one holds."""
    producer: dict[str, Any] | None = None
    consumers: dict[str, dict[str, Any]] = {}
    out = []
    for t, line in lines:
        producer = None if line["producer"] is None else {**(producer or {}), **line["producer"]}
        for name, changed in line["consumers"].items():
            consumers[name] = {**consumers.get(name, {}), **changed}
        out.append((t, {"kind": "clients", "producer": producer, "consumers": list(consumers.values())}))
    return out


def _full_processor(lines: list[tuple[float, JsonLine]]) -> list[tuple[float, JsonLine]]:
    """Processor lines with every instance and field, folded from the changes each one holds."""
    instances: dict[int, dict[str, Any]] = {}
    out = []
    for t, line in lines:
        for number, changed in line["instances"].items():
            instances[int(number)] = {**instances.get(int(number), {}), **changed}
        out.append((t, {"kind": "processor", "instances": [instances[n] for n in sorted(instances)]}))
    return out


def read_recording(run_dir: Path) -> Iterator[JsonLine]:
    """The recording's lines in order (a torn last line, from a crash, is skipped)."""
    with open(run_dir / RECORDING, encoding="utf-8") as fh:
        for text in fh:
            try:
                yield json.loads(text)
            except json.JSONDecodeError:
                continue



class RecordedRun:
    """A finished run read back from its dir: what the console showed at any second ``t`` of it (``t`` on
    the timeline's clock: 0 when the clients started; the cluster's start is before it)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        for name in (RECORDING, "timeline.json"):
            if not (self.run_dir / name).is_file():
                raise KafkalabError(f"{self.run_dir} holds no {name}: give the dir of a finished run made by "
                                    "`kafkalab run` or the console (kafkalab-runs/LAB-TIMESTAMP)")
        timeline = json.loads((self.run_dir / "timeline.json").read_text(encoding="utf-8"))
        self.lab_id: str = timeline["lab"]
        self.started_at: float = timeline["started_at"]
        self.events: list[dict[str, Any]] = timeline["events"]
        self.lines: dict[str, list[tuple[float, JsonLine]]] = {}
        for line in read_recording(self.run_dir):
            self.lines.setdefault(line["kind"], []).append((round(line["ts"] - self.started_at, 3), line))
        self.lines["clients"] = _full_clients(self.lines.get("clients", []))
        self.lines["processor"] = _full_processor(self.lines.get("processor", []))
        self._pid_since: dict[tuple[str, int], float] = {}
        for t, line in self.lines.get("nodes", []):
            for name, _kind, _id, _port, _state, _reason, pid, *_ in line["nodes"]:
                self._pid_since.setdefault((name, pid), t)
        self._times = {kind: [t for t, _ in lines] for kind, lines in self.lines.items()}
        every = [t for lines in self.lines.values() for t, _ in lines]
        self.start = min(every, default=0.0)
        self.end = max(every, default=0.0)
        ended = [t for t, line in self.lines.get("phase", []) if line["phase"] in FINAL_PHASES]
        self.result_at = ended[-1] if ended else None

    def at(self, kind: str, t: float) -> JsonLine | None:
        """The latest line of ``kind`` written at or before ``t``."""
        i = bisect.bisect_right(self._times.get(kind, []), t)
        return self.lines[kind][i - 1][1] if i else None

    def snapshot(self, t: float) -> ClusterSnapshot | None:
        line = self.at("snapshot", t)
        return snapshot_of(line, self.started_at + t) if line is not None else None

    def last_answered(self, t: float) -> ClusterSnapshot | None:
        """When the cluster did not answer at ``t``: the last snapshot it answered before (what the console kept
        showing, greyed), taken when it was last true, the second of the line after it. None when it answered
        at ``t``, or never before."""
        lines = self.lines.get("snapshot", [])
        i = bisect.bisect_right(self._times.get("snapshot", []), t)
        if i == 0 or lines[i - 1][1]["reachable"]:
            return None
        for j in range(i - 2, -1, -1):
            if lines[j][1]["reachable"]:
                return snapshot_of(lines[j][1], self.started_at + lines[j + 1][0])
        return None

    def quorum(self, t: float) -> QuorumState | None:
        line = self.at("quorum", t)
        return quorum_of(line, self.started_at + t) if line is not None else None

    @property
    def voters(self) -> int:
        """How many voters the recorded quorum had (0: no quorum recorded)."""
        return max((len(line["voters"]) for _, line in self.lines.get("quorum", [])), default=0)

    def nodes(self, t: float) -> list[NodeInfo]:
        """The nodes at ``t``; uptime counted from the first line naming a process (cpu and memory unknown)."""
        line = self.at("nodes", t)
        infos = [node_of(row) for row in (line or {}).get("nodes", [])]
        return [dataclasses.replace(i, uptime_s=round(t - self._pid_since.get((i.name, i.pid), t), 1) if i.pid else 0.0)
                for i in infos]

    def clients(self, t: float) -> tuple[ProducerStats | None, tuple[ConsumerStats, ...]]:
        line = self.at("clients", t)
        if line is None:
            return None, ()
        fields = line["producer"]
        producer = ProducerStats(**{**fields, "state": ClientState(fields["state"])}) if fields else None
        return producer, tuple(_consumer(c) for c in line["consumers"])

    def processor(self, t: float) -> tuple[ProcessorStats, ...]:
        """The processor's instances as the pane showed them at ``t`` (none: no processor, or not started)."""
        line = self.at("processor", t)
        return tuple(_processor(d) for d in line["instances"]) if line is not None else ()

    def throughput(self, t: float) -> tuple[tuple[float, float], ...]:
        """The chart's points up to ``t``, as the live console showed them; a run recorded before they were kept
        has them made again from its producer samples."""
        if "throughput" in self.lines:
            recorded = [(line["t"], line["rate"]) for at, line in self.lines["throughput"] if at <= t]
            return tuple(recorded[-THROUGHPUT_POINTS:])  # the live chart keeps as many
        sampler = ThroughputSampler()
        for at, line in self.lines.get("clients", []):
            if at > t:
                break
            if line["producer"] is not None:
                sampler.add(at, line["producer"]["acked"])
        return sampler.points

    def net(self, t: float) -> tuple[tuple[Rule, ...], tuple[str, ...]] | None:
        """The network rules in force at ``t`` and the nodes behind the proxy (None: no proxies recorded)."""
        line = self.at("net", t)
        if line is None:
            return None if "net" not in self.lines else ((), tuple(self.lines["net"][0][1]["nodes"]))
        return tuple(rule_from_json(r) for r in line["rules"]), tuple(line["nodes"])

    def phase(self, t: float) -> Phase:
        line = self.at("phase", t)
        return Phase(line["phase"]) if line is not None else Phase.IDLE

    def faults(self, t: float) -> list[FaultStatus]:
        line = self.at("faults", t)
        return [FaultStatus.from_dict(f) for f in line["faults"]] if line is not None else []

    def events_until(self, t: float) -> list[dict[str, Any]]:
        return [e for e in self.events if e["t"] <= t]

    def result(self) -> RunResult | None:
        """The run's result and report as the session had them at its end."""
        path = self.run_dir / "result.json"
        if not path.is_file():
            return None
        d = json.loads(path.read_text(encoding="utf-8"))
        report_path = self.run_dir / "report.json"
        report = Report.from_json(json.loads(report_path.read_text(encoding="utf-8"))) \
            if report_path.is_file() else None
        return RunResult.from_dict(d, self.run_dir, report)


def _processor(d: dict[str, Any]) -> ProcessorStats:
    ints = {k: {int(p): v for p, v in d.get(k, {}).items()} for k in ("lag", "held")}
    return ProcessorStats(**{**d, **ints, "state": ClientState(d["state"]), "assignment": tuple(d["assignment"]),
                             "log_paths": tuple(d["log_paths"])})


def _consumer(d: dict[str, Any]) -> ConsumerStats:
    ints = {k: {int(p): v for p, v in d.get(k, {}).items()} for k in ("committed", "lag", "held")}
    return ConsumerStats(**{**d, **ints, "state": ClientState(d["state"]), "assignment": tuple(d["assignment"])})
