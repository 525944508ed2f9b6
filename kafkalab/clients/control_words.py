"""Control words the consumers obey: ``quit`` (clean close), ``crash`` (abrupt exit), ``wait`` (pause)."""

from __future__ import annotations

from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as _RdProducer

from kafkalab.clients.preflight import base_conf, check_topic
from kafkalab.errors import KafkalabError

CONTROL_WORDS = ("quit", "crash", "wait")
QUIT, CRASH, WAIT = (w.encode() for w in CONTROL_WORDS)


def send_control(bootstrap: str, topic: str, word: str, all_partitions: bool = False,
                 timeout: float = 30.0) -> int:
    """Send ``word`` as a record value (no key) to ``topic``, or once to every partition. Returns how many."""
    if word not in CONTROL_WORDS:
        raise KafkalabError(f"{word!r} is not a control word: use one of {', '.join(CONTROL_WORDS)}")
    partitions = check_topic(bootstrap, topic)
    producer = _RdProducer(base_conf({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                                  "acks": "all", "linger.ms": 0}))
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            errors.append(err)

    targets = range(partitions) if all_partitions else [None]
    for partition in targets:
        if partition is None:
            producer.produce(topic, value=word.encode(), on_delivery=on_delivery)
        else:
            producer.produce(topic, value=word.encode(), partition=partition, on_delivery=on_delivery)
    left = producer.flush(timeout)
    if left or errors:
        reason = errors[0].name() if errors else "timed out"
        raise KafkalabError(f"could not send {word!r} to {topic} ({reason}): check the brokers and retry")
    return len(targets)
