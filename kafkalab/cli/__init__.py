"""The `kafkalab` command: every capability reachable headless.

Each command module exposes ``register(subparsers)``, adding its sub-commands with a ``func`` default
that takes the parsed args and returns an exit code. A :class:`KafkalabError` becomes one line on
stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Collection, Sequence

from kafkalab import __version__
from kafkalab.cli import (
    client_cmds,
    cluster_cmds,
    console_cmd,
    diff_cmd,
    docker_cmds,
    fix_cmds,
    group_cmds,
    lab_cmds,
    net_cmds,
    record_cmds,
    replay_cmd,
    txn_cmds,
)
from kafkalab.cli.common import OUTPUT_GONE, output_gone_quietly, silence_output
from kafkalab.errors import KafkalabError

# One module per area, each adding its own sub-commands, in the order `kafkalab --help` lists them; imported
# by name, not looked up by a string, so the import contracts and the cycle test see every arrow.
COMMAND_MODULES = (cluster_cmds, net_cmds, console_cmd, client_cmds, docker_cmds, lab_cmds, fix_cmds, diff_cmd,
                   group_cmds, record_cmds, replay_cmd, txn_cmds)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafkalab",
        description="A terminal lab console for Apache Kafka failover and break-fix workshops.",
    )
    parser.add_argument("--version", action="version", version=f"kafkalab {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def lab_given_as_command(argv: Sequence[str], commands: Collection[str]) -> str | None:
    """The lab a person named where a command goes (`kafkalab acks-0`, `kafkalab --presenter acks-0`): argparse
    would list every command; the fix is one word away."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] in commands:
        return None
    from kafkalab.labs.loader import catalog, lab_id_of

    return words[0] if words[0].endswith(".toml") or words[0] in map(lab_id_of, catalog()) else None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    commands = next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if lab := lab_given_as_command(argv, commands):
        print(f"kafkalab: error: {lab} is a lab, not a command: open it with `kafkalab console {' '.join(argv)}` "
              f"(or run it headless: `kafkalab run {lab} --headless`)", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:  # no command: the console on the default lab
        from kafkalab.cli.console_cmd import cmd_console, console_args

        args, func = console_args(), cmd_console
    try:
        return int(func(args) or 0)
    except KafkalabError as exc:
        print(f"kafkalab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        with output_gone_quietly():
            print("kafkalab: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno not in OUTPUT_GONE:
            raise
        silence_output()  # a reader that stopped (`| head`) or a closed terminal: end quietly, as other tools do
        return 1


def run() -> None:
    sys.exit(main())
