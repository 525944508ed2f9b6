"""Arguments and lookups shared by command modules."""

from __future__ import annotations

import argparse
from pathlib import Path

from kafkalab.cluster.control import read_cluster_file
from kafkalab.cluster.supervision import running_state_dirs
from kafkalab.errors import KafkalabError
from kafkalab.paths import default_state_dir


def add_state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir", type=Path, default=None,
        help="the cluster's state dir (default: the one cluster running, else the default dir)",
    )


def target_state_dir(args: argparse.Namespace) -> Path:
    """--state-dir, else the one running cluster; two or more running need --state-dir."""
    if args.state_dir is not None:
        path = Path(args.state_dir).expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise KafkalabError(f"--state-dir {path} is not a directory: give a directory")
        return path
    running = running_state_dirs()
    if len(running) == 1:
        return running[0]
    if len(running) > 1:
        names = ", ".join(map(str, running))
        raise KafkalabError(f"{len(running)} clusters are running ({names}): pick one with --state-dir")
    return default_state_dir()


def parse_settings(pairs: list[str] | None, flag: str = "--set") -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise KafkalabError(f"{flag} {pair!r} is not name=value: write e.g. {flag} min.insync.replicas=2")
        settings[key.strip()] = value.strip()
    return settings


def bootstrap_for(args: argparse.Namespace) -> str:
    """--bootstrap if given, else the bootstrap of the target cluster."""
    if getattr(args, "bootstrap", None):
        return str(args.bootstrap)
    return str(read_cluster_file(target_state_dir(args))["bootstrap"])


def add_target_args(parser: argparse.ArgumentParser) -> None:
    """--state-dir and --bootstrap, as every command that talks to a cluster takes them."""
    add_state_dir(parser)
    parser.add_argument("--bootstrap", default=None, help="bootstrap servers of any Kafka cluster")


def columns(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned columns two spaces apart, as Kafka's command-line tools print their tables."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
