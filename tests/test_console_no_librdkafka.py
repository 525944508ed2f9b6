"""No Kafka client library in the console's process: librdkafka takes its whole process down now and then
(assertions, segfaults while brokers die), and a console that loaded it dies with it.

The control words and the audit run their librdkafka client in a child process per call
(:mod:`kafkalab.clients.one_shot`); the console's modules import ``confluent_kafka`` only where a child does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalab.cluster import Cluster
from kafkalab.errors import KafkalabError

CONSOLE_MODULES = ("kafkalab.cli.console_cmd", "kafkalab.ui.app")


def loaded_after_import(*modules: str) -> list[str]:
    """The modules of ``confluent_kafka`` loaded by importing ``modules`` in a fresh interpreter."""
    code = ("import importlib, json, sys\n"
            f"for m in {list(modules)!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'confluent_kafka')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_the_console_loads_no_kafka_client_library() -> None:
    assert loaded_after_import(*CONSOLE_MODULES) == []


def test_the_offsets_named_without_librdkafka_are_its_own() -> None:
    import confluent_kafka

    from kafkalab.admin.client import TIMED_OUT
    from kafkalab.clients.records import OFFSET_BEGINNING, OFFSET_END

    assert (OFFSET_BEGINNING, OFFSET_END) == (confluent_kafka.OFFSET_BEGINNING, confluent_kafka.OFFSET_END)
    assert TIMED_OUT == confluent_kafka.KafkaError._TIMED_OUT


# ---- the child process per call ------------------------------------------------------------------------------

CHILD = """
import os, signal, sys, time
from kafkalab.clients.one_shot import serve_one
from kafkalab.errors import KafkalabError

def answer(request, progress):
    how = request["how"]
    progress([1, 2])
    if how == "ok":
        print("a stray print must not reach the answers")
        return {"echo": request}
    if how == "refuse":
        raise KafkalabError("topic t does not exist: create it first")
    if how == "segfault":
        sys.stderr.write("rdkafka_cgrp.c:123: assertion failed\\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "hang":
        with open(request["pidfile"], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(600)
    raise RuntimeError("a bug in the child")

if __name__ == "__main__":
    serve_one(answer)
"""


@pytest.fixture
def child_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "one_shot_child.py").write_text(CHILD)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return "one_shot_child"


def test_a_child_answers_and_reports_progress(child_module: str) -> None:
    from kafkalab.clients.one_shot import call_in_child

    seen: list[object] = []
    assert call_in_child(child_module, {"how": "ok"}, "the call", 30, seen.append) == {"echo": {"how": "ok"}}
    assert seen == [[1, 2]]


@pytest.mark.parametrize(("how", "message"), [
    ("refuse", r"^topic t does not exist: create it first$"),
    ("segfault",
     r"^the call failed: its process died of SIGSEGV \(librdkafka\): rdkafka_cgrp.c:123: assertion failed$"),
    ("bug", r"^the call failed: its process ended \(exit 1\): RuntimeError: a bug in the child$"),
])
def test_a_child_that_fails_or_dies_is_one_kafkalab_error_line(child_module: str, how: str, message: str) -> None:
    from kafkalab.clients.one_shot import call_in_child

    with pytest.raises(KafkalabError, match=message):
        call_in_child(child_module, {"how": how}, "the call", 30)


def test_a_child_that_hangs_is_ended_after_its_bound(child_module: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalab.clients import one_shot

    monkeypatch.setattr(one_shot, "START_GRACE_S", 3.0)
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    with pytest.raises(KafkalabError, match=r"^the call gave no answer in 4s: its process was ended"):
        one_shot.call_in_child(child_module, {"how": "hang", "pidfile": str(pidfile)}, "the call", 1)
    assert time.monotonic() - started < 15
    assert not Path(f"/proc/{int(pidfile.read_text())}").exists()  # killed and reaped



def test_a_child_whose_parent_died_exits(child_module: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "from kafkalab.clients.one_shot import call_in_child\n"
        f"call_in_child({child_module!r}, {{'how': 'hang', 'pidfile': {str(pidfile)!r}}}, 'the call', 600)")])
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        child = int(pidfile.read_text())
    finally:
        parent.kill()
        parent.wait(10)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:  # reaped by init once it exits
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists()

# ---- the child process per call, on a real cluster ---------------------------------------------------------

@pytest.mark.cluster
def test_control_words_and_audit_run_in_a_child_and_fail_in_one_line(
        cluster: Cluster, topic_factory: Callable[..., str], tmp_path: Path) -> None:
    from kafkalab.clients.audit import audit_topic
    from kafkalab.clients.control_words import send_control

    topic = topic_factory(partitions=3, replication_factor=3)
    assert send_control(cluster.bootstrap, topic, "wait", all_partitions=True) == 3
    assert send_control(cluster.bootstrap, topic, "quit") == 1

    seen: list[tuple[int, int]] = []
    path, count = audit_topic(cluster.bootstrap, topic, tmp_path, progress=lambda *done: seen.append(done))
    assert (path, count) == (tmp_path / "audit.csv", 4)
    rows = path.read_text().splitlines()
    assert len(rows) == 5  # the header and the four words
    assert seen and seen[-1] == (4, 4)

    # the same calls' failures: one line each, as KafkalabError, and nothing left running
    with pytest.raises(KafkalabError, match=r"^'stop' is not a control word"):
        send_control(cluster.bootstrap, topic, "stop")
    started = time.monotonic()
    with pytest.raises(KafkalabError) as unreachable:
        send_control("127.0.0.1:1", topic, "quit")
    assert "cannot reach the Kafka cluster at 127.0.0.1:1" in str(unreachable.value)
    assert "\n" not in str(unreachable.value) and time.monotonic() - started < 40
    with pytest.raises(KafkalabError) as unaudited:  # (the shared cluster creates a missing topic on first use)
        audit_topic("127.0.0.1:1", topic, tmp_path / "b", timeout=5)
    assert str(unaudited.value).startswith("cannot reach the Kafka cluster at 127.0.0.1:1")
    assert "\n" not in str(unaudited.value) and not (tmp_path / "b" / "audit.csv").exists()
