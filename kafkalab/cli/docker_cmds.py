"""docker build-image, docker status; and the --backend/--image options of commands that start a cluster."""

from __future__ import annotations

import argparse
import json
import time

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kafkalab.cluster.docker_image import DEFAULT_IMAGE
from kafkalab.cluster.process import Backend, LocalBackend

console = Console(highlight=False)
BACKENDS = ("local", "docker")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dock = sub.add_parser("docker", help="the docker backend: build its image, check the engine")
    dsub = dock.add_subparsers(dest="docker_command", metavar="ACTION", required=True)
    p = dsub.add_parser("build-image", help="build the Java 17 image from Debian packages (mmdebstrap), once")
    p.add_argument("--tag", default=DEFAULT_IMAGE, help=f"image tag (default {DEFAULT_IMAGE})")
    p.add_argument("--rebuild", action="store_true", help="build again even when the image or its cache exists")
    p.set_defaults(func=cmd_build_image)
    p = dsub.add_parser("status", help="is the engine reachable, is the image there, which kafkalab containers run")
    p.add_argument("--image", default=DEFAULT_IMAGE, help=f"image to look for (default {DEFAULT_IMAGE})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_status)


def add_backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=BACKENDS, default="local",
                   help="run nodes as local processes (default) or as Docker containers")
    p.add_argument("--image", default=DEFAULT_IMAGE,
                   help=f"Java 17 image of the docker backend (default {DEFAULT_IMAGE})")


def backend_from_args(args: argparse.Namespace) -> Backend:
    """The backend the options name; the docker one checks the engine and the image right away."""
    if args.backend == "docker":
        from kafkalab.cluster.docker_backend import DockerBackend

        return DockerBackend(args.image)
    return LocalBackend()


def backend_argv(args: argparse.Namespace) -> list[str]:
    """The options again, for a command line that re-runs the command (`cluster up --detach`)."""
    return ["--backend", args.backend, "--image", args.image]


def cmd_build_image(args: argparse.Namespace) -> int:
    from kafkalab.cluster.docker_backend import connect_engine
    from kafkalab.cluster.docker_image import ensure_image

    client = connect_engine(timeout=600)
    started = time.monotonic()
    with console.status(f"preparing {args.tag} ...") as status:
        def progress(message: str) -> None:
            status.update(f"[{time.monotonic() - started:4.0f}s] {message}")

        done = ensure_image(client, args.tag, rebuild=args.rebuild, progress=progress)
    elapsed = time.monotonic() - started
    what = {"present": "already present", "imported": "imported from the cached root file system",
            "built": "built"}[done]
    console.print(f"image {args.tag}: {what} ({elapsed:.0f}s)")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from kafkalab.cluster.docker_backend import (
        LABEL_NODE,
        LABEL_STATE_DIR,
        connect_engine,
        engine_address,
        net_proxies_refused_by,
    )
    from kafkalab.cluster.docker_image import image_present

    client = connect_engine(timeout=10)
    version = client.version().get("Version", "?")
    has_image = image_present(client, args.image)
    containers = client.containers.list(all=True, filters={"label": LABEL_STATE_DIR})
    refused = net_proxies_refused_by(client)
    rows = [{"name": c.name, "state_dir": c.labels.get(LABEL_STATE_DIR), "node": c.labels.get(LABEL_NODE),
             "status": c.status} for c in containers]
    if args.json:
        print(json.dumps({"engine": engine_address(), "version": version, "image": args.image,
                          "image_present": has_image, "net_faults": refused is None, "net_faults_why_not": refused,
                          "containers": rows}, indent=2))
        return 0
    console.print(f"Docker engine {version} at {engine_address()}")
    console.print(f"image {args.image}: " + ("present" if has_image else
                                             "[yellow]missing[/] (`kafkalab docker build-image`)"))
    console.print("network faults: " + ("yes, through kafkalab's proxies (`kafkalab net ...`)" if refused is None
                                        else f"[yellow]no[/]: {escape(refused)}"), highlight=False)
    if rows:
        table = Table(title="kafkalab containers", title_justify="left")
        for col in ("container", "node", "status", "state dir"):
            table.add_column(col)
        for r in rows:
            table.add_row(str(r["name"]), str(r["node"]), str(r["status"]), str(r["state_dir"]))
        console.print(table)
    return 0
