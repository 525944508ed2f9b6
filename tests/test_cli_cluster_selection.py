"""Which cluster the client commands talk to (issue 44, item 8): `produce`, `consume`, `audit` and `send` pick their
cluster as every other command does (`--state-dir`, `--bootstrap`, else the one kafkalab cluster running here),
refuse in one line when that is ambiguous or there is none, and never fall back on 127.0.0.1:9092, which may be
someone else's cluster; `cluster up` says first which bootstrap clients must use.

The real `kafkalab` command runs on a state root of the test's own. Running clusters are fakes where nothing needs
to answer: a state dir locked by this process (alive) with its cluster.json, which is what makes kafkalab count a
cluster as running; one real cluster (ZooKeeper and a broker) shows the bootstrap printed and used."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalab.cluster.ports import free_port
from kafkalab.cluster.supervision import StateDirLock
from tests.test_cli_cluster import assert_one_line_error

KAFKALAB = [sys.executable, "-m", "kafkalab"]
# each client command with what it needs besides the cluster
CLIENT_COMMANDS = {
    "produce": ["produce"],
    "consume": ["consume"],
    "audit": ["audit", "--topic", "test-topic"],
    "send": ["send", "quit"],
    "tail": ["tail", "test-topic"],
    "type": ["type", "test-topic"],
}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The state root of this test alone: its registry of running clusters is empty until a test adds one."""
    path = tmp_path / "state"
    monkeypatch.setenv("KAFKALAB_STATE", str(path))
    return path


def kafkalab(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KAFKALAB, *args], capture_output=True, text=True, timeout=timeout, cwd=root.parent,
                          env={**os.environ, "KAFKALAB_STATE": str(root)})


@contextlib.contextmanager
def running(root: Path, name: str) -> Iterator[dict[str, str]]:
    """A cluster kafkalab counts as running in ``root/clusters/name``, at addresses where nothing listens (a
    client's error names the address it tried); yields its cluster.json."""
    state_dir = root / "clusters" / name
    lock = StateDirLock(state_dir)
    lock.acquire()
    facts = {"state_dir": str(state_dir), "bootstrap": f"127.0.0.1:{free_port()}",
             "client_bootstrap": f"127.0.0.1:{free_port()}", "net_proxies": True}
    (state_dir / "cluster.json").write_text(json.dumps(facts))
    try:
        yield facts
    finally:
        lock.release()


@pytest.mark.parametrize("command", CLIENT_COMMANDS)
def test_with_two_clusters_running_a_client_command_refuses_in_one_line_naming_state_dir(
        root: Path, command: str) -> None:
    with running(root, "one") as one, running(root, "two") as two:
        result = kafkalab(root, *CLIENT_COMMANDS[command])
    assert_one_line_error(result, "2 clusters are running", "--state-dir", one["state_dir"], two["state_dir"])


@pytest.mark.parametrize("command", CLIENT_COMMANDS)
def test_with_no_cluster_running_a_client_command_says_so_and_names_bootstrap(root: Path, command: str) -> None:
    """It used to try 127.0.0.1:9092: someone else's cluster, perhaps, or a wait and a connection error."""
    result = kafkalab(root, *CLIENT_COMMANDS[command])
    assert_one_line_error(result, "no kafkalab cluster is running", "--bootstrap", "--state-dir")


def test_state_dir_picks_the_cluster_and_clients_go_through_its_proxies(root: Path) -> None:
    """produce, consume, tail and type use the bootstrap clients must use (the network-fault proxies; tail and
    type used the brokers' own ports, which no network fault cuts); audit and send, kafkalab's own reading and
    control, use the brokers' own listeners, as a lab's audit does."""
    with running(root, "one") as one, running(root, "two"):
        for command, bootstrap in (("produce", "client_bootstrap"), ("tail", "client_bootstrap"),
                                   ("type", "client_bootstrap"), ("audit", "bootstrap")):
            result = kafkalab(root, *CLIENT_COMMANDS[command], "--state-dir", one["state_dir"])
            assert_one_line_error(result, f"cannot reach the Kafka cluster at {one[bootstrap]}")


def test_the_one_running_cluster_is_the_default_and_bootstrap_names_any_other(root: Path) -> None:
    elsewhere = f"127.0.0.1:{free_port()}"
    with running(root, "one") as one:
        assert_one_line_error(kafkalab(root, "consume"), f"cannot reach the Kafka cluster at {one['client_bootstrap']}")
        assert_one_line_error(kafkalab(root, "send", "quit", "--bootstrap", elsewhere),
                              f"cannot reach the Kafka cluster at {elsewhere}")
        assert_one_line_error(kafkalab(root, "produce", "-D", f"bootstrap.server={elsewhere}"),  # the course's way
                              f"cannot reach the Kafka cluster at {elsewhere}")
        assert_one_line_error(kafkalab(root, "produce", "--bootstrap", one["bootstrap"], "-D",
                                       f"bootstrap.server={elsewhere}"), "--bootstrap", "bootstrap.server")


def test_options_show_the_bootstrap_the_command_would_use_not_the_courses_address(root: Path) -> None:
    """`produce --options` showed 127.0.0.1:9092,... as the default: an address nothing here uses."""
    none = kafkalab(root, "produce", "--options")
    assert none.returncode == 0 and "9092" not in none.stdout and "running here (none" in none.stdout, none.stdout
    with running(root, "one") as one:
        shown = kafkalab(root, "consume", "--options")
    assert shown.returncode == 0 and one["client_bootstrap"] in shown.stdout and "9092" not in shown.stdout


@pytest.mark.cluster
def test_cluster_up_says_first_the_bootstrap_clients_use_and_the_clients_find_it(root: Path, tmp_path: Path) -> None:
    state_dir = tmp_path / "cluster"
    up = kafkalab(root, "cluster", "up", "--detach", "--brokers", "1", "--free-ports", "--state-dir", str(state_dir),
                  timeout=240)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        facts = json.loads((state_dir / "cluster.json").read_text())
        assert facts["client_bootstrap"] != facts["bootstrap"]  # the proxies' ports, not the brokers'
        first = up.stdout.splitlines()[0]
        assert first == (f"bootstrap {facts['client_bootstrap']} "
                         "(clients: use this; it goes through the network-fault proxies)"), up.stdout
        logs = ["--log-dir", str(tmp_path / "logs")]
        produced = kafkalab(root, "produce", *logs, "-D", "producer.num-records-per-roll=20")  # no cluster named
        assert produced.returncode == 0 and "20 acked" in produced.stdout, produced.stdout + produced.stderr
        audited = kafkalab(root, "audit", "--topic", "test-topic", *logs)
        assert audited.returncode == 0 and audited.stdout.startswith("20 records of test-topic"), audited.stderr
    finally:
        kafkalab(root, "cluster", "down", "--state-dir", str(state_dir))
