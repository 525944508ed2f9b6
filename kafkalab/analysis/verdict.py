"""The one-line verdict: the most serious finding, named as the lesson it teaches, then the rest."""

from __future__ import annotations

from collections.abc import Mapping

# class -> (lesson, in order of severity); {n} is the count
LESSONS = (
    ("lost_by_brokers", "{n} acknowledged records never reached the log (acks=0, or acks=1 losing its leader): "
                        "use acks=all with min.insync.replicas=2"),
    ("missed_by_consumers", "{n} records in the topic were never processed: offsets were committed before "
                            "processing"),
    ("lost", "{n} acknowledged records were never processed (give an audit log to tell broker loss from "
             "consumer skips)"),
    # idempotence is not the only way: librdkafka's idempotent producer can bump its epoch during a leader
    # change and send again, as a new epoch, a record the old leader had written (librdkafka issue #4953)
    ("duplicated", "{n} messages were written more than once: producer retries without idempotence (or an "
                   "idempotent producer's retries after it bumped its epoch)"),
    ("redelivered", "{n} records were processed again by the same group: offsets committed late or not at all"),
    ("reordered", "{n} records landed out of order: retries with max.in.flight > 1 and no idempotence"),
    ("recovered", "{n} sends reported as failed are in the topic anyway: a timeout is not proof of loss"),
    ("unexpected", "{n} processed records were not sent by this run: leftovers in the topic or a harness bug"),
)
WHOLE_TOPIC_AGAIN = ("the whole topic ({n} records) was processed again by the same group: a replay (offsets reset "
                     "to the start) or no commits at all; not duplicates, each record is once in the topic")
SHORT = {"lost_by_brokers": "lost by brokers", "missed_by_consumers": "missed by consumers"}
CLEAN = "no anomaly: every acknowledged record was processed, once and in order"
TYPED = "{n} records typed by hand (no message id): received, not part of the producer's audit"


def verdict(classes: Mapping[str, int | None], acknowledged: int | None = None, typed: int = 0) -> str:
    """E.g. ``acks=...: 1,204 acknowledged records never reached the log ...; also 3 duplicated``.

    Every acknowledged record redelivered is named as such: a replay of the whole topic. Records typed by
    hand (``typed``) are no anomaly: they are named last, for what they are.
    """
    typed_note = f"; {TYPED.format(n=f'{typed:,}')}" if typed else ""
    findings = [(name, text) for name, text in LESSONS if classes.get(name)]
    if classes.get("lost_by_brokers") is not None:
        findings = [(name, text) for name, text in findings if name != "lost"]  # the split says it better
    if not findings:
        return CLEAN + typed_note
    name, text = findings[0]
    if name == "redelivered" and acknowledged and classes[name] == acknowledged:
        text = WHOLE_TOPIC_AGAIN
    line = text.format(n=f"{classes[name]:,}")
    rest = [f"{classes[other]:,} {SHORT.get(other, other)}" for other, _ in findings[1:]]
    return line + (f"; also {', '.join(rest)}" if rest else "") + typed_note
