"""`kafkalab console [LAB]` (and `kafkalab` alone): the Textual lab console.

Textual is imported only when the console opens, so every other command starts without it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from kafkalab.child_python import python_module
from kafkalab.cli.client_args import add_client_args, with_clients
from kafkalab.cli.common import (
    add_mode_args,
    add_net_proxies_arg,
    kafka_version,
    mode_fields,
    net_proxies_asked,
    on_platform,
    with_net_proxies,
)
from kafkalab.cli.console_hangup import HANGUP_EXIT, Hangup, HangupWatch, hangup_watch
from kafkalab.cluster.remote import owner_of_ports
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.errors import KafkalabError
from kafkalab.paths import RUNS_DIR

if TYPE_CHECKING:
    from kafkalab.feeds.source import Source
    from kafkalab.ui.app import LabConsole
    from kafkalab.ui.controllers import MetadataPanes

DEFAULT_LAB = "leader-failover"
ATTACH_FOUND = Path("")  # --attach without a state dir: the cluster on the default ports, or the one running
RECORDED_ENV = "KAFKALAB_RECORDED"  # set in the console a recording runs in a pty: it records nothing itself


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("console", help="open the lab console (the default when kafkalab gets no command)")
    add_console_args(p)
    p.set_defaults(func=cmd_console)


def add_console_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("lab", nargs="?", default=None,
                   help=f"a lab id, catalog number or .toml path (default: {DEFAULT_LAB})")
    p.add_argument("--no-lab", action="store_true",
                   help="no lab: a bare cluster that starts at once, to break by hand")
    p.add_argument("--brokers", type=int, default=3, help="brokers of the bare cluster (with --no-lab)")
    p.add_argument("--state-dir", type=Path, default=None, help="state dir of the bare cluster (with --no-lab)")
    p.add_argument("--free-ports", action="store_true",
                   help="free ports for every node (default: the usual ports; where another cluster holds them, "
                        "a lab's run takes free ones and the bare console asks: free ports, attach or quit)")
    p.add_argument("--attach", nargs="?", type=Path, const=ATTACH_FOUND, default=None, metavar="STATE_DIR",
                   help="show and drive a cluster another kafkalab runs (`kafkalab cluster up`), not one of its "
                        "own: the one on the default ports or the only one running, or the one in STATE_DIR")
    p.add_argument("--runs-dir", type=Path, default=RUNS_DIR, help="where lab runs go")
    p.add_argument("--presenter", action="store_true", help="start in presenter mode (projector: fewer panes)")
    p.add_argument("--no-spark-warmup", action="store_true", help="start Spark with the first run, not at once")
    add_mode_args(p, default=None)
    add_net_proxies_arg(p)
    add_client_args(p)
    p.add_argument("--record", type=Path, metavar="FILE.cast", default=None,
                   help="record the session as an asciicast v2 file (asciinema play FILE.cast)")
    p.add_argument("--show-keys", action="store_true", help="show the keys pressed as captions (for recordings)")


def console_args(argv: Sequence[str] = ()) -> argparse.Namespace:
    """The console's options from ``argv`` (none: what `kafkalab` with no command means, the console on the
    default lab)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_console_args(parser)
    return parser.parse_args(argv)


def cmd_console(args: argparse.Namespace) -> int:
    if args.record is not None and not os.environ.get(RECORDED_ENV):
        return _record(args)
    with hangup_watch() as watch:
        try:
            return _console(args, watch)
        except Hangup:
            return HANGUP_EXIT


def _console(args: argparse.Namespace, watch: HangupWatch) -> int:
    from kafkalab.cast.pty_session import SHOW_KEYS_ENV
    from kafkalab.ui.app import LabConsole
    from kafkalab.ui.bindings import load_keymap

    keymap = load_keymap()
    if args.attach is not None:
        source, broker_ids, metadata = _attached_source(args)
    else:
        source, broker_ids, metadata = _bare_source(args) if args.no_lab else _lab_source(args)
    console_class = LabConsole
    if args.show_keys or os.environ.get(SHOW_KEYS_ENV):
        from kafkalab.ui.key_caption import CaptionedConsole

        console_class = CaptionedConsole
    app = console_class(source, broker_ids, keymap=keymap, presenter=args.presenter, metadata=metadata)
    watch.close_app = lambda: _close_quietly(app, source)  # the terminal closing ends what the console started
    try:
        app.run()
    finally:
        watch.closing = True
        with Console(stderr=True).status(source.closing):
            source.close()  # idempotent: the app closed it on quit; this covers a crash
    if watch.heard:
        return HANGUP_EXIT
    if source.after_quit:  # an attached cluster: say it still runs, and how to stop it
        print(f"kafkalab: {source.after_quit}")
    return 0


def _close_quietly(app: LabConsole, source: Source) -> None:
    """What quitting the console ends, with no screen to say so on (the terminal is gone)."""
    try:
        app.groups_feed.close()
    finally:
        source.close()


def _record(args: argparse.Namespace) -> int:
    """The same command again in a pty this process owns, its output copied to the terminal and the cast."""
    from kafkalab.cast import record_interactive
    from kafkalab.cast.pty_session import SHOW_KEYS_ENV

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise KafkalabError("console --record needs a terminal: `kafkalab run LAB --record FILE.cast` records "
                            "a lab's run without one")
    if args.record.suffix != ".cast":
        raise KafkalabError(f"--record {args.record}: give a file name ending in .cast")
    env = {RECORDED_ENV: "1", **({SHOW_KEYS_ENV: "1"} if args.show_keys else {})}
    code = record_interactive([*python_module("kafkalab"), *sys.argv[1:]], args.record, env)
    print(f"recording written: {args.record} (play it: asciinema play {args.record})")
    return code


def _lab_source(args: argparse.Namespace) -> tuple[Source, list[int], MetadataPanes]:
    from kafkalab.analysis import WarmSession
    from kafkalab.analysis.warmup import IDLE_ROUNDS
    from kafkalab.feeds.lab_source import LabSource
    from kafkalab.labs.loader import catalog, find_lab, load_lab
    from kafkalab.labs.run import PortChoice
    from kafkalab.labs.session import LabSession
    from kafkalab.labs.settings_check import checked_distribution

    ref = args.lab
    if ref is None:
        ids = [p.stem for p in catalog()]
        if not ids:
            raise KafkalabError("the lab catalog is empty: give a lab file, or open a bare cluster with --no-lab")
        ref = DEFAULT_LAB if any(i.endswith(DEFAULT_LAB) for i in ids) else ids[0]
    lab = with_clients(with_net_proxies(on_platform(load_lab(find_lab(ref)), args), args), args)
    checked_distribution(lab)  # its Kafka fetched, or one line saying how; the lab's settings valid on it
    spark = None if args.no_spark_warmup else WarmSession(warmup_rounds=IDLE_ROUNDS,
                                                          log_path=args.runs_dir / "spark.log")
    # --free-ports: every node on a free port picked now, as `run --free-ports` does; else the usual ports, free
    # ones where taken (the session's default)
    picked = PortChoice.picked(lab) if args.free_ports else PortChoice()
    session = LabSession(lab, args.runs_dir, spark=spark, free_ports=True, keep_cluster=True,
                         zk_port=picked.zk_port, broker_ports=list(picked.broker_ports),
                         controller_ports=list(picked.controller_ports))
    plan = lab.cluster
    return LabSource(session, spark), list(range(1, plan.brokers + 1)), metadata_panes(
        plan.mode == "kraft", plan.controllers, plan.combined)


def _bare_source(args: argparse.Namespace) -> tuple[Source, list[int], MetadataPanes]:
    """The bare cluster. When another kafkalab cluster is in its way (it runs in the state dir this console
    resolves to, or holds its default ports), the console asks first: free ports, attach, or quit."""
    from kafkalab import kafka_install
    from kafkalab.cli.common import target_state_dir
    from kafkalab.cluster import Cluster
    from kafkalab.cluster.ports import pick_free_ports
    from kafkalab.cluster.spec import MAX_BROKERS
    from kafkalab.cluster.supervision import is_driven
    from kafkalab.feeds.cluster_source import ClusterSource
    from kafkalab.labs.model import platform_short

    if not 1 <= args.brokers <= MAX_BROKERS:
        raise KafkalabError(f"--brokers {args.brokers} is out of range: give 1..{MAX_BROKERS}")
    state_dir = target_state_dir(args)  # with no --state-dir: the one cluster running, if one is
    other = state_dir if is_driven(state_dir) else None  # another kafkalab drives it: asked, not refused
    spec = ClusterSpec(state_dir=spare_state_dir(state_dir) if other else state_dir, brokers=args.brokers,
                       net_proxies=net_proxies_asked(args), **mode_fields(args))
    note = ""
    taken = [] if args.free_ports or other else taken_default_ports(spec)
    if args.free_ports or other or taken:
        pick_free_ports(spec)
    if taken:  # another cluster holds the defaults: this one takes free ports (or attaches to a kafkalab one)
        note = f"ports {', '.join(map(str, taken))} are taken (another cluster?): this cluster uses free ones"
    elif other:
        note = f"a cluster already runs in {other}: this console's own starts in {spec.state_dir} on free ports"
    found = kafka_install.locate(version=kafka_version(args))
    kafka_install.java_binary()
    cluster = ClusterSource(Cluster(spec, found), note=note, platform=platform_short(spec.mode, found.version()))
    source: Source = cluster
    owner = other or (owner_of_ports(taken) if taken else None)
    if owner is not None:
        from kafkalab.feeds.port_clash import PortClashSource

        source = PortClashSource(cluster, owner, taken)
    return source, spec.broker_ids, metadata_panes(spec.kraft, spec.controllers, spec.combined)


def spare_state_dir(taken: Path) -> Path:
    """A state dir for this console's own cluster that no kafkalab drives: the default one, else console-2, ..."""
    from kafkalab.cluster.supervision import is_driven
    from kafkalab.paths import default_state_dir

    base = default_state_dir()
    for candidate in (base, *(base.with_name(f"console-{n}") for n in range(2, 10))):
        if candidate != taken and not is_driven(candidate):
            return candidate
    raise KafkalabError(f"every console state dir under {base.parent} is in use: give a free one with --state-dir")


def taken_default_ports(spec: ClusterSpec) -> list[int]:
    from kafkalab.cluster.ports import port_is_free

    metadata_ports = spec.controller_ports if spec.kraft else [spec.zk_port]
    return [port for port in (*metadata_ports, *map(spec.broker_port, spec.broker_ids)) if not port_is_free(port)]


def _attached_source(args: argparse.Namespace) -> tuple[Source, list[int], MetadataPanes]:
    """`--attach [STATE_DIR]`: the console on a cluster another kafkalab process owns."""
    from kafkalab.cluster.supervision import running_state_dirs
    from kafkalab.feeds.port_clash import attached_source

    if args.lab is not None or args.no_lab:
        raise KafkalabError("--attach shows a running cluster as it is: drop the lab and --no-lab")
    state_dir = Path(args.attach).expanduser().resolve() if args.attach != ATTACH_FOUND else None
    if state_dir is None:
        running = running_state_dirs()
        state_dir = owner_of_ports(taken_default_ports(ClusterSpec(state_dir=Path()))) or (
            running[0] if len(running) == 1 else None)
        if state_dir is None:
            raise KafkalabError(f"{len(running) or 'no'} kafkalab clusters are running: give the state dir of "
                                "one, `kafkalab console --attach STATE_DIR`" if running else
                                "no kafkalab cluster is running: start one with `kafkalab cluster up --detach`")
    source = attached_source(state_dir)
    spec = source.cluster.spec
    return source, spec.broker_ids, metadata_panes(spec.kraft, spec.controllers, spec.combined)


def metadata_panes(kraft: bool, controllers: int, combined: bool) -> MetadataPanes:
    """ZooKeeper's pane, or the controllers' (none of their own when combined into the brokers)."""
    from kafkalab.ui.controllers import MetadataPanes

    if not kraft:
        return MetadataPanes()
    return MetadataPanes(0 if combined else controllers, voters=controllers)
