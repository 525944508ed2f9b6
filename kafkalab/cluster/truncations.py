"""Where a broker truncated records, read from its ``server.log``: the one reading behind a lab run's verdict
(:mod:`kafkalab.labs.truncation`), the console's toast and the lines of `kafkalab cluster status` and `net status`.

A follower whose log holds records its (new) leader lacks cuts them off when it starts fetching. Kafka (3.9 in
ZooKeeper and KRaft mode, 4.x) says so in three lines, the same words in both modes::

    [..] INFO [Broker id=1] Follower test-topic-0 starts at leader epoch 2 from offset 5805 with partition epoch 2
         and high watermark 1389. Current leader is 3. ...
    [..] INFO [ReplicaFetcher replicaId=1, leaderId=3, fetcherId=0] Truncating partition test-topic-0 with
         TruncationState(offset=1391, completed=true) due to leader epoch and offset ...
    [..] INFO [UnifiedLog partition=test-topic-0, dir=...] Truncating to offset 1391 (kafka.log.UnifiedLog)

The ``UnifiedLog`` line is written only when the truncation removed something ("Truncating to N has no effect"
otherwise); its log end offset when it became a follower ("from offset 5805") less the offset it truncated to
is how many records it removed: a follower appends nothing before its first truncation. Its high watermark then
says how many of them had been committed: a record at or past it was never acknowledged to an acks=all producer.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path

_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] ")
_FOLLOWER = re.compile(r"Follower (?P<tp>\S+) starts at leader epoch \d+ from offset (?P<leo>\d+)"
                       r"(?: with partition epoch \d+ and high watermark (?P<hw>\d+))?")
_FETCHER = re.compile(r"\[ReplicaFetcher replicaId=\d+, leaderId=(?P<leader>\d+), fetcherId=\d+\] "
                      r"Truncating partition (?P<tp>\S+) with")
_TRUNCATED = re.compile(r"\[UnifiedLog partition=(?P<tp>[^,\]]+), dir=[^\]]*\] Truncating to offset (?P<to>\d+)")
BROKER_DIR = re.compile(r"broker-(\d+)")


class Election(StrEnum):
    """How the KRaft active controller elected a partition's new leader, as its log says."""

    UNCLEAN = "an unclean election"
    ELR = "ELR"  # an eligible leader replica (Kafka 4.x, KIP-966): clean, though outside the ISR
    CLEAN = "a clean election"


@dataclass(frozen=True)
class Truncation:
    """Broker ``broker`` cut partition ``topic``/``partition`` back to ``to_offset`` at ``ts`` (epoch seconds, by
    the broker's clock); its log then ended at ``from_offset`` (None: not in the log read)."""

    broker: int
    topic: str
    partition: int
    ts: float
    to_offset: int
    from_offset: int | None = None
    leader: int | None = None  # the leader it truncated to match, when the fetcher named it
    election: Election | None = None  # how that leader was elected (KRaft's controller log; None: not said)
    high_watermark: int | None = None  # its high watermark when it became a follower (None: not in the log read)

    @property
    def records(self) -> int | None:
        """How many records it removed (None: unknown)."""
        if self.from_offset is None or self.from_offset <= self.to_offset:
            return None
        return self.from_offset - self.to_offset

    @property
    def committed(self) -> int | None:
        """How many of them were below its high watermark, acknowledged even to acks=all (None: unknown)."""
        if self.records is None or self.high_watermark is None or self.from_offset is None:
            return None
        return max(0, min(self.high_watermark, self.from_offset) - self.to_offset)

    def said(self) -> str:
        """The truncation in one sentence, as the console's toast and the CLI say it, e.g. ``broker-2 truncated
        test-topic/0 from 2,500 to 300 to match broker-3's log: 2,200 records gone (uncommitted: acknowledged only
        if written with acks=1)``; a follower's truncation is no record it acknowledged, so none is said so."""
        head = f"broker-{self.broker} truncated {self.topic}/{self.partition}"
        following = f" to match broker-{self.leader}'s log" if self.leader is not None else ""
        n, committed = self.records, self.committed
        if n is None:
            return f"{head} to offset {self.to_offset:,}{following} (how far its log went is not in the lines read)"
        gone = f"{head} from {self.from_offset:,} to {self.to_offset:,}{following}: {n:,} record" \
               f"{'s' if n != 1 else ''} gone"
        if committed is None:
            return gone
        if committed == 0:
            return f"{gone} (uncommitted: acknowledged only if written with acks=1)"
        return f"{gone}, {committed:,} of them committed (acknowledged even with acks=all)"

    def as_dict(self) -> dict[str, int | float | str | None]:
        return {"broker": self.broker, "topic": self.topic, "partition": self.partition, "ts": self.ts,
                "to_offset": self.to_offset, "from_offset": self.from_offset, "leader": self.leader,
                "records": self.records, "committed": self.committed, "high_watermark": self.high_watermark,
                "election": None if self.election is None else self.election.name.lower()}


def stamp_of(line: str) -> float | None:
    """When a log4j line was written (epoch seconds, from the machine's local time); None: not a line's start."""
    stamp = _STAMP.match(line)
    return None if stamp is None else datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


class TruncationReader:
    """One broker's log lines, read at once or as the log grows: the truncations that removed records, of
    ``topics`` (None: every topic but the internal ones), stamped from ``since`` to ``until`` (epoch seconds;
    the log's stamps are the machine's local time)."""

    def __init__(self, broker: int, since: float = 0.0, topics: Collection[str] | None = None,
                 until: float = float("inf")) -> None:
        self.broker = broker
        self._since, self._until, self._topics = since, until, topics
        self._end: dict[str, tuple[int, int | None] | None] = {}  # partition -> (log end, high watermark) as follower
        self._leader: dict[str, int] = {}

    def feed(self, lines: Iterable[str]) -> list[Truncation]:
        out = []
        for line in lines:
            if "Truncating" not in line and "Follower " not in line:
                continue  # most lines: no parsing
            ts = stamp_of(line)
            if ts is None or ts < self._since:
                continue
            if ts > self._until:
                break
            if (m := _FOLLOWER.search(line)) is not None:
                self._end[m.group("tp")] = (int(m.group("leo")), int(m.group("hw")) if m.group("hw") else None)
            elif (m := _FETCHER.search(line)) is not None:
                self._leader[m.group("tp")] = int(m.group("leader"))
            elif (m := _TRUNCATED.search(line)) is not None:
                tp = m.group("tp")
                topic, _, partition = tp.rpartition("-")
                if self._wanted(topic) and partition.isdigit():
                    end, hw = self._end.get(tp) or (None, None)
                    out.append(Truncation(self.broker, topic, int(partition), round(ts, 3), int(m.group("to")),
                                          end, self._leader.get(tp), high_watermark=hw))
                # the follower fetches on from here: its next truncation needs a new "starts at" line to be counted
                self._end[tp] = None
        return out

    def _wanted(self, topic: str) -> bool:
        return not topic.startswith("__") if self._topics is None else topic in self._topics


def read_truncations(lines: Iterable[str], broker: int, since: float, topics: Collection[str] | None,
                     until: float = float("inf")) -> list[Truncation]:
    """The truncations in one broker's log lines (see :class:`TruncationReader`). A kept cluster's log goes on
    with the next runs: ``until`` leaves them out when a run is read back later."""
    return TruncationReader(broker, since, topics, until).feed(lines)


def broker_logs(cluster_dir: Path) -> dict[int, Path]:
    """Broker id -> its ``server.log`` in a cluster's dir (a state dir, or a run's ``cluster`` dir)."""
    out: dict[int, Path] = {}
    for log in sorted(cluster_dir.glob("broker-*/logs/server.log")):
        match = BROKER_DIR.fullmatch(log.parent.parent.name)
        if match:
            out[int(match.group(1))] = log
    return out


def logged_truncations(cluster_dir: Path, since: float, topics: Collection[str] | None = None,
                       until: float = float("inf")) -> list[Truncation]:
    """Every broker's truncations in a cluster's dir from ``since`` to ``until``, in time order."""
    out: list[Truncation] = []
    for broker, log in broker_logs(cluster_dir).items():
        try:
            with open(log, encoding="utf-8", errors="replace") as fh:
                out += read_truncations(fh, broker, since, topics, until)
        except OSError:  # a log gone or unreadable: no finding from it, never a failure
            continue
    return sorted(out, key=lambda t: (t.ts, t.broker))


class TruncationWatch:
    """Truncations as they happen, from the lines each broker's log gained (by node name, ``broker-N``), as a
    console's source reads them for its frames; those stamped before the watch began are not news."""

    def __init__(self, since: float) -> None:
        self._since = since
        self._readers: dict[int, TruncationReader] = {}

    def feed(self, new_lines: Mapping[str, Iterable[str]]) -> list[Truncation]:
        out = []
        for name, lines in new_lines.items():
            if (match := BROKER_DIR.fullmatch(name)) is not None:
                broker = int(match.group(1))
                reader = self._readers.setdefault(broker, TruncationReader(broker, self._since))
                out += reader.feed(lines)
        return out
