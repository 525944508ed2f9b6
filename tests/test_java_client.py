"""kafkalab's own Java producer and consumer: built once per Kafka release, the course's options, the course's
payload log, the control words; against the real 3-broker cluster, one topic per test."""

from __future__ import annotations

import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafkalab.clients.control_words import send_control
from kafkalab.clients.foreign import REPORT_PREFIX
from kafkalab.clients.java_client import java_client_argv, java_command_templates
from kafkalab.clients.options import role_options
from kafkalab.cluster import Cluster
from kafkalab.kafka_install import Distribution, java_helpers, locate
from kafkalab.logformat import MAX_BLOCK_TIMED_OUT
from tests.helpers import wait_until
from tests.test_clients_cluster import java_partition

FAST_GROUP = {"consumer.session-timeout": "10000", "consumer.heartbeat-interval": "1000",
              "consumer.poll-period": "200", "consumer.auto-offset-reset": "earliest"}


def payload(path: Path) -> list[tuple[str, int, int, str]]:
    """The course's payload log: topic,partition,key,value, the value raw (split at the first three commas)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        topic, partition, key, value = line.split(",", 3)
        out.append((topic, int(partition), int(key), value))
    return out


@contextmanager
def running(argv: list[str], cwd: Path, name: str) -> Iterator[subprocess.Popen[str]]:
    """A client JVM with its stdout in ``cwd/NAME.out``; killed (and reaped) if still running at the end."""
    with open(cwd / f"{name}.out", "w") as out, open(cwd / f"{name}.err", "w") as err:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, text=True)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(30)


def said(cwd: Path, name: str) -> str:
    return (cwd / f"{name}.out").read_text()


def test_the_option_table_is_kafkalabs(distribution: Distribution) -> None:
    """Every option of options.py, with its default, kind, range and choices, and nothing else."""
    for role in ("producer", "consumer"):
        out = subprocess.run([*java_client_argv(distribution, role), "--options"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
        java = [tuple(line.split("\t")) for line in out.splitlines()]
        python = [(o.name, o.default or "", o.kind, str(o.minimum) if o.kind == "int" else "0",
                   str(o.maximum) if o.kind == "int" else "0", ",".join(o.choices)) for o in role_options(role)]
        assert java == python


def test_bad_values_are_one_line_and_exit_2(distribution: Distribution, tmp_path: Path) -> None:
    argv = java_client_argv(distribution, "producer", {"producer.acks": "2", "producer.num-rolls": "x",
                                                       "producer.nope": "1", "consumer.ignored": "1"})
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "producer: producer.acks=2 is not one of 0, 1, all, -1; unknown option producer.nope; producer.num-rolls=x "
        "is not a whole number (`-Dproducer.x=y` items; run with --options to list them)"]
    argv = java_client_argv(distribution, "consumer", {"consumer.heartbeat-interval": "50000"})
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "heartbeat-interval must be lower" in done.stderr
    assert not list(tmp_path.iterdir())  # no log opened


def test_a_send_blocked_past_max_block_is_counted_by_the_reason_kafkalabs_producer_gives(
        distribution: Distribution, tmp_path: Path) -> None:
    """No broker answers: each send() blocks on the topic's metadata for max.block.ms, then fails its record."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = java_client_argv(distribution, "producer", {
        "bootstrap.server": f"127.0.0.1:{port}", "producer.num-records-per-roll": "3", "producer.max-block": "300"})
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == REPORT_PREFIX + f'{{"attempted":3,"failed":{{"{MAX_BLOCK_TIMED_OUT}":3}}}}'


def test_the_build_is_cached_per_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = locate()
    monkeypatch.setenv("KAFKALAB_CACHE", str(tmp_path / "cache"))
    lines: list[str] = []
    java_helpers.compile_clients(dist, lines.append)
    assert lines == [f"Java clients ready for Kafka {dist.version()} (kafkalab.JavaProducer, kafkalab.JavaConsumer)"]
    built = list((tmp_path / "cache" / "java-helpers").glob("java-clients-*"))
    assert len(built) == 1
    classes = {p.name: p.stat().st_mtime_ns for p in (built[0] / "kafkalab").iterdir()}
    assert {"JavaProducer.class", "JavaConsumer.class", "ClientOptions.class"} <= set(classes)
    started = time.monotonic()
    producer, consumer = java_command_templates(dist)  # built: nothing compiled again
    assert time.monotonic() - started < 1
    assert {p.name: p.stat().st_mtime_ns for p in (built[0] / "kafkalab").iterdir()} == classes
    assert list((tmp_path / "cache" / "java-helpers").glob("java-clients-*")) == built
    assert f"-cp {shlex.quote(f'{built[0]}:{dist.classpath}')} kafkalab.JavaProducer" in producer
    assert consumer.endswith(" kafkalab.JavaConsumer") and "-Dconsumer.topic={topic}" in consumer
    assert producer.index("{options}") < producer.index("-Dbootstrap.server={bootstrap}")


@pytest.mark.cluster
def test_produce_then_consume_until_quit(cluster: Cluster, topic_factory: Callable[..., str],
                                         distribution: Distribution, tmp_path: Path) -> None:
    topic = topic_factory(partitions=6, replication_factor=3)
    producer_t, consumer_t = java_command_templates(distribution)
    options = "-Dproducer.num-rolls=2 -Dproducer.num-records-per-roll=50 -Dproducer.wait-after-roll=0"
    command = producer_t.format(options=options, bootstrap=shlex.quote(cluster.bootstrap), topic=shlex.quote(topic))
    (tmp_path / "producer").mkdir()
    started = time.monotonic()
    with running(shlex.split(command), tmp_path / "producer", "out") as producer:
        assert producer.wait(120) == 0, (tmp_path / "producer" / "out.err").read_text()
    took = time.monotonic() - started
    lines = said(tmp_path / "producer", "out").splitlines()
    out = [line for line in lines if not line.startswith(REPORT_PREFIX)]  # kafkalab's own, not a pane's
    assert lines[-1] == REPORT_PREFIX + '{"attempted":100,"failed":{}}'
    assert out[0] == (f"producer: 2 rolls x 50 records to {topic} via {cluster.bootstrap}, acks=all, "
                      "idempotence on")
    assert out[-1] == "producer: done: 100 sent, 100 acked, 0 failed; log payload.log", took
    produced = payload(tmp_path / "producer" / "payload.log")
    assert sorted(key for _t, _p, key, _v in produced) == sorted([*range(50), *range(50)])
    assert all(t == topic and p == java_partition(key, 6) for t, p, key, _v in produced)  # Java's partitioner
    assert not (tmp_path / "producer" / "out.err").read_text()

    consumer_dir = tmp_path / "consumer-1"
    consumer_dir.mkdir()
    settings = {**FAST_GROUP, "consumer.group-id": topic, "consumer.local-id": "1", "consumer.ack-every-x-msgs": "10",
                "consumer.topic": "overridden-by-the-template"}
    options = " ".join(shlex.quote(f"-D{name}={value}") for name, value in settings.items())
    command = consumer_t.format(options=options, bootstrap=shlex.quote(cluster.bootstrap), topic=shlex.quote(topic))
    with running(shlex.split(command), consumer_dir, "out") as consumer:
        log = consumer_dir / "payload-1.log"
        wait_until(lambda: len(payload(log)) >= 100 or consumer.poll() is not None, 90, 0.2, "100 records consumed")
        assert send_control(cluster.bootstrap, topic, "quit", all_partitions=True) == 6
        assert consumer.wait(60) == 0, (consumer_dir / "out.err").read_text()
    out = said(consumer_dir, "out")
    assert out.startswith(f"consumer-1: group {topic} on {topic} via {cluster.bootstrap}, commit every 10 records")
    assert "consumer-1: ack-every-x-msgs is set, turning autocommit off" in out
    assert "consumer-1: quit record at partition" in out
    assert out.splitlines()[-1] == "consumer-1: quit record: closed: 100 processed; log payload-1.log"
    assert sorted(payload(log)) == sorted(produced)  # every record, once; the quit records are not logged


@pytest.mark.cluster
def test_acks_0_failures_sigterm_and_crash(cluster: Cluster, topic_factory: Callable[..., str],
                                  distribution: Distribution, tmp_path: Path) -> None:
    topic = topic_factory(partitions=3, replication_factor=3)
    settings = {"bootstrap.server": cluster.bootstrap, "producer.topic": topic, "producer.acks": "0",
                "producer.num-records-per-roll": "5", "producer.payload-trunc": "true"}
    done = subprocess.run(java_client_argv(distribution, "producer", settings), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f"producer: 1 rolls x 5 records to {topic} via {cluster.bootstrap}, acks=0, idempotence off",
        "producer: idempotence off as acks != all"]
    assert len(payload(tmp_path / "payload.log")) == 5
    unwritable = topic_factory(partitions=1, replication_factor=3, configs={"max.message.bytes": "20"})
    settings = {"bootstrap.server": cluster.bootstrap, "producer.topic": unwritable, "producer.local-id": "2",
                "producer.num-records-per-roll": "3", "producer.delivery-timeout": "3000",
                "producer.request-timeout": "2000"}
    done = subprocess.run(java_client_argv(distribution, "producer", settings), cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "producer-2: done: 3 sent, 0 acked, 3 failed" in done.stdout
    failed = [line for line in done.stderr.splitlines() if line.startswith("producer-2: record key ")]
    assert len(failed) == 3 and all(f" to {unwritable} failed: " in line for line in failed), done.stderr
    assert payload(tmp_path / "payload-2.log") == []  # a failed record is no payload line

    group = {**FAST_GROUP, "bootstrap.server": cluster.bootstrap, "consumer.topic": topic,
             "consumer.group-id": topic}
    with running(java_client_argv(distribution, "consumer", group), tmp_path, "stopped") as consumer:
        wait_until(lambda: "assigned [" in said(tmp_path, "stopped") or consumer.poll() is not None, 60, 0.2,
                   "partitions assigned")
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(60) == 128 + signal.SIGTERM  # the JVM's exit on SIGTERM, after its hook closed it
    assert said(tmp_path, "stopped").splitlines()[-1].startswith("consumer: stopped: closed: ")

    with running(java_client_argv(distribution, "consumer", group), tmp_path, "crashed") as consumer:
        send_control(cluster.bootstrap, topic, "crash", all_partitions=True)
        assert consumer.wait(60) == 3
    out = said(tmp_path, "crashed")
    assert "consumer: crash record at partition" in out and "closed" not in out
