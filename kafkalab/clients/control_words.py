"""Control words the consumers obey: ``quit`` (clean close), ``crash`` (abrupt exit), ``wait`` (pause).

Sent by a producer in a child process per call (:mod:`kafkalab.clients.one_shot`): the console that sends
them never loads librdkafka.
"""

from __future__ import annotations

from typing import Any

from kafkalab.clients.one_shot import call_in_child, serve_one
from kafkalab.errors import KafkalabError
from kafkalab.logformat import CONTROL_VALUES

CONTROL_WORDS = CONTROL_VALUES  # the payload-log contract's: the analysis leaves them out
QUIT, CRASH, WAIT = (w.encode() for w in CONTROL_WORDS)
MODULE = "kafkalab.clients.control_words"  # the child: python -m MODULE
CHECK_TOPIC_S = 20.0  # the child's topic check before it sends: its timeout and its grace for a new topic


def send_control(bootstrap: str, topic: str, word: str, all_partitions: bool = False,
                 timeout: float = 30.0) -> int:
    """Send ``word`` as a record value (no key) to ``topic``, or once to every partition. Returns how many."""
    if word not in CONTROL_WORDS:
        raise KafkalabError(f"{word!r} is not a control word: use one of {', '.join(CONTROL_WORDS)}")
    request = {"bootstrap": bootstrap, "topic": topic, "word": word, "all_partitions": all_partitions,
               "timeout": timeout}
    sent = call_in_child(MODULE, request, f"sending {word!r} to {topic}",
                         timeout + CHECK_TOPIC_S)
    return int(sent)


def produce_control(bootstrap: str, topic: str, word: str, all_partitions: bool, timeout: float) -> int:
    """The child's work: the producer that sends ``word`` (see :func:`send_control`)."""
    from confluent_kafka import KafkaError, Message
    from confluent_kafka import Producer as _RdProducer

    from kafkalab.clients.preflight import base_conf, check_topic

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


def _answer(request: dict[str, Any], _progress: object) -> int:
    return produce_control(request["bootstrap"], request["topic"], request["word"], request["all_partitions"],
                           request["timeout"])


if __name__ == "__main__":
    serve_one(_answer)
