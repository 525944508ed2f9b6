"""group list/describe/reset/delete: kafka-consumer-groups.sh's facts and column names, on any group.

`describe` fits the terminal's width (cli/tables.py): the group's facts once above, a table per topic; its
member ids, 40-odd characters of client id and UUID, are shortened to MEMBER (said above the table), and
whole in `--members` (beside the short one) and `--json`.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from dataclasses import asdict

from rich.console import Console
from rich.markup import escape

from kafkalab.admin import Admin, GroupDescription, Groups, OffsetMove, ResetTarget
from kafkalab.admin.groups import Member
from kafkalab.cli.common import add_target_args, bootstrap_for, columns
from kafkalab.cli.tables import Column, print_fitted

_TIMEOUT_S = 5.0
OFFSET_COLUMNS = (Column("PARTITION", justify="right"), Column("CURRENT OFFSET", justify="right"),
                  Column("LOG-END OFFSET", justify="right"), Column("LAG", justify="right"), Column("MEMBER"),
                  Column("HOST"), Column("CLIENT-ID"))
# MEMBER first: the short key repeated when the columns split into tables below (the whole id is too wide to be)
MEMBER_COLUMNS = (Column("MEMBER"), Column("CONSUMER-ID"), Column("HOST"), Column("CLIENT-ID"),
                  Column("#PARTITIONS", justify="right"), Column("ASSIGNMENT"))
# a member id as Kafka makes it: the client id (or group.instance.id), a dash, a UUID
_MEMBER_UUID = re.compile(r"-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SHORT_ID_NOTE = "MEMBER: the first 8 characters of its consumer id's UUID (whole: --members, --json)"
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

    usage = "\n".join(("kafkalab group reset GROUP --topic T[:P,...]",
                       "  (--to-earliest | --to-latest | --to-offset N | --shift-by N",
                       "   | --to-datetime ISO)",
                       "  [--dry-run | --execute] [--json]",
                       "  [--state-dir STATE_DIR] [--bootstrap BOOTSTRAP]"))
    p = gsub.add_parser("reset", usage=usage,  # argparse cannot wrap the one-of group at 80 columns
                        help="move a group's committed offsets (only while it has no active member)")
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
    listing = _groups(args).listed_with_gone()
    if args.json:
        print(json.dumps([{"group": g.group_id, "state": g.state, "simple": g.simple,
                           "offsets_gone": asdict(g.offsets_gone) if g.offsets_gone else None} for g in listing],
                         indent=2))
    else:
        now = time.time()
        for line in columns(("GROUP", "STATE"), [(g.group_id, g.state_label(now)) for g in listing]):
            print(line)
    return 0


def cmd_group_describe(args: argparse.Namespace) -> int:
    desc = _groups(args).require(args.group)
    if args.json:
        print(json.dumps(desc.as_dict(), indent=2))
        return 0
    print_describe(Console(highlight=False), desc, members=args.members)
    return 0


def print_describe(console: Console, desc: GroupDescription, members: bool) -> None:
    """The group's facts, then its offsets per topic (or its members), fitted to ``console``'s width."""
    for line in fact_lines(desc, console.width):
        console.print(line, markup=False)
    if desc.offsets_gone is not None:
        console.print(desc.offsets_gone.explain(), markup=False)
    console.print()
    if members:
        print_members(console, desc)
    else:
        print_offsets(console, desc)


def fact_lines(desc: GroupDescription, width: int) -> list[str]:
    """kafka-consumer-groups.sh's header fields, two spaces apart, a new line where the next would not fit."""
    facts = [f"GROUP {desc.group_id}", f"STATE {desc.state_label(desc.taken_at)}",
             f"COORDINATOR {desc.coordinator or '-'}",
             f"ASSIGNMENT-STRATEGY {desc.assignor or '-'}", f"#MEMBERS {len(desc.members)}"]
    lines = [facts[0]]
    for fact in facts[1:]:
        if len(lines[-1]) + 2 + len(fact) <= width:
            lines[-1] += "  " + fact
        else:
            lines.append(fact)
    return lines


def short_member_id(member_id: str) -> str:
    """The first 8 characters of the UUID Kafka appends to a member id; an id of another shape whole."""
    found = _MEMBER_UUID.search(member_id)
    return found.group(1) if found else member_id


def print_offsets(console: Console, desc: GroupDescription) -> None:
    """The offsets table of kafka-consumer-groups.sh --describe, one table per topic with the topic above it;
    members with no partition are listed below."""
    topics: dict[str, list[list[str]]] = {}
    for p in desc.partitions:
        m = p.member
        topics.setdefault(p.topic, []).append(
            [str(p.partition), _num(p.committed), _num(p.log_end), _num(p.lag),
             *(_member_cells(m) if m else ["-", "-", "-"])])
    idle = [_member_cells(m) for m in desc.members if not m.partitions]
    if not topics and not idle:
        console.print("no committed offset and no member", markup=False)
        return
    console.print(SHORT_ID_NOTE, markup=False)
    for topic, rows in topics.items():
        console.print()
        print_fitted(console, OFFSET_COLUMNS, _escaped(rows), title=f"topic {escape(topic)}")
    if idle:
        console.print()
        print_fitted(console, OFFSET_COLUMNS[4:], _escaped(idle), title="members with no partition")


def _member_cells(m: Member) -> list[str]:
    return [short_member_id(m.member_id), m.host, m.client_id]


def print_members(console: Console, desc: GroupDescription) -> None:
    """One row per member, its id whole; columns that do not fit go to a table below, MEMBER repeated."""
    rows = []
    for m in desc.members:
        topics: dict[str, list[str]] = {}
        for t, p in sorted(m.partitions):
            topics.setdefault(t, []).append(str(p))
        assignment = "\n".join(f"{t}:{','.join(ps)}" for t, ps in topics.items()) or "-"  # a topic a line, whole
        rows.append([short_member_id(m.member_id), m.member_id, m.host, m.client_id, str(len(m.partitions)),
                     assignment])
    if not rows:
        console.print("no member", markup=False)
        return
    console.print(SHORT_ID_NOTE, markup=False)
    print_fitted(console, MEMBER_COLUMNS, _escaped(rows))


def _escaped(rows: list[list[str]]) -> list[list[str]]:
    """Cells as text: a name with [brackets] is no Rich markup."""
    return [[escape(cell) for cell in row] for row in rows]


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

