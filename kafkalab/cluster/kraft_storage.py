"""KRaft storage: the cluster id and the initial voters, recorded in the state dir, and each node formatted.

A KRaft node refuses to start on an unformatted log dir. kafkalab formats every node once, with Kafka's
own StorageTool (every node in one JVM: FormatStorage.java), before its first start: controllers (and
combined nodes) with ``--initial-controllers`` (KIP-853's dynamic quorum: the voter set goes into the
metadata log), brokers with ``--no-initial-controllers``. The voters' endpoints are part of that log,
so the controller ports of a formatted state dir are kept from start to start (``kraft.json``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafkalab.cluster.cause_line import without_packages
from kafkalab.cluster.node import Node, this_start_log
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install import Distribution, java_binary, java_helper_argv
from kafkalab.paths import package_file

RECORD_FILE = "kraft.json"
FORMAT_SOURCE = package_file("kafkalab.cluster", "FormatStorage.java")
FORMAT_TIMEOUT_S = 120.0


def random_uuid() -> str:
    """A Kafka Uuid as its tools print it: 16 random bytes, URL-safe base64 without padding.

    Like Kafka's ``Uuid.randomUuid`` it never starts with '-' (the tools would read it as an option).
    """
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass(frozen=True)
class QuorumRecord:
    """What the storage was formatted with: the cluster id and each voter's id, port and directory id."""

    cluster_id: str
    voters: tuple[tuple[int, int, str], ...]  # (node id, port, directory id)
    combined: bool

    @property
    def initial_controllers(self) -> str:
        return ",".join(f"{node}@127.0.0.1:{port}:{directory}" for node, port, directory in self.voters)

    def as_dict(self) -> dict[str, object]:
        return {"cluster_id": self.cluster_id, "combined": self.combined,
                "voters": [{"id": n, "port": p, "directory_id": d} for n, p, d in self.voters]}


def read_record(state_dir: Path) -> QuorumRecord | None:
    try:
        data = json.loads((state_dir / RECORD_FILE).read_text())
        voters = tuple((int(v["id"]), int(v["port"]), str(v["directory_id"])) for v in data["voters"])
        return QuorumRecord(str(data["cluster_id"]), voters, bool(data["combined"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KafkalabError(f"{state_dir / RECORD_FILE} is unreadable ({exc}): use another --state-dir") from None


def pin_recorded_ports(spec: ClusterSpec) -> bool:
    """Give ``spec`` the controller ports its formatted storage names; False when nothing is formatted yet."""
    record = read_record(spec.state_dir) if spec.kraft else None
    if record is None:
        return False
    shape = "combined" if record.combined else "dedicated"
    if [v[0] for v in record.voters] != spec.controller_ids or record.combined != spec.combined:
        raise KafkalabError(
            f"state dir {spec.state_dir} holds a KRaft cluster formatted with {len(record.voters)} {shape} "
            f"controller(s): start it with the same --controllers/--combined, or use another --state-dir")
    spec.controller_ports = [port for _node, port, _dir in record.voters]
    return True


# Kafka 3.9: when the first active controller loses its leadership before its bootstrap records
# (metadata.version among them) commit, the next one finds a log that is not empty yet holds no
# metadata.version, and runs the cluster at 3.0-IV1 for good: no controller registration, no admin call
# to a controller (the quorum view), none of 3.9's KRaft features. A new cluster is formatted again.
LOST_BOOTSTRAP = "No metadata.version feature level record was found in the log"
LOST_BOOTSTRAP_NOTE = "the quorum's first election lost its bootstrap records (a Kafka 3.9 race)"


def lost_bootstrap(nodes: list[Node]) -> bool:
    """A controller among ``nodes`` activated, in this start, without the bootstrap metadata.version."""
    return any(LOST_BOOTSTRAP in this_start_log(node) for node in nodes)


def format_storage(spec: ClusterSpec, dist: Distribution, progress: Callable[[str], None] = lambda _m: None,
                   wipe: bool = False) -> bool:
    """Record the quorum on first use, then format every node whose log dir has no meta.properties.

    True when every node was formatted now (a new cluster). ``wipe``: empty every node's log dir first.
    """
    if wipe:
        for name, _node_id in _nodes(spec):
            shutil.rmtree(_log_dir(spec, name), ignore_errors=True)
    record = read_record(spec.state_dir)
    if record is None:
        voters = tuple((c, spec.controller_port(c), random_uuid()) for c in spec.controller_ids)
        record = QuorumRecord(random_uuid(), voters, spec.combined)
        (spec.state_dir / RECORD_FILE).write_text(json.dumps(record.as_dict(), indent=2))
    todo = [(name, node_id) for name, node_id in _nodes(spec)
            if not (_log_dir(spec, name) / "meta.properties").exists()]
    if not todo:
        return False
    progress(f"formatting KRaft storage of {', '.join(n for n, _ in todo)} (cluster id {record.cluster_id})")
    argv = [java_binary(), "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
            f"-Dlog4j.configuration=file:{spec.node_dir(todo[0][0]) / 'log4j.properties'}",
            *java_helper_argv(dist, FORMAT_SOURCE)]
    for i, (name, node_id) in enumerate(todo):
        argv += (["--next"] if i else []) + [name, *_format_args(spec, record, name, node_id)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise KafkalabError(f"formatting the KRaft storage took over {FORMAT_TIMEOUT_S:.0f}s: is the machine "
                            "overloaded?") from None
    failed = [ln.removeprefix("failed ") for ln in done.stdout.splitlines() if ln.startswith("failed ")]
    if failed or done.returncode != 0:
        why = failed[0] if failed else (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise KafkalabError(f"formatting the KRaft storage failed: {without_packages(why)[:300]}")
    return len(todo) == len(_nodes(spec))


def _nodes(spec: ClusterSpec) -> list[tuple[str, int]]:
    return [*spec.dedicated_controllers, *[(f"broker-{b}", b) for b in spec.broker_ids]]


def _log_dir(spec: ClusterSpec, name: str) -> Path:
    settings = spec.broker_settings(int(name.split("-")[1])) if name.startswith("broker-") else None
    if settings is None:
        controller_id = dict(spec.dedicated_controllers)[name]
        settings = spec.controller_settings(controller_id)
    return Path(settings["log.dirs"])


def _format_args(spec: ClusterSpec, record: QuorumRecord, name: str, node_id: int) -> list[str]:
    """kafka-storage's format arguments for one node: voters with the initial quorum, brokers without."""
    quorum = (["--initial-controllers", record.initial_controllers] if node_id in spec.controller_ids
              else ["--no-initial-controllers"])
    return ["format", "-t", record.cluster_id, "-c", str(spec.node_dir(name) / "server.properties"), *quorum]
