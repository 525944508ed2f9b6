"""The one-line verdict: the most serious finding, named as the lesson it teaches, then the rest."""

from __future__ import annotations

from collections.abc import Mapping

from kafkalab.analysis.job import Identity
from kafkalab.analysis.report import DELIVERY_TIMEOUT, Report, loss_parts
from kafkalab.logformat import MAX_BLOCK_TIMED_OUT

# class -> (what the run saw, why it happens and what to do), in order of severity; {n} is the count. An
# incident's verdict gives the first half only: the cause is the attendee's to find.
LESSONS = (
    ("lost_by_brokers", "{n} acknowledged records never reached the log",
     " (acks=0, or acks=1 losing its leader): use acks=all with min.insync.replicas=2"),
    ("missed_by_consumers", "{n} records in the topic were never processed",
     ": offsets were committed before processing"),
    ("lost", "{n} acknowledged records were never processed",
     " (give an audit log to tell broker loss from consumer skips)"),
    # idempotence is not the only way: librdkafka's idempotent producer can bump its epoch during a leader
    # change and send again, as a new epoch, a record the old leader had written (librdkafka issue #4953)
    ("duplicated", "{n} messages were written more than once",
     ": producer retries without idempotence (or an idempotent producer's retries after it bumped its epoch)"),
    # data that was never committed, acted on: no retry or redelivery repairs that, so before them
    ("aborted_read", "{n} records of aborted transactions were processed",
     ": the consumers read uncommitted records (isolation.level=read_uncommitted): use read_committed"),
    # before redelivered: a key's older record processed after its newer one overwrites the newer state, which no
    # idempotent consumer absorbs (and adding partitions triggers a rebalance, which may redeliver a few records)
    ("key_reordered", "{n} records were processed after a newer record of the same key",
     " (keys move when partitions are added: order holds per partition only)"),
    ("redelivered", "{n} records were processed again by the same group", ": offsets committed late or not at all"),
    ("consumed_twice", "{n} records were processed more times than they were acknowledged",
     ": redelivered (offsets committed late) or written twice (retries without idempotence); give an audit log "
     "to tell which"),
    ("reordered", "{n} records landed out of order", ": retries with max.in.flight > 1 and no idempotence"),
    ("recovered", "{n} sends reported as failed are in the topic anyway", ": a timeout is not proof of loss"),
    ("unexpected", "{n} processed records were not sent by this run",
     ": leftovers in the topic or a harness bug"),
)
WHOLE_TOPIC_AGAIN = ("the whole topic ({n} records) was processed again by the same group",
                     ": a replay (offsets reset to the start) or no commits at all; not duplicates, each record is "
                     "once in the topic")
# nothing processed at all is no commit too early: the consumers never had the records to commit past
NOTHING_PROCESSED = ("no consumer processed a single record: {n} acknowledged records were never read",
                     " (did the consumers ever get partitions? see the Groups tab)")
# acks=all lost records only where the ISR let a leader answer alone (min.insync.replicas=1), then lost them
ACKS_ALL_LOST = (" with acks=all: a leader alone in its ISR acknowledged them (min.insync.replicas=1), and a replica "
                 "without them led after it (an unclean election): use min.insync.replicas=2 and keep "
                 "unclean.leader.election.enable off")
KEY_REORDERED_OF_KEYS = "{n} records of {k} keys were processed after a newer record of the same key"
SHORT = {"lost_by_brokers": "lost by brokers", "missed_by_consumers": "missed by consumers",
         "consumed_twice": "consumed twice", "key_reordered": "out of their key's order",
         "aborted_read": "aborted records read"}
# no anomaly of the analysis's (the cluster lost nothing), yet the app's records are gone unless it handles them:
# failed sends by the producer's reason -> (what the run saw, why)
GAVE_UP = (
    (DELIVERY_TIMEOUT, "{n} records failed in the producer after its delivery timeout (delivery.timeout.ms)",
     ": the cluster did not lose them; the app must handle the failure or they are gone"),
    (MAX_BLOCK_TIMED_OUT, "{n} records were never sent: send() blocked past max.block.ms, its buffer full",
     ": the cluster did not lose them; the app must handle send()'s exception or they are gone"),
)
CLEAN = "no anomaly: every acknowledged record was processed, once and in order"
# logs without message ids (the course's): what the counts are of, and what they cannot see
CLEAN_BY_CONTENT = "no anomaly: every acknowledged record was processed, as many times as it was acknowledged"
BY_CONTENT = " (records matched by topic, partition, key and value: the logs carry no message id)"
TYPED = "{n} records typed by hand (no message id): received, not part of the producer's audit"


def verdict(classes: Mapping[str, int | None], acknowledged: int | None = None, typed: int = 0,
            consumed: int | None = None, causes: bool = True, acks: str | None = None,
            identity: Identity = Identity.MESSAGE_ID, failed_by_reason: Mapping[str, int] | None = None,
            key_reordered_keys: int | None = None) -> str:
    """E.g. ``1,204 acknowledged records never reached the log (acks=0, ...): use ...; also 3 duplicated``.

    Every acknowledged record redelivered is named as such: a replay of the whole topic; none processed at all
    (``consumed`` 0), as such. Records typed by hand (``typed``) are no anomaly: they are named last, for what
    they are. ``causes=False``: what the run saw, not why (an incident's attendee finds the why). ``acks``: the
    producer's setting when known (a lab's run), so a loss under acks=all is not blamed on acks=0 or 1.
    ``identity``: how records were matched; by content, the line says so (its counts are of copies).
    ``failed_by_reason``: failed sends per the producer's error; those its delivery timeout or a blocked send()
    failed are named, after the findings (the lesson itself where there is none). ``key_reordered_keys``: how many
    keys the key_reordered records are of.
    """
    typed_note = f"; {TYPED.format(n=f'{typed:,}')}" if typed else ""
    if identity is Identity.CONTENT:
        typed_note += BY_CONTENT
    failed = failed_by_reason or {}
    timed_out_line = "; ".join(seen.format(n=f"{failed[reason]:,}") + (why if causes else "")
                               for reason, seen, why in GAVE_UP if failed.get(reason))
    findings = [lesson for lesson in LESSONS if classes.get(lesson[0])]
    if classes.get("lost_by_brokers") is not None:
        findings = [lesson for lesson in findings if lesson[0] != "lost"]  # the split says it better
    if not findings:
        return (timed_out_line or (CLEAN if identity is Identity.MESSAGE_ID else CLEAN_BY_CONTENT)) + typed_note
    name, seen, why = findings[0]
    if name == "key_reordered" and key_reordered_keys:
        seen = KEY_REORDERED_OF_KEYS.format(n="{n}", k=f"{key_reordered_keys:,}")
    if name == "lost_by_brokers" and acks in ("all", "-1"):
        why = ACKS_ALL_LOST
    if name == "redelivered" and acknowledged and classes[name] == acknowledged:
        seen, why = WHOLE_TOPIC_AGAIN
    if consumed == 0 and acknowledged and name in ("missed_by_consumers", "lost"):
        seen, why = NOTHING_PROCESSED
        n = acknowledged
        if parts := loss_parts(classes):  # where the audit told them apart, which of the two it was
            seen += f" ({parts})"
    else:
        n = classes[name] or 0
    line = seen.format(n=f"{n:,}") + (why if causes else "")
    rest = [f"{classes[other]:,} {SHORT.get(other, other)}" for other, _, _ in findings[1:]]
    return (line + (f"; also {', '.join(rest)}" if rest else "") + (f"; {timed_out_line}" if timed_out_line else "")
            + typed_note)


def report_verdict(report: Report, causes: bool = True, acks: str | None = None) -> str:
    """:func:`verdict` of everything ``report`` counts (a lab's run words it again: see ``causes`` and ``acks``)."""
    totals = report.totals
    return verdict(report.classes, totals.get("acknowledged"), totals.get("typed", 0), totals.get("consumed_rows"),
                   causes=causes, acks=acks, identity=report.identity, failed_by_reason=report.failed_by_reason,
                   key_reordered_keys=report.key_reordered_keys)
