"""One broker's own metadata, asked of that broker alone: a Metadata request (v7) over a socket of our own.

Why not librdkafka: its ``list_topics`` goes to whichever broker it likes among those it has learnt of, and a
broker cut off from the controller (an isolated zombie) keeps answering from its stale cache (itself leader,
every ISR whole). To tell that view from the cluster's, kafkalab must know which broker said what, so it asks
each broker itself (:mod:`kafkalab.admin.metadata_source` chooses). Version 7 is the first to carry the leader
epoch; Kafka 3.9 and 4.x both answer it (MetadataRequest.json: versions 0-13, flexible from 9).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from itertools import count

API_KEY = 3
API_VERSION = 7
CLIENT_ID = b"kafkalab-metadata"
_correlation = count(1)


class Unanswered(Exception):
    """The broker did not answer (refused, reset, timed out) or answered what is not a Metadata reply."""

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


def ask(address: str, timeout_s: float) -> BrokerMetadata:
    """The metadata of the broker at ``address`` (``host:port``), every topic; :class:`Unanswered` otherwise."""
    host, _, port = address.rpartition(":")
    correlation = next(_correlation) & 0x7FFFFFFF
    header = struct.pack(">hhih", API_KEY, API_VERSION, correlation, len(CLIENT_ID)) + CLIENT_ID
    body = struct.pack(">ib", -1, 0)  # every topic (a null array), and create none
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
            reply = _read(sock, struct.unpack(">i", _read(sock, 4))[0])
    except (OSError, ValueError, struct.error) as exc:
        raise Unanswered(_reason(exc), address) from None
    try:
        return _parse(address, correlation, reply)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise Unanswered(f"not a Metadata reply ({exc})", address) from None


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


def _parse(address: str, correlation: int, reply: bytes) -> BrokerMetadata:
    """MetadataResponse v7: correlation id; throttle; brokers (id, host, port, rack); cluster id; controller id;
    topics (error, name, internal, partitions (error, index, leader, leader epoch, replicas, isr, offline))."""
    r = _Reader(reply)
    if r.take(">i") != correlation:
        raise ValueError("another request's reply")
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
