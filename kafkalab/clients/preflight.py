"""Checks made before a client starts: the cluster answers, the topic exists (or is auto-created)."""

from __future__ import annotations

import logging
import time
from typing import Any

from kafkalab.errors import KafkalabError

# librdkafka's own log lines go to Python logging (silent unless configured), never straight to stderr.
LIBRDKAFKA_LOGGER = logging.getLogger("kafkalab.librdkafka")
LIBRDKAFKA_LOGGER.addHandler(logging.NullHandler())


def base_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """``conf`` plus what every kafkalab client sets: TCP_NODELAY, as the Java clients have it (librdkafka's
    Nagle default halves small-batch throughput), and librdkafka's logging routed to Python logging."""
    return {**conf, "socket.nagle.disable": True, "logger": LIBRDKAFKA_LOGGER}


def consumer_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """:func:`base_conf` for a consumer, fetching again as soon as its queue drains, as the Java consumer does.

    Once its prefetch queue is over its thresholds, librdkafka postpones the partition's next fetch by
    ``fetch.queue.backoff.ms``, one second by default; a consumer that keeps up then idles most of the
    time (165k records/s here, 920k with 10 ms, on the same cluster and topic).
    """
    return {**base_conf(conf), "fetch.queue.backoff.ms": 10}


def check_topic(bootstrap: str, topic: str, timeout: float = 5.0, grace: float = 10.0) -> int:
    """The partition count of ``topic``; raises KafkalabError when the cluster or the topic is missing.

    Asks as the Java clients do (topic auto-creation allowed), so a cluster with
    auto.create.topics.enable=true creates the topic here. A topic missing from the metadata is asked
    for again for ``grace`` seconds: a topic just created takes a moment to reach every broker (on a loaded
    laptop more than 3 s were seen).
    """
    from confluent_kafka import KafkaException
    from confluent_kafka import Producer as _RdProducer

    probe = _RdProducer(base_conf({"bootstrap.servers": bootstrap, "allow.auto.create.topics": True}))
    deadline = time.monotonic() + grace
    try:
        while True:
            try:
                meta = probe.list_topics(topic=topic, timeout=timeout)
            except KafkaException as exc:
                raise KafkalabError(
                    f"cannot reach the Kafka cluster at {bootstrap} ({exc.args[0].name()}): start it "
                    "(kafkalab cluster up) or give the right -D bootstrap.server=host:port"
                ) from None
            info = meta.topics.get(topic)
            if info is not None and info.error is None and info.partitions:
                return len(info.partitions)
            if time.monotonic() > deadline:
                raise KafkalabError(
                    f"topic {topic} does not exist and the cluster does not create topics on first use: "
                    "create it first, or name an existing topic"
                )
            time.sleep(0.2)
    finally:
        probe.flush(0)
