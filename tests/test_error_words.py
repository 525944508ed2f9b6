"""A client's raw librdkafka error, as the producer pane says it: which broker, and why, in a sentence."""

from __future__ import annotations

import pytest

from kafkalab.clients.error_words import error_sentence
from kafkalab.clients.stats import ClientState, ProducerStats
from kafkalab.ui.producer import failures_line

REFUSED = ("_TRANSPORT: 127.0.0.1:23928/bootstrap: Connect to ipv4#127.0.0.1:23928 failed: Connection refused "
           "(after 0ms in state CONNECT)")


@pytest.mark.parametrize(("raw", "said"), [
    (REFUSED, "cannot reach the bootstrap server (127.0.0.1:23928): connection refused"),
    ("_TRANSPORT: 127.0.0.1:9192/2: Connect to ipv4#127.0.0.1:9192 failed: Connection refused (after 1ms in state "
     "CONNECT, 1 identical error(s) suppressed)", "cannot reach broker 2 (127.0.0.1:9192): connection refused"),
    ("_TRANSPORT: 127.0.0.1:9292/3: Disconnected (after 12034ms in state UP)",
     "broker 3 (127.0.0.1:9292) closed the connection"),
    ("_ALL_BROKERS_DOWN: 3/3 brokers are down", "cannot reach any broker: all 3 are down or unreachable"),
    ("_TIMED_OUT: 127.0.0.1:9092/1: 2 request(s) timed out: disconnect (after 30000ms in state UP)",
     "2 request(s) to broker 1 (127.0.0.1:9092) timed out"),
    ("_FATAL: something librdkafka gave up on", "something librdkafka gave up on"),
])
def test_librdkafka_lines_become_sentences(raw: str, said: str) -> None:
    assert error_sentence(raw) == said


def test_the_producer_pane_shows_the_sentence_not_the_raw_line() -> None:
    stats = ProducerStats(name="producer", state=ClientState.FAILED, attempted=0, acked=0, failed={}, unknown=0,
                          in_flight=0, rate=0.0, total=1000, error=REFUSED)
    shown = failures_line(stats).plain
    assert "cannot reach the bootstrap server (127.0.0.1:23928): connection refused" in shown
    assert "_TRANSPORT" not in shown and "ipv4#" not in shown
