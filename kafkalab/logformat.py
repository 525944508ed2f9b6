"""The payload log contract shared by the clients (writers) and the analysis (reader).

Producer and consumer logs are CSV files (RFC 4180 quoting) with a header row, one file per client
instance. The audit log (what the brokers hold, read back in full) uses the consumer columns with
consumer ``audit``.

Every produced record carries a message id, unique per attempted send, in the record header
``MSG_ID_HEADER``: ``{run}:{producer}:{seq}``, so a consumer's row names the send it came from and
nothing depends on values being unique. A record typed by hand (``kafkalab type``, the console's
Records tab, a lab's ``type`` fault) has no message id: its header says ``TYPED_MSG_ID`` instead, so the
consumers log that word and the analysis counts the record as typed, not as one nobody sent.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NamedTuple

PRODUCER_COLUMNS = ("msg_id", "seq", "topic", "partition", "offset", "key", "status", "error", "ts_ms", "value")
CONSUMER_COLUMNS = (
    "msg_id", "consumer", "topic", "partition", "offset", "key", "leader_epoch", "ts_ms", "value", "group",
)
PRODUCER_STATUSES = ("acked", "failed", "unknown")
ABORTED = "ABORTED"  # a failed record's error when its transaction did not commit (the producer's, the processor's)
# a failed record's error when its send() blocked (its buffer full) past max.block.ms: Kafka's TimeoutException
MAX_BLOCK_TIMED_OUT = "MAX_BLOCK_TIMED_OUT"
MSG_ID_HEADER = "kafkalab-msg-id"
TYPED_MSG_ID = "typed"  # the header's value on a record typed by hand
# a well-formed message id, run:producer:seq with exactly two colons (a regex both Python and Spark read)
MSG_ID_PATTERN = "^[^:]+:[^:]+:[0-9]+$"
AUDIT_CONSUMER = "audit"


class MsgId(NamedTuple):
    run: str
    producer: str
    seq: int

    def __str__(self) -> str:
        return f"{self.run}:{self.producer}:{self.seq}"


def parse_msg_id(text: str) -> MsgId:
    """Split ``run:producer:seq``; raises ValueError on anything else."""
    run, producer, seq = text.split(":")
    if not run or not producer:
        raise ValueError(f"bad message id {text!r}")
    return MsgId(run, producer, int(seq))


class LogFormat(StrEnum):
    """A producer or consumer log's format: kafkalab's CSV (header row, message ids) or the course's."""

    KAFKALAB = "kafkalab"
    COURSE = "course"


# The course's payload log (its Java apps write it: `payload.log`, or `payload-LOCALID.log`): one line per
# acknowledged send (the producer's send callback) or processed record (the consumer), `topic,partition,key,value`,
# no header, no quoting: the value is written raw and may hold commas and quotes, so a line splits at its first
# three commas only. A null key is written as the word `null` (Java's %d of a null Integer), which stands for
# the empty key kafkalab's own logs write.
COURSE_FIELDS = ("topic", "partition", "key", "value")
COURSE_NULL_KEY = "null"
COURSE_LOG_GLOBS = ("payload.log", "payload-*.log")
# values the consumers (kafkalab's and the course's) obey instead of processing: never logged as processed, so
# the analysis leaves them out wherever they appear (an audit reads them back from the topic)
CONTROL_VALUES = ("quit", "crash", "wait")
_PARTITION = re.compile(r"[0-9]+\Z")


class CourseLine(NamedTuple):
    topic: str
    partition: int
    key: str
    value: str


def parse_course_line(line: str) -> CourseLine | None:
    """A course log line (without its line break) as its four fields; None for one that is not a record
    (fewer than four fields, no topic, a partition that is no integer). The analysis's Spark query applies
    the same rule."""
    fields = line.split(",", 3)
    if len(fields) != 4 or not fields[0] or not _PARTITION.match(fields[1]) or int(fields[1]) >= 1 << 31:
        return None  # (a partition is a Java int)
    topic, partition, key, value = fields
    return CourseLine(topic, int(partition), "" if key == COURSE_NULL_KEY else key, value)
