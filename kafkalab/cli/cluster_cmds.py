"""fetch, doctor, cluster up/status/down, broker <action> ID, topic create/delete/describe/alter."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.progress import Progress as ProgressBar

from kafkalab import KAFKA_VERSION, KAFKA_VERSIONS, doctor, kafka_install
from kafkalab.admin import Admin, ClusterSnapshot, PartitionState
from kafkalab.child_python import python_module
from kafkalab.cli.common import (
    add_mode_args,
    add_net_proxies_arg,
    add_state_dir,
    add_target_args,
    bootstrap_for,
    kafka_version,
    mode_argv,
    mode_fields,
    net_proxies_argv,
    net_proxies_asked,
    parse_settings,
    target_state_dir,
)
from kafkalab.cli.docker_cmds import add_backend_args, backend_argv, backend_from_args
from kafkalab.cli.tables import Column, Fit, print_fitted
from kafkalab.cli.truncation_lines import HEADING, cluster_truncations, truncation_lines
from kafkalab.cluster import Cluster, ClusterSpec
from kafkalab.cluster.control_socket import (
    NODE_ACTIONS,
    ControlServer,
    read_cluster_file,
    request,
    write_cluster_file,
)
from kafkalab.cluster.docker_image import rootfs_path
from kafkalab.cluster.ports import pick_free_ports
from kafkalab.cluster.spec import MAX_BROKERS
from kafkalab.cluster.supervision import is_driven
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.artifacts import shipped_versions
from kafkalab.kafka_install.bundle import install_bundle, write_bundle
from kafkalab.kafka_install.download import CENTRAL
from kafkalab.kafka_install.fetch import cached
from kafkalab.labs.runner import catalog_rows

console = Console(stderr=False, highlight=False)
READY = "cluster ready"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("fetch", help="the Kafka jars into the cache dir: with mvn, else downloaded and verified")
    p.add_argument("--cache-dir", type=Path, default=None, help="cache dir (default: $KAFKALAB_CACHE or XDG cache)")
    p.add_argument("--force", action="store_true", help="fetch again even when present")
    p.add_argument("--kafka-version", default=KAFKA_VERSION, metavar="V",
                   help=f"Kafka version (default {KAFKA_VERSION}; 4.x is KRaft only)")
    p.add_argument("--no-maven", action="store_true",
                   help="download the jars without mvn (the default where mvn is missing)")
    p.add_argument("--maven-repo", default=None, metavar="URL",
                   help=f"Maven repository or mirror to download from (default {CENTRAL}; implies --no-maven)")
    p.add_argument("--checksums", type=Path, default=None, metavar="FILE",
                   help="artifact list with checksums (default: the one kafkalab ships for the version)")
    p.add_argument("--from", dest="bundle", type=Path, default=None, metavar="BUNDLE",
                   help="install an offline bundle written by `kafkalab bundle` (each jar verified)")
    p.set_defaults(func=cmd_fetch)

    p = sub.add_parser("bundle", help="write the cache (jars, docker image if built) to one file for offline installs")
    p.add_argument("out", type=Path, help="the bundle to write, e.g. kafkalab-bundle.tar")
    p.add_argument("--cache-dir", type=Path, default=None, help="cache dir (default: $KAFKALAB_CACHE or XDG cache)")
    p.add_argument("--kafka-version", action="append", metavar="V",
                   help="a Kafka version to include, repeatable (default: every one in the cache)")
    p.add_argument("--no-image", action="store_true", help="leave the docker image's root file system out")
    p.set_defaults(func=cmd_bundle)

    p = sub.add_parser("doctor", help="check java, the Kafka jars and each way to fetch them, ports, disk, memory")
    p.add_argument("--kafka-home", default=None, help="an existing Kafka install to use instead of the cache")
    p.add_argument("--kafka-version", default=None, metavar="V", choices=KAFKA_VERSIONS,
                   help=f"check this Kafka only, as needed (default: every one, {KAFKA_VERSION} needed, "
                        f"{', '.join(KAFKA_VERSIONS[1:])} optional)")
    p.add_argument("--maven-repo", default=None, metavar="URL", help=f"repository to probe (default {CENTRAL})")
    p.set_defaults(func=cmd_doctor)

    cluster = sub.add_parser("cluster", help="bring a local cluster up or down, show its status")
    csub = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    p = csub.add_parser("up", help="start ZooKeeper (or KRaft controllers) and the brokers")
    add_cluster_args(p)
    p.add_argument("--detach", action="store_true", help="return once ready; `kafkalab cluster down` ends it")
    p.add_argument("--daemon", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_up)
    p = csub.add_parser("status", help="nodes, controller and partitions")
    add_state_dir(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_status)
    p = csub.add_parser("down", help="stop every node of the cluster")
    add_state_dir(p)
    p.set_defaults(func=cmd_down)

    broker = sub.add_parser("broker", help="stop, kill, pause, resume, start or restart one node")
    broker.add_argument("action", choices=NODE_ACTIONS)
    broker.add_argument("node", help="broker id (1..N), 0 or 'zookeeper' for ZooKeeper, or controller-1..3 in "
                        "KRaft mode")
    broker.add_argument("--wait", action="store_true", help="return when the node reached its new state")
    add_state_dir(broker)
    broker.set_defaults(func=cmd_broker)

    topic = sub.add_parser("topic", help="create, delete, describe or alter topics")
    tsub = topic.add_subparsers(dest="topic_command", metavar="ACTION", required=True)
    p = tsub.add_parser("create", help="create a topic")
    p.add_argument("name")
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--replication-factor", type=int, default=1)
    p.add_argument("--config", action="append", metavar="NAME=VALUE", help="topic config, repeatable")
    p.set_defaults(func=cmd_topic_create)
    p = tsub.add_parser("delete", help="delete a topic")
    p.add_argument("name")
    p.set_defaults(func=cmd_topic_delete)
    p = tsub.add_parser("describe", help="like kafka-topics.sh --describe")
    p.add_argument("name", nargs="?", help="topic (default: every topic)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_topic_describe)
    p = tsub.add_parser("alter", help="add partitions (like kafka-topics.sh --alter --partitions) or set or delete "
                        "topic configs (like kafka-configs.sh --alter)")
    p.add_argument("name")
    p.add_argument("--partitions", type=int, metavar="N", help="the new partition count (more than now: Kafka "
                   "cannot remove partitions); a key's new records may then go to another partition")
    p.add_argument("--config", action="append", metavar="NAME=VALUE", help="config to set, repeatable")
    p.add_argument("--delete-config", action="append", metavar="NAME", help="config to remove, repeatable")
    p.set_defaults(func=cmd_topic_alter)
    for tp in (tsub.choices.values()):
        add_target_args(tp)


def add_cluster_args(p: argparse.ArgumentParser) -> None:
    """Options of every command that starts a cluster."""
    p.add_argument("--brokers", type=int, default=3, help=f"number of brokers, 1..{MAX_BROKERS} (default 3)")
    add_state_dir(p)
    p.add_argument("--free-ports", action="store_true", help="free ports for every node (default: the usual ports)")
    p.add_argument("--kafka-home", default=None, help="use an existing Kafka install's libs/ (or set KAFKA_HOME)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="broker setting for every broker")
    add_net_proxies_arg(p)
    add_mode_args(p)
    add_backend_args(p)


def spec_from_args(args: argparse.Namespace, net_proxies: bool | None = None) -> ClusterSpec:
    """``net_proxies``: overrides the flags (None: as they say)."""
    if not 1 <= args.brokers <= MAX_BROKERS:
        raise KafkalabError(f"--brokers {args.brokers} is out of range: give 1..{MAX_BROKERS}")
    spec = ClusterSpec(
        state_dir=target_state_dir(args), brokers=args.brokers, free_ports=args.free_ports,
        overrides=parse_settings(args.set), net_proxies=net_proxies_asked(args) if net_proxies is None else net_proxies,
        **mode_fields(args),
    )
    if args.free_ports:  # every node on a free port, as in `run` and `console`, not only where a default is taken
        pick_free_ports(spec)
    return spec


def cmd_fetch(args: argparse.Namespace) -> int:
    options = kafka_install.FetchOptions(version=args.kafka_version, cache=args.cache_dir, force=args.force,
                                maven=not args.no_maven, repo=args.maven_repo, checksums=args.checksums)
    with progress_bar(f"fetching Kafka {args.kafka_version} ...") as progress:
        found = (install_bundle(args.bundle, args.cache_dir, progress) if args.bundle
                 else [kafka_install.fetch(options, progress)])
    for d in found:
        console.print(f"Kafka {d.version()} jars in {d.libs}")
    return 0


def cmd_bundle(args: argparse.Namespace) -> int:
    versions = args.kafka_version or [v for v in shipped_versions() if cached(args.cache_dir, v)]
    if not versions:
        raise KafkalabError("the cache holds no Kafka jars to bundle: run `kafkalab fetch` first")
    image = rootfs_path()
    images = [image] if image.is_file() and not args.no_image else []
    with progress_bar(f"writing {args.out} ...") as progress:
        write_bundle(args.out, versions, images, args.cache_dir, progress)
    size = args.out.stat().st_size / 2**20
    console.print(f"{args.out}: Kafka {', '.join(versions)}{' and ' + image.name if images else ''} ({size:.0f} MB)")
    return 0


@contextlib.contextmanager
def progress_bar(first: str) -> Iterator[kafka_install.Progress]:
    """A byte progress bar with the total size, its line the latest status."""
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with ProgressBar(*columns, console=console, transient=True) as bar:
        task = bar.add_task(first, total=None)
        yield kafka_install.Progress(
            line=lambda m: bar.update(task, description=m[:60]),
            total=lambda n: bar.update(task, total=n),
            advance=lambda n: bar.advance(task, n),
        )


def cmd_doctor(args: argparse.Namespace) -> int:
    problems = 0
    versions = [args.kafka_version] if args.kafka_version else list(KAFKA_VERSIONS)
    checks = doctor.run_checks(args.kafka_home, versions=versions, repo=args.maven_repo,
                               only_on=labs_only_on(versions[1:], needed=versions[0]))
    for check in checks:
        mark = "[green]ok[/]  " if check.ok else "[red]FAIL[/]" if check.needed else "[yellow]--[/]  "
        problems += check.needed and not check.ok
        # a long detail wraps under its own start, not under the marks
        lines = textwrap.wrap(f"{check.name}: {check.detail}", width=max(40, console.width - 5),
                              subsequent_indent=" " * 5, break_on_hyphens=False)
        console.print(f"{mark} " + escape("\n".join(lines)), soft_wrap=True)
    return 1 if problems else 0


def labs_only_on(optional: list[str], needed: str) -> dict[str, list[str]]:
    """By optional Kafka version, the catalog labs that run on it and not on the ``needed`` one."""
    versions = {row["id"]: {p["kafka_version"] for p in row["platforms"]} for row in catalog_rows()} if optional else {}
    return {v: [lab for lab, on in versions.items() if v in on and needed not in on] for v in optional}


def cmd_up(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    found = kafka_install.locate(args.kafka_home, version=kafka_version(args))
    if args.backend == "local" or spec.kraft:  # KRaft formats storage and runs the quorum view on the host
        kafka_install.java_binary()
    if is_driven(spec.state_dir):
        raise KafkalabError(f"a cluster already runs in {spec.state_dir}: `kafkalab cluster status`, or `cluster down`")
    if args.detach and not args.daemon:
        return _detach(args, spec)
    backend = backend_from_args(args)
    refused = backend.net_proxies_refused()
    if refused and spec.net_proxies and net_proxies_asked(args) is None:  # the default gives way; asked, start says why
        print(f"network-fault proxies left out: {refused}", flush=True)
        spec = spec_from_args(args, net_proxies=False)
    down = threading.Event()
    _stop_on_signals(down)
    cluster = Cluster(spec, found, backend)
    cluster.start(progress=lambda m: print(m, flush=True))  # a failed start ends what it started, says why
    try:
        write_cluster_file(cluster)
        server = ControlServer(cluster, down)
        print(bootstrap_line(read_cluster_file(spec.state_dir)), flush=True)
        print(f"{READY} (state dir {spec.state_dir})", flush=True)  # what a detaching `cluster up` waits for
        if not args.daemon:
            quorum = cluster.quorum().as_dict() if spec.kraft else None
            _print_status(spec.state_dir, [i.as_dict() for i in cluster.infos()], Admin(cluster.bootstrap).snapshot(),
                          quorum)
            print("Ctrl-C stops the cluster; `kafkalab broker kill 2` etc. work from another terminal.", flush=True)
        try:
            while not down.wait(0.5):
                pass
        finally:
            server.close()
    finally:
        print("stopping the cluster ...", flush=True)
        cluster.shutdown()
    return 0


def _stop_on_signals(down: threading.Event) -> None:
    def handler(signum: int, _frame: FrameType | None) -> None:
        down.set()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, handler)


def _detach(args: argparse.Namespace, spec: ClusterSpec) -> int:
    """Run the cluster's owner as a background process and return once the cluster is ready."""
    spec.state_dir.mkdir(parents=True, exist_ok=True)
    log = spec.state_dir / "owner.log"
    argv = [*python_module("kafkalab"), "cluster", "up", "--daemon", "--state-dir", str(spec.state_dir),
            "--brokers", str(spec.brokers)]
    argv += ["--free-ports"] if args.free_ports else []
    argv += net_proxies_argv(args)
    argv += mode_argv(args)
    argv += ["--kafka-home", args.kafka_home] if args.kafka_home else []
    argv += backend_argv(args)
    for pair in args.set or []:
        argv += ["--set", pair]
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    shown = 0
    with console.status("starting the cluster ...") as status:
        while True:
            lines = log.read_text(errors="replace").splitlines()
            for line in lines[shown:]:
                status.update(line)
            shown = len(lines)
            if any(line.startswith(READY) for line in lines):
                break
            if proc.poll() is not None:
                errors = [ln for ln in lines if ln.startswith("kafkalab: error")] or lines[-1:]
                last = errors[-1] if errors else ""
                raise KafkalabError(last.removeprefix("kafkalab: error: ") or f"the cluster owner exited: see {log}")
            time.sleep(0.2)
    print(bootstrap_line(read_cluster_file(spec.state_dir)), flush=True)
    return cmd_status(argparse.Namespace(state_dir=spec.state_dir, json=False))


def bootstrap_line(facts: dict[str, Any]) -> str:
    """The first thing `cluster up` says once the cluster is up: where clients connect (the brokers' own ports,
    which the status table lists, are kafkalab's view, which no network fault cuts)."""
    through = "; it goes through the network-fault proxies" if facts.get("net_proxies") else ""
    return f"bootstrap {facts['client_bootstrap']} (clients: use this{through})"


def cmd_status(args: argparse.Namespace) -> int:
    state_dir = target_state_dir(args)
    facts = read_cluster_file(state_dir)
    nodes = request(state_dir, "status")["nodes"] if is_driven(state_dir) else []
    down = ClusterSnapshot(time.time(), False, error="not running")
    snapshot = Admin(facts["bootstrap"]).snapshot() if nodes else down
    quorum = request(state_dir, "quorum")["quorum"] if nodes and facts.get("mode") == "kraft" else None
    truncations = cluster_truncations(state_dir) if nodes else []
    if args.json:
        print(json.dumps({"state_dir": str(state_dir), "bootstrap": facts["bootstrap"], "running": bool(nodes),
                          "mode": facts.get("mode", "zookeeper"), "nodes": nodes, "snapshot": snapshot.as_dict(),
                          "quorum": quorum, "truncations": [t.as_dict() for t in truncations]}, indent=2))
        return 0
    if not nodes:
        raise KafkalabError(f"no cluster running in {state_dir}: start one with `kafkalab cluster up --detach`")
    _print_status(state_dir, nodes, snapshot, quorum)
    if truncations:
        console.print(HEADING)
        for line in truncation_lines(truncations):  # wrapped under itself, not under the heading
            console.print(Padding(escape(line), (0, 0, 0, 2), expand=False), style="yellow")
    return 0


def _print_status(state_dir: Path, nodes: list[dict[str, Any]], snapshot: ClusterSnapshot,
                  quorum: dict[str, Any] | None = None) -> None:
    rows = []
    for n in nodes:
        broker_id = n["broker_id"]
        if quorum is not None:  # KRaft: the active controller of the quorum, not a broker's guess
            active = n.get("node_id") is not None and n.get("node_id") == quorum.get("leader")
            name = str(n["name"]) + (" (active)" if active else "")
        else:
            name = str(n["name"]) + (" (controller)" if broker_id is not None and broker_id == snapshot.controller
                                     else "")
        rss = int(n["rss_bytes"] or 0)
        rows.append([escape(name), str(n["state"]), str(n["pid"] or "-"), str(n["port"]), f"{n['uptime_s']:.0f}s",
                     f"{n['cpu_percent']:.0f}", f"{rss / 2**20:.0f}", escape(str(n["reason"]))])
    # names and numbers whole; the reason wraps between words
    print_fitted(console, [Column("node"), Column("state"), Column("pid", justify="right"),
                           Column("port", justify="right"), Column("up", justify="right"),
                           Column("cpu%", justify="right"), Column("MB", justify="right"),
                           Column("detail", Fit.WRAP)], rows, title=f"cluster in {state_dir}")
    if quorum is not None:
        _print_quorum(quorum)
    if not snapshot.reachable:
        console.print(f"[yellow]admin API unreachable:[/] {snapshot.error}")
        return
    if quorum is None:
        console.print(f"controller: broker {snapshot.controller}, brokers alive: {list(snapshot.brokers)}")
    else:
        console.print(f"brokers alive: {list(snapshot.brokers)}")
    view = snapshot.metadata_view
    if said := view.said():  # the console's partition table says the same
        console.print(said, style="yellow" if view.left_out else None, markup=False)
    if snapshot.partitions:
        _print_partitions(snapshot)


def _print_quorum(quorum: dict[str, Any]) -> None:
    """The KRaft quorum like `kafka-metadata-quorum describe --status --replication`."""
    if not quorum["reachable"]:
        console.print(f"[yellow]quorum unknown:[/] {quorum['error']}")
        return
    console.print(f"active controller: node {quorum['leader']}, epoch {quorum['epoch']}, "
                  f"high watermark {quorum['high_watermark']}")
    def ago(ms: int | None) -> str:
        return "-" if ms is None else f"{ms / 1000:.1f}s ago"

    rows = []
    for r in [*quorum["voters"], *quorum["observers"]]:
        role = ("leader" if r["node_id"] == quorum["leader"] else "follower") if r["voter"] else "observer"
        unknown = "?" if r["log_end_offset"] is None else None
        rows.append([str(r["node_id"]), role, unknown or str(r["log_end_offset"]), unknown or str(r["lag"]),
                     ago(r["last_fetch_ms_ago"]), ago(r["last_caught_up_ms_ago"])])
    print_fitted(console, [Column("node", justify="right"), Column("role"),
                           Column("log end offset", justify="right"), Column("lag", justify="right"),
                           Column("last fetch", justify="right"), Column("last caught up", justify="right")], rows)


def _print_partitions(snapshot: ClusterSnapshot) -> None:
    """A table per topic, the topic named once above it (as the console's partition table does)."""
    topics: dict[str, list[PartitionState]] = {}
    for p in snapshot.partitions:
        topics.setdefault(p.topic, []).append(p)
    columns = [Column("part", justify="right"), Column("leader", justify="right"), Column("replicas"),
               Column("isr"), Column("end offset", justify="right"), Column("status")]
    for topic, partitions in topics.items():
        rows = [[str(p.partition), str(p.leader if p.leader is not None else "none"), ",".join(map(str, p.replicas)),
                 ",".join(map(str, p.isr)), str(p.end_offset if p.end_offset is not None else "?"), p.status]
                for p in partitions]
        styles = ["" if p.status == "ok" else "red" if p.offline else "yellow" for p in partitions]
        print_fitted(console, columns, rows, title=f"topic {escape(topic)}", row_styles=styles)


def cmd_down(args: argparse.Namespace) -> int:
    state_dir = target_state_dir(args)
    if not is_driven(state_dir):
        raise KafkalabError(f"no cluster running in {state_dir}: nothing to stop")
    owner = int(read_cluster_file(state_dir).get("owner_pid", 0))
    request(state_dir, "down")
    with console.status("stopping the cluster ..."):
        deadline = time.monotonic() + 60
        while is_driven(state_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
    if is_driven(state_dir):
        os.kill(owner, signal.SIGTERM)
        raise KafkalabError(f"the cluster owner (pid {owner}) did not stop in 60s: sent it SIGTERM")
    console.print(f"cluster in {state_dir} stopped")
    return 0


def cmd_broker(args: argparse.Namespace) -> int:
    state_dir = target_state_dir(args)
    reply = request(state_dir, args.action, node=args.node)
    info = reply["node"]
    if args.wait:
        wanted = {"start": "running", "restart": "running", "resume": "running", "stop": "stopped",
                  "kill": "killed", "pause": "paused"}[args.action]
        deadline = time.monotonic() + 120
        with console.status(f"{info['name']}: {info['state']} ...") as status:
            while info["state"] != wanted:
                if info["state"] == "failed" or time.monotonic() > deadline:
                    raise KafkalabError(f"{info['name']} is {info['state']}: {info['reason']}")
                time.sleep(0.3)
                info = next(n for n in request(state_dir, "status")["nodes"] if n["name"] == info["name"])
                status.update(f"{info['name']}: {info['state']} ({info['reason']})")
    console.print(f"{info['name']}: {info['state']} ({info['reason']})")
    return 0


def cmd_topic_create(args: argparse.Namespace) -> int:
    if args.partitions < 1 or args.replication_factor < 1:
        raise KafkalabError("--partitions and --replication-factor must be at least 1")
    Admin(bootstrap_for(args), timeout_s=5).create_topic(
        args.name, args.partitions, args.replication_factor, parse_settings(args.config, "--config"))
    console.print(f"Created topic {args.name}.")
    return 0


def cmd_topic_delete(args: argparse.Namespace) -> int:
    Admin(bootstrap_for(args), timeout_s=5).delete_topic(args.name)
    console.print(f"Deleted topic {args.name}.")
    return 0


def cmd_topic_describe(args: argparse.Namespace) -> int:
    admin = Admin(bootstrap_for(args), timeout_s=5)
    names = [args.name] if args.name else [t for t in admin.topics() if not t.startswith("__")]
    descriptions = [admin.describe_topic(n) for n in names]
    if args.json:
        print(json.dumps([d.as_dict() for d in descriptions], indent=2))
    else:
        for d in descriptions:
            print(d.render())
    return 0


def cmd_topic_alter(args: argparse.Namespace) -> int:
    if not args.config and not args.delete_config and args.partitions is None:
        raise KafkalabError("nothing to change: give --partitions N, --config NAME=VALUE or --delete-config NAME")
    configs = parse_settings(args.config, "--config")  # a bad one refused before anything changed
    admin = Admin(bootstrap_for(args), timeout_s=5)
    if args.partitions is not None:
        console.print(f"{args.name}: {admin.add_partitions(args.name, args.partitions)}", soft_wrap=True)
    if configs or args.delete_config:
        admin.alter_topic_configs(args.name, configs, args.delete_config)
        console.print(f"Completed updating config for topic {args.name}.")
    return 0
