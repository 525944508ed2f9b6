"""Arguments and lookups shared by command modules."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypedDict

from kafkalab import KAFKA_VERSION, KAFKA_VERSIONS
from kafkalab.cluster.control_socket import read_cluster_file
from kafkalab.cluster.spec import CONTROLLER_COUNTS, MODES
from kafkalab.cluster.supervision import is_driven, running_state_dirs
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.distribution import has_kraft_only
from kafkalab.labs.model import Lab
from kafkalab.paths import default_state_dir
from kafkalab.settings_text import name_values


def add_state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir", type=Path, default=None,
        help="the cluster's state dir (default: the one cluster running, else the default dir)",
    )


def add_mode_args(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    """--mode, --kafka-version, --controllers, --combined: on every command that starts a cluster."""
    parser.add_argument("--mode", choices=MODES, default=default,
                        help="metadata by ZooKeeper (default, the course's) or a KRaft controller quorum")
    add_version_arg(parser)
    parser.add_argument("--controllers", type=int, choices=CONTROLLER_COUNTS, default=1,
                        help="KRaft controllers in the quorum: 1 or 3 (default 1; --mode kraft)")
    parser.add_argument("--combined", action="store_true",
                        help="KRaft controllers inside the first brokers (process.roles=broker,controller)")


def add_net_proxies_arg(parser: argparse.ArgumentParser) -> None:
    """--net-proxies / --no-net-proxies; neither (None): the proxies as the lab says, else on (local clusters)."""
    parser.add_argument("--net-proxies", action=argparse.BooleanOptionalAction, default=None,
                        help="every link through kafkalab's network-fault proxy, for `kafkalab net ...` and the "
                             "console's i/H keys (default: on; --no-net-proxies leaves them out, for comparison; "
                             "off on a Docker engine the proxy cannot see into, such as a rootless one)")


def add_version_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kafka-version", default=None, metavar="V", choices=KAFKA_VERSIONS,
                        help=f"the Kafka to run: {' or '.join(KAFKA_VERSIONS)} (default: {KAFKA_VERSION}, or a lab's "
                             "own; 4.x implies --mode kraft, as Kafka 4 has no ZooKeeper)")


class ModeFields(TypedDict):
    mode: str
    controllers: int
    combined: bool


def kafka_version(args: argparse.Namespace) -> str:
    return args.kafka_version or KAFKA_VERSION


def mode_fields(args: argparse.Namespace) -> ModeFields:
    """ClusterSpec fields from the mode options; --controllers/--combined need --mode kraft, and a Kafka
    without ZooKeeper (4.x) implies it."""
    kraft_only = has_kraft_only(kafka_version(args))
    if kraft_only and args.mode == "zookeeper":
        raise KafkalabError(f"Kafka {args.kafka_version} has no ZooKeeper mode (removed in 4.0): use --mode kraft, "
                            f"or --kafka-version {KAFKA_VERSION}")
    mode = args.mode or ("kraft" if kraft_only else "zookeeper")
    if mode != "kraft" and (args.combined or args.controllers != 1):
        raise KafkalabError("--controllers and --combined are KRaft options: add --mode kraft")
    return {"mode": mode, "controllers": args.controllers, "combined": args.combined}


def mode_argv(args: argparse.Namespace) -> list[str]:
    """The mode options again, for a child kafkalab process."""
    argv = ["--mode", args.mode] if args.mode else []
    argv += ["--kafka-version", args.kafka_version] if args.kafka_version else []
    argv += ["--controllers", str(args.controllers)] if args.controllers != 1 else []
    return argv + (["--combined"] if args.combined else [])


def on_platform(lab: Lab, args: argparse.Namespace) -> Lab:
    """The lab on --mode / --kafka-version (neither: its own), or a one-line error when it is not written for them."""
    return lab.on(args.mode, args.kafka_version) if args.mode or args.kafka_version else lab


def net_proxies_asked(args: argparse.Namespace) -> bool | None:
    """--net-proxies (True), --no-net-proxies (False), neither (None: the default)."""
    asked: bool | None = getattr(args, "net_proxies", None)
    return asked


def net_proxies_argv(args: argparse.Namespace) -> list[str]:
    """The choice again, for a child kafkalab process (nothing when neither flag was given)."""
    asked = getattr(args, "net_proxies", None)
    return [] if asked is None else ["--net-proxies" if asked else "--no-net-proxies"]


def with_net_proxies(lab: Lab, args: argparse.Namespace) -> Lab:
    """The lab with the proxies as the command line asks; neither flag: as the lab says, else the default (None,
    which the cluster's spec resolves). A lab with a network fault refuses --no-net-proxies."""
    asked = net_proxies_asked(args)
    if asked is False and any(f.net_action is not None for f in lab.faults):
        raise KafkalabError(f"lab {lab.id} has network faults, which need the network-fault proxies: "
                            "drop --no-net-proxies")
    chosen = asked if asked is not None else lab.cluster.net_proxies
    if chosen == lab.cluster.net_proxies:
        return lab
    return dataclasses.replace(lab, cluster=dataclasses.replace(lab.cluster, net_proxies=chosen))


def target_state_dir(args: argparse.Namespace, *, running_only: bool = False) -> Path:
    """--state-dir, else the one running cluster; two or more running need --state-dir. None running: the default
    dir, or with ``running_only`` (a command that talks to a cluster and starts none) a refusal, as is a
    --state-dir where none runs."""
    if args.state_dir is not None:
        path = Path(args.state_dir).expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise KafkalabError(f"--state-dir {path} is not a directory: give a directory")
        if running_only and not is_driven(path):
            raise KafkalabError(f"no cluster running in {path}: start one with `kafkalab cluster up --detach "
                                f"--state-dir {path}`, or give --bootstrap HOST:PORT")
        return path
    running = running_state_dirs()
    if len(running) == 1:
        return running[0]
    if len(running) > 1:
        names = ", ".join(map(str, running))
        raise KafkalabError(f"{len(running)} clusters are running ({names}): pick one with --state-dir")
    if running_only:
        raise KafkalabError("no kafkalab cluster is running here: start one with `kafkalab cluster up --detach` "
                            "(or name its --state-dir), or give --bootstrap HOST:PORT for a cluster kafkalab did "
                            "not start")
    return default_state_dir()


def parse_settings(pairs: list[str] | None, flag: str = "--set") -> dict[str, str]:
    return name_values(pairs or [], flag, "min.insync.replicas=2")


def bootstrap_for(args: argparse.Namespace) -> str:
    """--bootstrap if given, else the bootstrap of the target cluster."""
    if getattr(args, "bootstrap", None):
        return str(args.bootstrap)
    return str(read_cluster_file(target_state_dir(args))["bootstrap"])


def client_bootstrap_for(args: argparse.Namespace, *, proxied: bool = True) -> str:
    """--bootstrap if given, else the running target's: the bootstrap clients use (through the network-fault
    proxies, where the cluster has them), or with ``proxied=False`` the brokers' own listeners, which no network
    fault cuts (kafkalab's own reading and control, as in a lab run)."""
    if getattr(args, "bootstrap", None):
        return str(args.bootstrap)
    facts = read_cluster_file(target_state_dir(args, running_only=True))
    return str(facts["client_bootstrap" if proxied else "bootstrap"])


def add_target_args(parser: argparse.ArgumentParser) -> None:
    """--state-dir and --bootstrap, as every command that talks to a cluster takes them."""
    add_state_dir(parser)
    parser.add_argument("--bootstrap", default=None, help="bootstrap servers of any Kafka cluster")


def columns(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart, as Kafka's command-line tools print their tables."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]


# errors of a write whose reader is gone: a pipe's reader stopped (`| head`), the terminal closed
OUTPUT_GONE = (errno.EPIPE, errno.EIO)


def silence_output() -> None:
    """Point stdout and stderr at /dev/null: what is left to print (and Python's flush at exit) goes nowhere,
    with no traceback, where a reader has gone."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


@contextlib.contextmanager
def output_gone_quietly() -> Iterator[None]:
    """A print whose reader has gone is dropped, and the rest of the output silenced."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in OUTPUT_GONE:
            raise
        silence_output()
