"""What the brokers really hold: every partition read from the beginning, without a group.

Written as ``audit.csv`` in the consumer-log columns with consumer ``audit``, so the analysis can tell
records lost by the brokers from records the consumers missed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafkalab.clients.one_shot import call_in_child, serve_one
from kafkalab.clients.payload_log import ConsumedRows, PayloadLog
from kafkalab.errors import KafkalabError
from kafkalab.logformat import AUDIT_CONSUMER, CONSUMER_COLUMNS

if TYPE_CHECKING:
    from confluent_kafka import Consumer as _RdConsumer

Progress = Callable[[int, int], None]  # (records read, records expected)
MODULE = "kafkalab.clients.audit"  # the child: python -m MODULE
BEFORE_READ_S = 60.0  # the child's topic check and end offsets (their own bounds and graces) before it reads


def audit_topic(bootstrap: str, topic: str, log_dir: Path, timeout: float = 120.0,
                progress: Progress | None = None) -> tuple[Path, int]:
    """Read ``topic`` in full into ``log_dir/audit.csv``; returns (path, records).

    The consumer reads in a child process (:mod:`kafkalab.clients.one_shot`): a librdkafka crash fails this
    audit with a KafkalabError instead of ending the console. ``progress`` gets (read, expected) per batch."""
    request = {"bootstrap": bootstrap, "topic": topic, "log_dir": str(log_dir), "timeout": timeout}
    report = None if progress is None else (lambda done: progress(int(done[0]), int(done[1])))
    path, read = call_in_child(MODULE, request, f"the audit of {topic}", timeout + BEFORE_READ_S, report)
    return Path(path), int(read)


def read_topic(bootstrap: str, topic: str, log_dir: Path, timeout: float = 120.0,
               progress: Progress | None = None) -> tuple[Path, int]:
    """The child's work (see :func:`audit_topic`): every partition read from the beginning, without a group."""
    from confluent_kafka import Consumer as _RdConsumer

    from kafkalab.clients.preflight import check_topic, consumer_conf

    partitions = check_topic(bootstrap, topic)
    conf = consumer_conf({
        "bootstrap.servers": bootstrap, "group.id": "kafkalab-audit", "enable.auto.commit": False,
        "enable.auto.offset.store": False, "isolation.level": "read_uncommitted",
        "enable.partition.eof": True,
    })
    ends = end_offsets(lambda: _RdConsumer(conf), topic, partitions)
    consumer = _RdConsumer(conf)
    try:
        log = PayloadLog(log_dir / f"{AUDIT_CONSUMER}.csv", CONSUMER_COLUMNS, truncate=True)
        read = _read_all(consumer, topic, ends, log, sum(ends.values()), timeout, progress)
        return log.close(complete=True), read
    finally:
        consumer.close()


def end_offsets(new_client: Callable[[], _RdConsumer], topic: str, partitions: int,
                grace: float = 30.0) -> dict[int, int]:
    """The end offset of each partition that holds records, asked again for ``grace`` seconds, each time
    through a new client: one whose first metadata came from a broker just back can hold the topic without
    the partition (_UNKNOWN_PARTITION), and kept saying so for 25 s while the cluster named its leader."""
    from confluent_kafka import KafkaException, TopicPartition

    deadline = time.monotonic() + grace
    while True:
        client, asking = new_client(), 0
        try:
            ends: dict[int, int] = {}
            for asking in range(partitions):
                low, high = client.get_watermark_offsets(TopicPartition(topic, asking), timeout=15)
                if high > low:
                    ends[asking] = high
            return ends
        except KafkaException as exc:
            if time.monotonic() > deadline:
                raise KafkalabError(
                    f"cannot read partition {asking} of {topic} ({exc.args[0].name()}): "
                    "bring its brokers back and audit again"
                ) from None
        finally:
            client.close()
        time.sleep(0.5)


def _read_all(consumer: _RdConsumer, topic: str, ends: dict[int, int], log: PayloadLog, expected: int,
              timeout: float, progress: Progress | None) -> int:
    from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

    rows = ConsumedRows(AUDIT_CONSUMER, topic, "")
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
    pending = dict(ends)  # partition -> end offset still to reach
    read = 0
    deadline = time.monotonic() + timeout
    while pending:
        if time.monotonic() > deadline:
            log.close(complete=False)
            raise KafkalabError(
                f"audit of {topic} timed out with partitions {sorted(pending)} unread: check their leaders"
            )
        wanted = []
        for m in consumer.consume(10000, 0.5):
            err = m.error()
            p, offset = m.partition(), m.offset()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF and p is not None:
                    pending.pop(p, None)
                continue
            assert p is not None and offset is not None  # a fetched record has both
            if p not in pending or offset >= pending[p]:
                continue
            wanted.append(m)
            if offset + 1 >= pending[p]:
                pending.pop(p)
        formatted = rows.format(wanted)
        assert formatted is not None  # no stop words given
        log.write(formatted[0])
        read += len(wanted)
        log.flush()
        if progress is not None:
            progress(read, expected)
    return read


def _answer(request: dict[str, Any], progress: Callable[[Any], None]) -> tuple[str, int]:
    path, read = read_topic(request["bootstrap"], request["topic"], Path(request["log_dir"]), request["timeout"],
                            lambda done, expected: progress((done, expected)))
    return str(path), read


if __name__ == "__main__":
    serve_one(_answer)
