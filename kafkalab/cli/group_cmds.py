"""group list/describe/reset/delete: kafka-consumer-groups.sh's facts and column names, on any group."""

from __future__ import annotations

import argparse
import json

from kafkalab.admin import Admin, GroupDescription, Groups, OffsetMove, ResetTarget
from kafkalab.cli.common import add_target_args, bootstrap_for, columns

_TIMEOUT_S = 5.0
OFFSET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                  "CLIENT-ID")
MEMBER_COLUMNS = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")
RESET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = sub.add_parser("group", help="list, describe, reset or delete consumer groups")
    gsub = group.add_subparsers(dest="group_command", metavar="ACTION", required=True)
    p = gsub.add_parser("list", help="every consumer group of the cluster, with its state")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_group_list)

    p = gsub.add_parser("describe", help="state, coordinator, assignor, and per partition offsets and lag")
    p.add_argument("group")
    p.add_argument("--members", action="store_true", help="one line per member with its partitions")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_group_describe)

    p = gsub.add_parser("reset", help="move a group's committed offsets (only while it has no active member)")
    p.add_argument("group")
    p.add_argument("--topic", action="append", required=True, metavar="T[:P,...]",
                   help="topic, or topic:partitions, to reset; repeatable")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the first offset still in the log")
    to.add_argument("--to-latest", action="store_true", help="the log-end offset")
    to.add_argument("--to-offset", metavar="N", help="offset N (clamped to the log's range)")
    to.add_argument("--shift-by", metavar="N", help="the committed offset plus N (N may be negative)")
    to.add_argument("--to-datetime", metavar="ISO",
                    help="the first record at or after this time (e.g. 2024-05-01T12:30:00)")
    run = p.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    run.add_argument("--execute", action="store_true", help="commit the new offsets")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_group_reset)

    p = gsub.add_parser("delete", help="delete a group with no active member, and its committed offsets")
    p.add_argument("group")
    p.set_defaults(func=cmd_group_delete)
    for gp in gsub.choices.values():
        add_target_args(gp)


def _groups(args: argparse.Namespace) -> Groups:
    return Groups(Admin(bootstrap_for(args), timeout_s=_TIMEOUT_S))


def cmd_group_list(args: argparse.Namespace) -> int:
    listing = _groups(args).list()
    if args.json:
        print(json.dumps([{"group": g.group_id, "state": g.state, "simple": g.simple} for g in listing], indent=2))
    else:
        for line in columns(("GROUP", "STATE"), [(g.group_id, g.state) for g in listing]):
            print(line)
    return 0


def cmd_group_describe(args: argparse.Namespace) -> int:
    desc = _groups(args).require(args.group)
    if args.json:
        print(json.dumps(desc.as_dict(), indent=2))
        return 0
    print(f"GROUP {desc.group_id}  STATE {desc.state}  COORDINATOR {desc.coordinator or '-'}  "
          f"ASSIGNMENT-STRATEGY {desc.assignor or '-'}  #MEMBERS {len(desc.members)}")
    print()
    for line in member_lines(desc) if args.members else offset_lines(desc):
        print(line)
    return 0


def offset_lines(desc: GroupDescription) -> list[str]:
    """The offsets table of kafka-consumer-groups.sh --describe; members with no partition get a '-' row."""
    rows = [(desc.group_id, p.topic, str(p.partition), _num(p.committed), _num(p.log_end), _num(p.lag),
             p.member.member_id if p.member else "-", p.member.host if p.member else "-",
             p.member.client_id if p.member else "-") for p in desc.partitions]
    rows += [(desc.group_id, "-", "-", "-", "-", "-", m.member_id, m.host, m.client_id)
             for m in desc.members if not m.partitions]
    return columns(OFFSET_COLUMNS, rows)


def member_lines(desc: GroupDescription) -> list[str]:
    rows = [(desc.group_id, m.member_id, m.host, m.client_id, str(len(m.partitions)),
             ",".join(f"{t}:{p}" for t, p in m.partitions) or "-") for m in desc.members]
    return columns(MEMBER_COLUMNS, rows)


def reset_lines(group: str, moves: list[OffsetMove]) -> list[str]:
    return columns(RESET_COLUMNS, [(group, m.topic, str(m.partition), str(m.new)) for m in moves])


def reset_target(args: argparse.Namespace) -> ResetTarget:
    for mode in ("to_offset", "shift_by", "to_datetime"):
        if getattr(args, mode) is not None:
            return ResetTarget(mode.replace("_", "-"), getattr(args, mode))
    return ResetTarget("to-earliest" if args.to_earliest else "to-latest")


def cmd_group_reset(args: argparse.Namespace) -> int:
    target = reset_target(args)  # a malformed value fails before the cluster is asked
    moves = _groups(args).reset(args.group, args.topic, target, execute=args.execute)
    if args.json:
        print(json.dumps({"group": args.group, "executed": args.execute, "offsets": [m.as_dict() for m in moves]},
                         indent=2))
        return 0
    for line in reset_lines(args.group, moves):
        print(line)
    if not args.execute:
        print(f"(dry run: nothing committed; add --execute to move group {args.group} {target.describe()})")
    return 0


def cmd_group_delete(args: argparse.Namespace) -> int:
    groups = _groups(args)
    groups.require(args.group)
    groups.delete(args.group)
    print(f"Deletion of requested consumer group ('{args.group}') was successful.")
    return 0


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)

