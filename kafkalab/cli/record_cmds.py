"""tail and type: read a topic as kcat/kafka-console-consumer do, and type records into it by hand."""

from __future__ import annotations

import argparse
import sys

from kafkalab.admin import Admin, Groups
from kafkalab.cli.common import add_target_args, client_bootstrap_for
from kafkalab.clients.options import parse_defines
from kafkalab.clients.records import (
    DEFAULT_FORMAT,
    DEFAULT_ISOLATION,
    ISOLATION_LEVELS,
    KEYS_FORMAT,
    OFFSET_BEGINNING,
    RecordTail,
    RecordTyper,
    parse_start,
)
from kafkalab.errors import KafkalabError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("tail", help="print a topic's records as they come, one line each (like kcat -C)")
    p.add_argument("topic")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the first record")
    start.add_argument("--offset", default=None, metavar="beginning|end|N",
                       help="where to start (default end; with --group, the group's committed offsets)")
    p.add_argument("--group", default=None, help="join this consumer group (offsets committed as read)")
    p.add_argument("--partition", type=int, default=None, help="only this partition (not with --group)")
    keys_format = KEYS_FORMAT.replace("%", "%%")  # argparse formats help with %
    p.add_argument("--keys", action="store_true", help=f"print the key before the value ({keys_format!r})")
    p.add_argument("--format", default=None, metavar="FMT",
                   help="kcat-like: %%t topic, %%p partition, %%o offset, %%k key, %%s value, %%T timestamp")
    p.add_argument("-e", "--exit", action="store_true", help="exit once every partition is read to its end")
    p.add_argument("-c", "--count", type=int, default=None, metavar="N", help="exit after N records")
    p.add_argument("--isolation", choices=ISOLATION_LEVELS, default=DEFAULT_ISOLATION,
                   help="read_uncommitted (default, as Kafka's console consumer and the lab consumers: every record, "
                        "an open or aborted transaction's too) or read_committed (committed transactions' records "
                        "only, up to the last stable offset: -e stops short of an open transaction)")
    add_target_args(p)
    p.set_defaults(func=cmd_tail)

    p = sub.add_parser("type", help="send each line typed or piped as a record, printing where it landed")
    p.add_argument("topic")
    p.add_argument("--key-sep", default=None, metavar="SEP", help="split each line into key SEP value")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="producer.NAME=VALUE",
                   help="a producer option (e.g. producer.acks=1); `kafkalab produce --options` lists them")
    add_target_args(p)
    p.set_defaults(func=cmd_type)


def cmd_tail(args: argparse.Namespace) -> int:
    if args.group and args.partition is not None:
        raise KafkalabError("--partition reads one partition alone: drop --group, or drop --partition")
    if args.group and args.offset not in (None, "end", "beginning"):
        raise KafkalabError("--offset N needs no --group (a group starts at its committed offsets): drop one")
    if args.count is not None and args.count < 1:
        raise KafkalabError(f"--count {args.count} must be at least 1")
    start = OFFSET_BEGINNING if args.from_beginning else parse_start(args.offset or "end")
    bootstrap = client_bootstrap_for(args)  # a client: through the network-fault proxies, as produce's
    partitions = Groups(Admin(bootstrap, timeout_s=5.0)).partition_ids(args.topic)
    if args.partition is not None:
        if args.partition not in partitions:
            raise KafkalabError(f"topic {args.topic} has no partition {args.partition}: "
                                f"its partitions are 0..{len(partitions) - 1}")
        partitions = [args.partition]
    fmt = args.format or (KEYS_FORMAT if args.keys else DEFAULT_FORMAT)
    tail = RecordTail(bootstrap, args.topic, partitions, start, args.group, stop_at_end=args.exit,
                      isolation=args.isolation)
    printed = 0
    try:
        while not tail.at_end:
            left = 500 if args.count is None else args.count - printed
            for record in tail.poll(0.2, limit=left):  # no more consumed (and committed) than printed
                print(record.format(fmt), flush=True)
                printed += 1
                if args.count is not None and printed >= args.count:
                    return 0
    except KeyboardInterrupt:
        pass
    finally:
        tail.close()
        print(f"% {printed} record(s) read", file=sys.stderr)
    return 0


def cmd_type(args: argparse.Namespace) -> int:
    settings = parse_defines(args.defines)
    bootstrap = client_bootstrap_for(args)  # a client: through the network-fault proxies, as produce's
    Groups(Admin(bootstrap, timeout_s=5.0)).partition_ids(args.topic)  # an unknown topic: one line, exit 2
    typer = RecordTyper(bootstrap, args.topic, settings)
    echo = not sys.stdin.isatty()
    failed = 0
    try:
        for raw in sys.stdin:
            line = raw.rstrip("\n")
            if not line:
                continue
            outcome = typer.send(line, args.key_sep)
            failed += not outcome.ok
            print(f"{line}\t{outcome.describe()}" if echo else outcome.describe(), flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        typer.close()
    return 1 if failed else 0
