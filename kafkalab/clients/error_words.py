"""A client's error as a sentence for the panes; the raw librdkafka line stays in the run's timeline and logs.

librdkafka reports a transport error as ``_TRANSPORT: 127.0.0.1:23928/2: Connect to ipv4#127.0.0.1:23928
failed: Connection refused (after 0ms in state CONNECT)``: cut to a pane's width, only its tail showed, with
the broker and the cause lost. The pane says what it means: "cannot reach broker 2 (127.0.0.1:23928):
connection refused".
"""

from __future__ import annotations

import re

_NAMED = re.compile(r"(?P<name>_?[A-Z][A-Z0-9_]*): (?P<rest>.*)", re.DOTALL)
# "HOST:PORT/ID: " or "sasl_ssl://HOST:PORT/bootstrap: ": which broker the line is about
_WHO = re.compile(r"(?:[a-z_]+://)?(?P<addr>[^\s/]+:\d+)/(?P<id>\d+|bootstrap): (?P<what>.*)", re.DOTALL)
_CONNECT = re.compile(r"Connect to \S+ failed: (?P<why>[^(]+?)\s*(?:\(after.*)?$", re.DOTALL)
_DISCONNECTED = re.compile(r"Disconnected\b.*", re.DOTALL)
_ALL_DOWN = re.compile(r"(?P<down>\d+)/(?P<all>\d+) brokers are down")
_TIMED_OUT = re.compile(r"(?P<n>\d+) request\(s\) timed out", re.DOTALL)


def error_sentence(raw: str) -> str:
    """``raw`` (a client's ``NAME: text`` error line) in words; unknown shapes keep their text, without the
    error's code name when the text says more."""
    named = _NAMED.fullmatch(raw.strip())
    rest = named["rest"] if named else raw.strip()
    if all_down := _ALL_DOWN.search(rest):
        return f"cannot reach any broker: all {all_down['all']} are down or unreachable"
    who = _WHO.fullmatch(rest)
    if who is None:
        return rest
    broker = "the bootstrap server" if who["id"] == "bootstrap" else f"broker {who['id']}"
    what = who["what"].strip()
    if connect := _CONNECT.match(what):
        return f"cannot reach {broker} ({who['addr']}): {connect['why'].strip().lower()}"
    if _DISCONNECTED.match(what):
        return f"{broker} ({who['addr']}) closed the connection"
    if timed_out := _TIMED_OUT.search(what):
        return f"{timed_out['n']} request(s) to {broker} ({who['addr']}) timed out"
    return f"{broker} ({who['addr']}): {what}"


# a failed send's error (librdkafka's name, or kafkalab's ABORTED) in a few words, where its letters do not say it
# (the one place for them): the producer pane says "412 failed: delivery timeout", the payload log _MSG_TIMED_OUT
FAILURE_WORDS = {
    "_MSG_TIMED_OUT": "delivery timeout",
    "NOT_ENOUGH_REPLICAS": "not enough in-sync replicas",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "in-sync replicas lost during the write",
    "MSG_SIZE_TOO_LARGE": "record too large",
    "_MSG_SIZE_TOO_LARGE": "record too large",
    "_PURGE_QUEUE": "purged before it was sent",
    "UNKNOWN_TOPIC_OR_PART": "unknown topic or partition",
    "ABORTED": "transaction aborted",
    "MAX_BLOCK_TIMED_OUT": "send() blocked past max.block.ms",
}


def failure_words(name: str) -> str:
    """A failed send's error name in words: ``_MSG_TIMED_OUT`` is "delivery timeout"; a name not listed is read
    out of its letters (``INVALID_RECORD``: "invalid record")."""
    return FAILURE_WORDS.get(name) or name.strip("_").replace("_", " ").lower()
