"""Client benchmarks: kafkalab's producer and consumer (with payload logs) against Kafka's own
ProducerPerformance and ConsumerPerformance (kafka-tools 3.9.2), on one 3-broker lab cluster.

    .venv/bin/python benchmarks/bench_clients.py [--records 500000] [--runs 3]

Producer: acks=all, idempotent, linger 0, batch 16384 (the course's defaults) for both, Kafka's tool at
kafkalab's average record size. Consumer: both read the topic kafkalab's producer wrote; the rate counts
from the first assignment to the last record (group join excluded on both sides). kafka-tools and its
closure are fetched with mvn (assets/pom-tools.xml) into the cache dir when missing.

A third peer, "library", is confluent-kafka alone with kafkalab's librdkafka settings and records but no
payload log and no per-record Python: the most a client built on it reaches on this cluster. The CPU
seconds each client process spends are recorded beside the rates (the brokers share the same cores).
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer as RdConsumer
from confluent_kafka import Producer as RdProducer

from benchmarks.benchutil import summary, write_results
from kafkalab import KAFKA_VERSION, kafka_install
from kafkalab.admin import Admin
from kafkalab.clients.consumer_loop import ConsumerLoop
from kafkalab.clients.corpus import ValuePicker
from kafkalab.clients.options import ConsumerConfig, ProducerConfig
from kafkalab.clients.preflight import base_conf, consumer_conf
from kafkalab.clients.producer import Producer
from kafkalab.cluster import Cluster, ClusterSpec
from kafkalab.cluster.ports import free_port
from kafkalab.logformat import MSG_ID_HEADER
from kafkalab.paths import assets_dir, cache_root

PARTITIONS = 6


def tools_classpath() -> str:
    """kafka-tools and its runtime closure, resolved once into the cache dir."""
    target = cache_root() / f"kafka-tools-{KAFKA_VERSION}"
    if not (target / ".complete").exists():
        mvn = shutil.which("mvn")
        if not mvn:
            sys.exit("mvn not found on PATH: needed once to fetch kafka-tools for this benchmark")
        print(f"fetching kafka-tools {KAFKA_VERSION} into {target} ...", flush=True)
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run([mvn, "-B", "-q", "-f", str(assets_dir() / "pom-tools.xml"), "dependency:copy-dependencies",
                        "-DincludeScope=runtime", f"-DoutputDirectory={target / 'libs'}",
                        f"-Dkafka.version={KAFKA_VERSION}"], check=True)
        (target / ".complete").write_text(KAFKA_VERSION + "\n")
    return str(target / "libs" / "*")


def run_java(classpath: str, main: str, args: list[str]) -> str:
    out = subprocess.run([kafka_install.java_binary(), "-Xmx512m", "-cp", classpath, main, *args],
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{main} failed: {out.stderr[-2000:]}")
    return out.stdout


def ours_produce(bootstrap: str, topic: str, records: int, log_dir: Path) -> float:
    producer = Producer({"producer.topic": topic, "producer.num-records-per-roll": str(records)},
                        log_dir, "bench", bootstrap, seed=1)
    began = time.perf_counter()
    producer.start()
    producer.join()
    elapsed = time.perf_counter() - began
    stats = producer.stats()
    if stats.acked != records:
        raise RuntimeError(f"kafkalab producer acked {stats.acked} of {records}: {stats.error or stats.failed}")
    return records / elapsed


def java_produce(classpath: str, bootstrap: str, topic: str, records: int, size: int) -> float:
    out = run_java(classpath, "org.apache.kafka.tools.ProducerPerformance", [
        "--topic", topic, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "enable.idempotence=true",
        "linger.ms=0", "batch.size=16384", "max.in.flight.requests.per.connection=5",
    ])
    final = [line for line in out.splitlines() if f"{records} records sent" in line]
    match = re.search(r"records sent, ([\d.]+) records/sec", final[-1] if final else "")
    if not match:
        raise RuntimeError(f"unexpected ProducerPerformance output: {out[-500:]}")
    return float(match.group(1))


def reader_config(bootstrap: str, topic: str, extra: dict[str, str]) -> ConsumerConfig:
    """A consumer in a group of its own, reading ``topic`` from the beginning."""
    return ConsumerConfig.from_settings({
        "bootstrap.server": bootstrap, "consumer.topic": topic, "consumer.group-id": f"bench-{uuid.uuid4().hex[:8]}",
        "consumer.auto-offset-reset": "earliest", **extra})


def library_produce(bootstrap: str, topic: str, records: int) -> float:
    """confluent-kafka alone: kafkalab's librdkafka settings, keys, values and id headers; no callback
    but for failures, no payload log."""
    config = ProducerConfig.from_settings({"bootstrap.server": bootstrap, "producer.topic": topic})
    failed: list[str] = []
    producer = RdProducer({**base_conf(config.librdkafka()), "delivery.report.only.error": True,
                           "on_delivery": lambda err, _msg: failed.append(err.name())})
    picker = ValuePicker(1)
    values = [picker.next_bytes() for _ in range(records)]
    keys = [i.to_bytes(4, "big", signed=True) for i in range(records)]
    began = time.perf_counter()
    for seq, (key, value) in enumerate(zip(keys, values, strict=True)):
        headers = [(MSG_ID_HEADER, b"bench:library:%d" % seq)]
        while True:
            try:
                producer.produce(topic, value, key, headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
    left = producer.flush(120)
    elapsed = time.perf_counter() - began
    if left or failed:
        raise RuntimeError(f"library producer: {left} undelivered, {len(failed)} failed {failed[:3]}")
    return records / elapsed


def library_consume(bootstrap: str, topic: str, records: int, batch: int = 500) -> float:
    """confluent-kafka alone: batches of ``batch`` counted, nothing logged or committed; records/s from the
    group's assignment to the last record."""
    config = reader_config(bootstrap, topic, {"consumer.auto-commit": "false"})
    consumer = RdConsumer(consumer_conf(config.librdkafka()))
    assigned: list[float] = []
    consumer.subscribe([topic], on_assign=lambda *_: assigned.append(time.perf_counter()))
    seen, deadline = 0, time.monotonic() + 120
    try:
        while seen < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"library consumer got {seen} of {records} records of {topic} in 120 s")
            seen += sum(1 for m in consumer.consume(batch, 0.5) if m.error() is None)
        return records / (time.perf_counter() - assigned[0])
    finally:
        consumer.close()


def cpu_seconds() -> float:
    """CPU time of this process and of its ended children (Kafka's tools run as children)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def ours_consume(bootstrap: str, topic: str, records: int, log_dir: Path) -> float:
    """Records/s of the consumer loop, from its first assignment to the last record processed."""
    assigned: list[float] = []

    def sink(item: dict[str, object]) -> None:
        if item.get("kind") == "assigned" and not assigned:
            assigned.append(time.perf_counter())

    config = reader_config(bootstrap, topic, {"consumer.payload-trunc": "true"})
    loop = ConsumerLoop(config, log_dir, sink)
    thread = threading.Thread(target=loop.run)
    thread.start()
    while loop.processed < records:
        if not thread.is_alive():
            raise RuntimeError(f"kafkalab consumer ended after {loop.processed} of {records} records")
        time.sleep(0.005)
    done = time.perf_counter()
    loop.stop_requested.set()
    thread.join()
    return records / (done - assigned[0])


def java_consume(classpath: str, bootstrap: str, topic: str, records: int) -> float:
    out = run_java(classpath, "org.apache.kafka.tools.ConsumerPerformance", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records),
        "--group", f"bench-java-{uuid.uuid4().hex[:8]}", "--timeout", "60000",
    ])
    lines = [line for line in out.splitlines() if line.strip()]
    header = [h.strip() for h in lines[-2].split(",")]
    values = [v.strip() for v in lines[-1].split(",")]
    return float(values[header.index("fetch.nMsg.sec")])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    classpath = tools_classpath()
    size = ValuePicker(1).average_size()
    root = Path(tempfile.mkdtemp(prefix="kafkalab-bench-clients-"))
    ports = [free_port() for _ in range(4)]
    spec = ClusterSpec(root / "cluster", brokers=3, zk_port=ports[0], broker_ports=ports[1:], free_ports=True)
    names = [f"{peer}_{role}" for role in ("produce", "consume") for peer in ("ours", "library", "java")]
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    try:
        with Cluster(spec, kafka_install.locate()) as cluster:
            cluster.start(timeout=180, progress=lambda m: print(m, flush=True))
            admin = Admin(cluster.bootstrap, timeout_s=10)
            bootstrap, records = cluster.bootstrap, args.records
            for run in range(args.runs):
                topics = {peer: f"bench-{peer}-{run}" for peer in ("ours", "library", "java")}
                for topic in topics.values():
                    admin.create_topic(topic, PARTITIONS, 3, timeout_s=60)
                logs = root / f"logs-{run}"
                produce = [
                    ("ours_produce", partial(ours_produce, bootstrap, topics["ours"], records, logs)),
                    ("library_produce", partial(library_produce, bootstrap, topics["library"], records)),
                    ("java_produce", partial(java_produce, classpath, bootstrap, topics["java"], records, size)),
                ]
                consume = [  # all three read the topic kafkalab's producer wrote
                    ("ours_consume", partial(ours_consume, bootstrap, topics["ours"], records, logs)),
                    ("library_consume", partial(library_consume, bootstrap, topics["ours"], records)),
                    ("java_consume", partial(java_consume, classpath, bootstrap, topics["ours"], records)),
                ]
                for steps in (produce, consume):
                    for name, step in steps[run % 3:] + steps[:run % 3]:  # each peer goes first in turn
                        before = cpu_seconds()
                        samples[name].append(step())
                        cpu[name].append((cpu_seconds() - before) * 100_000 / records)
                        print(f"run {run + 1}/{args.runs} {name}: {samples[name][-1]:,.0f} msg/s, "
                              f"{cpu[name][-1]:.2f} CPU s per 100k records", flush=True)
                for topic in topics.values():
                    admin.delete_topic(topic)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results = {name: summary(values) for name, values in samples.items()}

    def ratio(a: str, b: str) -> float:
        return round(results[a]["median"] / results[b]["median"], 3)

    ratios = {
        "producer_vs_ProducerPerformance": ratio("ours_produce", "java_produce"),
        "consumer_vs_ConsumerPerformance": ratio("ours_consume", "java_consume"),
        "library_producer_vs_ProducerPerformance": ratio("library_produce", "java_produce"),
        "library_consumer_vs_ConsumerPerformance": ratio("library_consume", "java_consume"),
        "producer_vs_library": ratio("ours_produce", "library_produce"),
        "consumer_vs_library": ratio("ours_consume", "library_consume"),
    }
    path = write_results("clients", {
        "records": args.records, "record_size_bytes": size, "partitions": PARTITIONS, "replication_factor": 3,
        "producer_settings": "acks=all, idempotent, linger.ms=0, batch.size=16384, max.in.flight=5",
        "msg_per_s": results, "ratio_of_medians": ratios,
        "client_cpu_s_per_100k_records": {name: summary(values) for name, values in cpu.items()},
        "goal": ">= 1.0 for producer_vs_ProducerPerformance and consumer_vs_ConsumerPerformance",
    })
    print(f"producer {ratios['producer_vs_ProducerPerformance']}x, consumer "
          f"{ratios['consumer_vs_ConsumerPerformance']}x of Kafka's tools; {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
