"""txn list/describe/find-hanging/abort: what `kafka-transactions.sh` does, through Kafka's Admin API.

confluent-kafka has no transaction admin calls, so each command runs kafkalab's Java helper
(:mod:`kafkalab.admin.transactions`) once. Nothing found (no transactions, none hanging) is exit 1, as grep's;
an unknown id, a partition with no open transaction, an unreachable cluster: one line, exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

from kafkalab.admin.transactions import (
    READ_PAST,
    OpenTransaction,
    TransactionDescription,
    abort_transactions,
    aborted_line,
    describe_transaction,
    find_hanging,
    helper_distribution,
    list_transactions,
)
from kafkalab.cli.common import add_target_args, bootstrap_for, columns
from kafkalab.errors import KafkalabError

LIST_COLUMNS = ("TRANSACTIONAL-ID", "PRODUCER-ID", "STATE")
HANGING_COLUMNS = ("TOPIC", "PARTITION", "PRODUCER-ID", "PRODUCER-EPOCH", "COORDINATOR-EPOCH", "START-OFFSET",
                   "LAST-TIMESTAMP", "DURATION(MIN)")
DEFAULT_MAX_TIMEOUT_MIN = 15  # kafka-transactions.sh's, and the brokers' transaction.max.timeout.ms


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    txn = sub.add_parser("txn", help="list, describe, find hanging or abort transactions (kafka-transactions.sh)")
    tsub = txn.add_subparsers(dest="txn_command", metavar="ACTION", required=True)
    p = tsub.add_parser("list", help="every transactional id the coordinators know, with its producer id and state")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_txn_list)

    p = tsub.add_parser("describe", help="one transactional id: coordinator, state, producer, timeout, partitions")
    p.add_argument("transactional_id", metavar="ID")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_txn_describe)

    p = tsub.add_parser("find-hanging", help="open transactions no coordinator will end (kafka-transactions.sh "
                                             "find-hanging)")
    p.add_argument("--broker", type=int, default=None, metavar="N",
                   help="search the partitions with a replica on broker N (default: every partition, at its leader)")
    p.add_argument("--topic", default=None, help="search this topic's partitions only")
    p.add_argument("--partition", type=int, default=None, help="only this partition (needs --topic)")
    p.add_argument("--max-transaction-timeout", type=int, default=DEFAULT_MAX_TIMEOUT_MIN, metavar="MIN",
                   help="only transactions open longer than this, in minutes (default 15: the brokers' "
                        "transaction.max.timeout.ms; a shorter one: give it)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_txn_find_hanging)

    p = tsub.add_parser("abort", help="abort the open transaction on a partition (kafka-transactions.sh abort), or "
                                      "every one open on a topic")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, default=None,
                   help="the partition (default: every transaction open on the topic's partitions)")
    p.add_argument("--start-offset", type=int, default=None, metavar="N",
                   help="the transaction starting at offset N (needed only when several are open there)")
    p.set_defaults(func=cmd_txn_abort)
    for action in (tsub.choices[name] for name in ("list", "describe", "find-hanging", "abort")):
        add_target_args(action)


def cmd_txn_list(args: argparse.Namespace) -> int:
    bootstrap = bootstrap_for(args)
    listing = list_transactions(helper_distribution(), bootstrap)
    if args.json:
        print(json.dumps([dataclasses.asdict(t) for t in listing], indent=2))
    elif listing:
        rows = [(t.transactional_id, str(t.producer_id), t.state) for t in listing]
        print("\n".join(columns(LIST_COLUMNS, rows)))
    if not listing:
        print(f"no transactional ids on the cluster at {bootstrap}", file=sys.stderr)
        return 1
    return 0


def cmd_txn_describe(args: argparse.Namespace) -> int:
    desc = describe_transaction(helper_distribution(), bootstrap_for(args), args.transactional_id)
    if args.json:
        print(json.dumps(dataclasses.asdict(desc), indent=2))
    else:
        print("\n".join(describe_lines(desc, time.time())))
    return 0


def describe_lines(desc: TransactionDescription, now_s: float) -> list[str]:
    """`txn describe`'s lines: one fact each, as `name  value`."""
    if desc.start_time_ms is None:
        started = "-"
    else:
        clock = time.strftime("%H:%M:%S", time.localtime(desc.start_time_ms / 1000))
        started = f"{clock}.{desc.start_time_ms % 1000:03d} ({max(0.0, now_s - desc.start_time_ms / 1000):.1f} s ago)"
    facts = [("transactional id", desc.transactional_id), ("coordinator", f"broker {desc.coordinator}"),
             ("state", desc.state), ("producer", f"id {desc.producer_id}, epoch {desc.producer_epoch}"),
             ("timeout", f"{desc.timeout_ms} ms"), ("started", started),
             ("partitions", ", ".join(f"{t}-{p}" for t, p in desc.partitions) or "-")]
    width = max(len(name) for name, _ in facts)
    return [f"{name.ljust(width)}  {value}" for name, value in facts]


def cmd_txn_find_hanging(args: argparse.Namespace) -> int:
    if args.partition is not None and args.topic is None:
        raise KafkalabError("--partition needs --topic: name the partition's topic")
    if args.max_transaction_timeout < 0:
        raise KafkalabError(f"--max-transaction-timeout {args.max_transaction_timeout} is negative: give minutes >= 0")
    bootstrap = bootstrap_for(args)
    hanging = find_hanging(helper_distribution(), bootstrap, broker=args.broker, topic=args.topic,
                           partition=args.partition, max_timeout_ms=args.max_transaction_timeout * 60_000)
    if args.json:
        print(json.dumps([dataclasses.asdict(t) for t in hanging], indent=2))
    elif hanging:
        print("\n".join(columns(HANGING_COLUMNS, [hanging_row(t, time.time()) for t in hanging])))
    if not hanging:
        print(f"no hanging transactions {searched(args)} (open over {args.max_transaction_timeout} min)",
              file=sys.stderr)
        return 1
    return 0


def hanging_row(t: OpenTransaction, now_s: float) -> tuple[str, ...]:
    minutes = max(0, int((now_s * 1000 - t.last_timestamp) // 60_000))
    return (t.topic, str(t.partition), str(t.producer_id), str(t.producer_epoch), str(t.coordinator_epoch),
            str(t.start_offset), str(t.last_timestamp), str(minutes))


def searched(args: argparse.Namespace) -> str:
    """Where find-hanging looked, in words."""
    if args.topic is None:
        return "on any partition" if args.broker is None else f"on broker {args.broker}'s partitions"
    where = f"on topic {args.topic}" if args.partition is None else f"on {args.topic}-{args.partition}"
    return where if args.broker is None else f"{where} (its replica on broker {args.broker})"


def cmd_txn_abort(args: argparse.Namespace) -> int:
    if args.start_offset is not None and args.start_offset < 0:
        raise KafkalabError(f"--start-offset {args.start_offset} is negative: give an offset >= 0")
    aborted = abort_transactions(helper_distribution(), bootstrap_for(args), args.topic, args.partition,
                                 args.start_offset)
    for t in aborted:
        print(f"{aborted_line(t)}: {READ_PAST}")
    print("(its coordinator ends it, Ongoing until then, when the producer aborts or it times out: "
          "transaction.timeout.ms)", file=sys.stderr)
    return 0
