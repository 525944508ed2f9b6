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

from typing import NamedTuple

PRODUCER_COLUMNS = ("msg_id", "seq", "topic", "partition", "offset", "key", "status", "error", "ts_ms", "value")
CONSUMER_COLUMNS = (
    "msg_id", "consumer", "topic", "partition", "offset", "key", "leader_epoch", "ts_ms", "value", "group",
)
PRODUCER_STATUSES = ("acked", "failed", "unknown")
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
