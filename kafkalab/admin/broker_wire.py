"""Requests to one broker alone, over Kafka's wire protocol on a socket of our own: its Metadata (v7) and, of a
leader, its partitions' end offsets (ListOffsets v4).

Why not librdkafka: its ``list_topics`` goes to whichever broker it likes among those it has learnt of, and its
``list_offsets`` to the leader its own metadata names; a broker cut off from the controller (an isolated zombie)
keeps answering both from its stale state (itself leader, every ISR whole, its high watermark where the cut
left it). To tell that view from the cluster's, kafkalab must know which broker said what, so it asks each broker
itself (:mod:`kafkalab.admin.metadata_source` chooses) and each leader that view names. Metadata v7 is the first
to carry the leader epoch, which ListOffsets v4 sends back: a broker that no longer leads at that epoch refuses.
Kafka 3.9 and 4.x answer both (Metadata 0-13, ListOffsets 1-11 on 4.4; flexible from 9 and 6).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from itertools import count

METADATA = (3, 7)  # API key, version
LIST_OFFSETS = (2, 4)
LATEST = -1  # ListOffsets' timestamp for the log's end (the high watermark, read uncommitted)
CLIENT_ID = "kafkalab-admin"
_correlation = count(1)


class Unanswered(Exception):
    """The broker did not answer (refused, reset, timed out), or not with a reply to what was asked."""

    def __init__(self, reason: str, address: str = "") -> None:
        super().__init__(f"{address}: {reason}" if address else reason)
        self.reason = reason


@dataclass(frozen=True)
class PartitionMetadata:
    partition: int
    leader: int | None
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class BrokerMetadata:
    """What one broker's metadata cache says: the brokers it takes for alive (id -> host:port), the controller it
    names (in KRaft mode a random live broker: clients cannot reach the quorum), and every topic's partitions."""

    address: str  # the address it was asked at
    brokers: dict[int, str]
    controller: int | None
    topics: dict[str, tuple[PartitionMetadata, ...]]

    @property
    def broker(self) -> int | None:
        """The id of the broker that answered: the one it lists at the address it was asked at (None: it does not
        list itself, as a KRaft broker fenced in its own cache)."""
        return next((b for b, address in self.brokers.items() if address == self.address), None)


def ask_metadata(address: str, timeout_s: float) -> BrokerMetadata:
    """The metadata of the broker at ``address`` (``host:port``), every topic; :class:`Unanswered` otherwise."""
    every_topic = struct.pack(">ib", -1, 0)  # a null array, and create none
    reply = _exchange(address, METADATA, every_topic, timeout_s)
    try:
        return _parse_metadata(address, reply)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise Unanswered(f"not a Metadata reply ({exc})", address) from None


def ask_end_offsets(address: str, partitions: dict[tuple[str, int], int | None], timeout_s: float
                    ) -> dict[tuple[str, int], int]:
    """The end offsets of ``partitions`` (each with the leader epoch it is led at, None: any) from their leader at
    ``address``; a partition it answers with an error (not its leader at that epoch, its end not known yet just
    after its election) is left out; :class:`Unanswered` when it does not answer."""
    topics: dict[str, list[tuple[int, int | None]]] = {}
    for (topic, partition), epoch in partitions.items():
        topics.setdefault(topic, []).append((partition, epoch))
    body = struct.pack(">ibi", -1, 0, len(topics))  # a client, not a replica; read uncommitted
    for topic, parts in topics.items():
        body += _string(topic) + struct.pack(">i", len(parts))
        body += b"".join(struct.pack(">iiq", p, -1 if epoch is None else epoch, LATEST) for p, epoch in parts)
    reply = _exchange(address, LIST_OFFSETS, body, timeout_s)
    try:
        return _parse_end_offsets(reply)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise Unanswered(f"not a ListOffsets reply ({exc})", address) from None


def _exchange(address: str, api: tuple[int, int], body: bytes, timeout_s: float) -> _Reader:
    """One request on a connection of its own, its reply's body (after the correlation id, checked)."""
    host, _, port = address.rpartition(":")
    correlation = next(_correlation) & 0x7FFFFFFF
    header = struct.pack(">hhi", *api, correlation) + _string(CLIENT_ID)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
            reply = _Reader(_read(sock, struct.unpack(">i", _read(sock, 4))[0]))
    except (OSError, ValueError, struct.error) as exc:
        raise Unanswered(_reason(exc), address) from None
    if reply.take(">i") != correlation:
        raise Unanswered("answered another request", address)
    return reply


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _reason(exc: Exception) -> str:
    """A failure in a few words: "connection refused", "timed out"."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


def _read(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("the broker closed the connection")
        data += chunk
    return bytes(data)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self._data, self._at)
        self._at += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        self._at += size
        return self._data[self._at - size:self._at].decode()

    def ids(self) -> tuple[int, ...]:
        return tuple(self.take(">i") for _ in range(max(0, self.take(">i"))))


def _parse_metadata(address: str, r: _Reader) -> BrokerMetadata:
    """MetadataResponse v7: throttle; brokers (id, host, port, rack); cluster id; controller id; topics (error,
    name, internal, partitions (error, index, leader, leader epoch, replicas, isr, offline))."""
    r.take(">i")
    brokers = {}
    for _ in range(r.take(">i")):
        node, host, port = r.take(">i"), r.string(), r.take(">i")
        r.string()
        brokers[node] = f"{host}:{port}"
    r.string()
    controller = r.take(">i")
    topics = {}
    for _ in range(r.take(">i")):
        r.take(">h")
        name = r.string() or ""
        r.take(">b")
        partitions = []
        for _ in range(r.take(">i")):
            r.take(">h")
            index, leader, epoch = r.take(">i"), r.take(">i"), r.take(">i")
            replicas, isr = r.ids(), r.ids()
            r.ids()
            partitions.append(PartitionMetadata(index, leader if leader >= 0 else None, epoch if epoch >= 0 else None,
                                                replicas, isr))
        topics[name] = tuple(sorted(partitions, key=lambda p: p.partition))
    return BrokerMetadata(address, brokers, controller if controller >= 0 else None, topics)


def _parse_end_offsets(r: _Reader) -> dict[tuple[str, int], int]:
    """ListOffsetsResponse v4: throttle; topics (name, partitions (index, error, timestamp, offset, leader epoch))."""
    r.take(">i")
    out = {}
    for _ in range(r.take(">i")):
        name = r.string() or ""
        for _ in range(r.take(">i")):
            partition, error = r.take(">i"), r.take(">h")
            r.take(">q")
            offset = r.take(">q")
            r.take(">i")
            if error == 0 and offset >= 0:
                out[(name, partition)] = offset
    return out
