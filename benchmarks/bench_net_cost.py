"""The network-fault proxies' cost on a real cluster: the same client workloads with and without the proxy.

    .venv/bin/python -m benchmarks.bench_net_cost [--runs 3] [--records 300000]

Two ZooKeeper-mode clusters of 3 brokers, one after the other, each under the machine-wide cluster lock:

1. a ``net_proxies`` cluster: every workload twice per repetition, interleaved (the order swaps each
   repetition), once through the brokers' direct PLAINTEXT bootstrap (``spec.bootstrap``: the client's own
   hop direct, replication and ZooKeeper still through the proxy) and once through the proxied CLIENT
   bootstrap (``spec.client_bootstrap``, what the lab's clients use);
2. a plain cluster (no proxies): the same workloads, direct; the whole-path figure is the proxied path of
   cluster 1 beside this.

Workloads (confluent-kafka with kafkalab's librdkafka settings, topics of 6 partitions, RF 3,
min.insync.replicas=2):

- produce (demo): the lab's producer settings (acks=all, idempotent, linger 0, batch 16 KiB), records/s;
- produce (throughput): acks=all, linger.ms=10, batch.size=256 KiB, lz4 off, records/s;
- consume: a fresh group reads the throughput topic from the start, records/s from assignment to the last;
- latency: acks=all at a fixed LATENCY_RATE msg/s for LATENCY_S seconds, librdkafka's per-message delivery
  latency (Message.latency()), p50/p99; on the proxied cluster one producer per path, their sends
  interleaved one by one, so both paths see the same moments of the machine's load;
- the proxy process's CPU during each workload (% of a core) and idle (10 s, no clients: what is left is
  replication's idle fetches and ZooKeeper's pings through the proxy).

With ``--console N``, benchmarks/bench_console.py's whole measurement (the real console in tmux, a broker
key until the screen shows it, idle and under a producer) N times on each side, plain and --net-proxies
alternately, each under the lock: the key-to-visible figures beside each other.

Medians over the repetitions. Goals (issue 31): throughput ratio >= 0.9, produce p99 added <= 2 ms, idle CPU
of the proxy < 2 % of a core. Writes benchmarks/results/net-cost.json.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from confluent_kafka import KafkaError, Message
from confluent_kafka import Producer as RdProducer

from benchmarks.bench_clients import library_consume
from benchmarks.benchutil import cluster_lock, summary, write_results
from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.clients.corpus import ValuePicker
from kafkalab.clients.options import ProducerConfig
from kafkalab.clients.preflight import base_conf
from kafkalab.cluster import Cluster, ClusterSpec

PARTITIONS = 6
TOPIC_CONFIG = {"min.insync.replicas": "2"}
THROUGHPUT_CONF = {"linger.ms": 10, "batch.size": 262144, "compression.type": "none"}
LATENCY_RATE = 500  # msg/s: moderate, well under what either path sustains
LATENCY_S = 6.0
IDLE_S = 10.0
GOALS = {"throughput_ratio_min": 0.9, "added_p99_ms_max": 2.0, "idle_cpu_percent_max": 2.0,
         "console_key_p95_ms_max": 100.0}
CONSOLE_KEYS = ("key_idle_median_ms", "key_idle_p95_ms", "key_live_median_ms", "key_live_p95_ms",
                "peer_live_p95_ms")
WORKLOADS = ("produce_demo", "produce_throughput", "consume")


class CpuMeter:
    """CPU-seconds of one process (the proxy) between two points, as % of one core."""

    def __init__(self, pid: int | None) -> None:
        self.proc = psutil.Process(pid) if pid else None
        self.cpu0 = self.t0 = 0.0

    def __enter__(self) -> CpuMeter:
        if self.proc:
            self.cpu0 = sum(self.proc.cpu_times()[:2])
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.elapsed = time.monotonic() - self.t0
        self.percent = ((sum(self.proc.cpu_times()[:2]) - self.cpu0) / self.elapsed * 100) if self.proc else None


def producer(bootstrap: str, topic: str, extra: dict[str, Any]) -> tuple[RdProducer, list[str]]:
    """kafkalab's producer settings (the lab's demo ones) for ``topic``, plus ``extra``; failures collected."""
    config = ProducerConfig.from_settings({"bootstrap.server": bootstrap, "producer.topic": topic})
    failed: list[str] = []

    def report(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failed.append(err.name())

    conf = {**base_conf(config.librdkafka()), "delivery.report.only.error": True, "on_delivery": report, **extra}
    return RdProducer(conf), failed


def produce(bootstrap: str, topic: str, values: list[bytes], extra: dict[str, Any]) -> float:
    """Records/s of ``values`` written to ``topic`` (all acknowledged), from the first produce() to the flush."""
    prod, failed = producer(bootstrap, topic, extra)
    prod.list_topics(topic, timeout=10)  # metadata and connections first: the rate is the steady state's
    began = time.perf_counter()
    for seq, value in enumerate(values):
        while True:
            try:
                prod.produce(topic, value, seq.to_bytes(4, "big"))
                break
            except BufferError:
                prod.poll(0.01)
    left = prod.flush(120)
    elapsed = time.perf_counter() - began
    if left or failed:
        raise RuntimeError(f"producer to {topic} via {bootstrap}: {left} undelivered, {len(failed)} failed "
                           f"{failed[:3]}")
    return len(values) / elapsed


def consume(bootstrap: str, topic: str, records: int) -> float:
    """Records/s of a fresh group reading ``topic`` from the start, from its assignment to the last record."""
    return library_consume(bootstrap, topic, records, batch=1000)


def latency(bootstraps: dict[str, str], topic: str, value: bytes) -> dict[str, dict[str, float]]:
    """Per path, the delivery latency (ms, librdkafka's own per-message clock) of acks=all records: one producer
    per path, their sends interleaved one by one at LATENCY_RATE/s in all, so every path sees the same moments
    of the machine's load."""
    samples: dict[str, list[float]] = {path: [] for path in bootstraps}
    failed: list[str] = []

    def report(path: str) -> Callable[[KafkaError | None, Message], None]:
        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failed.append(err.name())
            elif (lat := msg.latency()) is not None:
                samples[path].append(lat * 1000)
        return on_delivery

    producers = {}
    for path, bootstrap in bootstraps.items():
        config = ProducerConfig.from_settings({"bootstrap.server": bootstrap, "producer.topic": topic})
        producers[path] = RdProducer({**base_conf(config.librdkafka()), "acks": "all", "on_delivery": report(path)})
    for prod in producers.values():
        for i in range(50):  # warm up: connections, metadata, the idempotent producer id
            prod.produce(topic, value, i.to_bytes(4, "big"))
        prod.flush(30)
    for path in samples:
        samples[path].clear()
    count = int(LATENCY_RATE * LATENCY_S)
    turns = list(producers.values())
    began = time.perf_counter()
    for i in range(count):
        due = began + i / LATENCY_RATE
        if (wait := due - time.perf_counter()) > 0:
            time.sleep(wait)  # no busy wait: the niced brokers would lose the cycles (the latency is librdkafka's)
        prod = turns[i % len(turns)]
        prod.produce(topic, value, i.to_bytes(4, "big"))
        for other in turns:
            other.poll(0)
    for prod in turns:
        prod.flush(30)
    if failed or sum(map(len, samples.values())) != count:
        raise RuntimeError(f"latency run: {sum(map(len, samples.values()))} of {count} delivered, {failed[:3]}")
    out = {}
    for path, values in samples.items():
        ordered = sorted(values)
        out[path] = {"p50_ms": statistics.median(ordered), "p99_ms": ordered[int(len(ordered) * 0.99)]}
    return out


def measure_path(admin: Admin, bootstrap: str, tag: str, values: list[bytes], proxy_pid: int | None,
                 log: Callable[[str], None]) -> dict[str, float]:
    """Every workload once through ``bootstrap``; the proxy's CPU (% of a core) during each."""
    demo, bulk = (f"netcost-{tag}-{kind}-{uuid.uuid4().hex[:6]}" for kind in ("demo", "bulk"))
    for topic in (demo, bulk):
        admin.create_topic(topic, PARTITIONS, 3, TOPIC_CONFIG, timeout_s=60)
    out: dict[str, float] = {}
    demo_records = values[: len(values) // 3]
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("produce_demo", lambda: produce(bootstrap, demo, demo_records, {})),
        ("produce_throughput", lambda: produce(bootstrap, bulk, values, THROUGHPUT_CONF)),
        ("consume", lambda: consume(bootstrap, bulk, len(values))),
    ]
    for name, step in steps:
        with CpuMeter(proxy_pid) as cpu:
            out[f"{name}_per_s"] = step()
        if cpu.percent is not None:
            out[f"{name}_proxy_cpu_percent"] = cpu.percent
    for topic in (demo, bulk):
        admin.delete_topic(topic)
    log(f"  {tag}: " + ", ".join(f"{k}={v:,.4g}" for k, v in out.items()))
    return out


def idle_cpu(pid: int) -> float:
    time.sleep(2.0)  # the deleted topics' last fetches settle
    with CpuMeter(pid) as cpu:
        time.sleep(IDLE_S)
    assert cpu.percent is not None
    return cpu.percent


def loopback_ceiling(repeats: int = 3) -> dict[str, Any]:
    """benchmarks/bench_proxy's request/reply and streaming through a proxy process of its own, beside the same
    workload direct: what the asyncio proxy can do on this machine at this moment (no Kafka in the path)."""
    import subprocess
    import sys

    from benchmarks import bench_proxy
    from kafkalab.cluster.ports import free_ports
    from kafkalab.netfaults import NetFaultsProcess, PortSpec, ProxyConfig

    echo, sink, proxy_echo, proxy_sink = free_ports(4)
    control = Path(tempfile.mkdtemp(prefix="nf-ceiling-"))
    server = subprocess.Popen([sys.executable, "-c", bench_proxy.SERVER, str(echo), str(sink), str(bench_proxy.MSG)],
                              stdout=subprocess.PIPE, text=True)
    proc: NetFaultsProcess | None = None
    rows: list[dict[str, float]] = []
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        proc = NetFaultsProcess.start(ProxyConfig(control, (PortSpec(proxy_echo, "echo", echo),
                                                            PortSpec(proxy_sink, "sink", sink))))
        proxy = psutil.Process(proc.pid)
        for _ in range(repeats):
            rr_direct, rr_proxy = bench_proxy.request_reply(echo), bench_proxy.request_reply(proxy_echo)
            st_direct, st_proxy = bench_proxy.stream(sink, None), bench_proxy.stream(proxy_sink, proxy)
            rows.append({"rr_added_p50_ms": rr_proxy["p50_ms"] - rr_direct["p50_ms"],
                         "rr_added_p99_ms": rr_proxy["p99_ms"] - rr_direct["p99_ms"],
                         "stream_direct_mb_per_s": st_direct["mb_per_s"], "stream_proxy_mb_per_s": st_proxy["mb_per_s"],
                         "proxy_cpu_s_per_gib": st_proxy["proxy_cpu_s_per_gib"]})
    finally:
        if proc is not None:
            proc.stop()
        server.kill()
        server.wait()
        shutil.rmtree(control, ignore_errors=True)
    return {key: summary([r[key] for r in rows]) for key in rows[0]}


def run_cluster(root: Path, net_proxies: bool, runs: int, values: list[bytes],
                log: Callable[[str], None]) -> dict[str, Any]:
    """One cluster under the lock: per repetition each path once (direct then proxied, swapped every other)."""
    spec = ClusterSpec(root / ("proxied" if net_proxies else "plain"), brokers=3, free_ports=True,
                       net_proxies=net_proxies)
    paths = {"direct": spec.bootstrap, **({"proxied": spec.client_bootstrap} if net_proxies else {})}
    samples: dict[str, list[dict[str, float]]] = {path: [] for path in paths}
    idle: list[float] = []
    ceiling: dict[str, Any] = {}
    with cluster_lock(), Cluster(spec, kafka_install.locate()) as cluster:
        started = time.monotonic()
        cluster.start(timeout=180, progress=lambda m: log(f"  {m}"))
        log(f"cluster {'with' if net_proxies else 'without'} proxies up in {time.monotonic() - started:.0f} s")
        proxy_pid = cluster.net.pid if cluster.net is not None else None
        admin = Admin(spec.bootstrap, timeout_s=10)
        order = list(paths)
        for run in range(runs):
            log(f"repetition {run + 1}/{runs} ({' then '.join(order)})")
            for path in order:
                samples[path].append(measure_path(admin, paths[path], path, values, proxy_pid, log))
            topic = f"netcost-latency-{uuid.uuid4().hex[:6]}"
            admin.create_topic(topic, PARTITIONS, 3, TOPIC_CONFIG, timeout_s=60)
            with CpuMeter(proxy_pid) as cpu:
                lat = latency({path: paths[path] for path in order}, topic, values[0])
            admin.delete_topic(topic)
            for path in order:
                samples[path][-1].update({f"latency_{k}": v for k, v in lat[path].items()})
            log("  latency: " + ", ".join(f"{path} p50 {lat[path]['p50_ms']:.2f} ms, p99 {lat[path]['p99_ms']:.2f} ms"
                                          for path in order)
                + (f"; proxy CPU {cpu.percent:.1f} %" if cpu.percent is not None else ""))
            order.reverse()
        if proxy_pid is not None:
            idle = [idle_cpu(proxy_pid) for _ in range(2)]
            log(f"  proxy idle CPU: {', '.join(f'{x:.2f} %' for x in idle)}")
            ceiling = loopback_ceiling()  # the same machine and moment, the cluster idle beside it
            log(f"  loopback ceiling: { {k: round(v['median'], 3) for k, v in ceiling.items()} }")
    out: dict[str, Any] = {path: {key: summary([s[key] for s in rows]) for key in rows[0]}
                           for path, rows in samples.items()}
    if idle:
        out["proxy_idle_cpu_percent"] = summary(idle)
        out["loopback_ceiling"] = ceiling
    return out


def ratios(proxied: dict[str, Any], baseline: dict[str, Any]) -> dict[str, float]:
    def med(side: dict[str, Any], key: str) -> float:
        return float(side[key]["median"])

    out = {f"{w}_ratio": round(med(proxied, f"{w}_per_s") / med(baseline, f"{w}_per_s"), 3) for w in WORKLOADS}
    out["latency_added_p50_ms"] = round(med(proxied, "latency_p50_ms") - med(baseline, "latency_p50_ms"), 3)
    out["latency_added_p99_ms"] = round(med(proxied, "latency_p99_ms") - med(baseline, "latency_p99_ms"), 3)
    return out


def verdict(compared: dict[str, float], idle: float | None) -> dict[str, bool]:
    met = {f"{w}_ratio": compared[f"{w}_ratio"] >= GOALS["throughput_ratio_min"] for w in WORKLOADS}
    met["latency_added_p99_ms"] = compared["latency_added_p99_ms"] <= GOALS["added_p99_ms_max"]
    if idle is not None:
        met["proxy_idle_cpu_percent"] = idle < GOALS["idle_cpu_percent_max"]
    return met


def console_side(args: argparse.Namespace, net_proxies: bool) -> dict[str, float]:
    """One whole bench_console measurement (its own clusters, under the lock): the key-to-visible figures."""
    from benchmarks import bench_console

    with cluster_lock():
        run = bench_console.measure(argparse.Namespace(records=args.console_records, samples=20,
                                                       net_proxies=net_proxies))
    return {"key_idle_median_ms": run["key_to_visible_idle"]["median_ms"],
            "key_idle_p95_ms": run["key_to_visible_idle"]["p95_ms"],
            "key_live_median_ms": run["key_to_visible_live_run"]["median_ms"],
            "key_live_p95_ms": run["key_to_visible_live_run"]["p95_ms"],
            "peer_live_p95_ms": run["peer_key_to_visible_live_run"]["p95_ms"]}


def console_compared(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    sides: dict[str, list[dict[str, float]]] = {"plain": [], "proxied": []}
    for run in range(args.console):
        for side in (("plain", "proxied") if run % 2 == 0 else ("proxied", "plain")):
            sides[side].append(console_side(args, side == "proxied"))
            log(f"console {side} {run + 1}/{args.console}: {sides[side][-1]}")
    out: dict[str, Any] = {side: {k: summary([r[k] for r in rows]) for k in CONSOLE_KEYS}
                           for side, rows in sides.items()}
    worst = max(out["proxied"]["key_idle_p95_ms"]["median"], out["proxied"]["key_live_p95_ms"]["median"])
    out["met"] = {"key_p95_ms": worst <= GOALS["console_key_p95_ms_max"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="repetitions per cluster (medians over them)")
    parser.add_argument("--records", type=int, default=600_000,
                        help="records of the throughput workload (the demo one writes a third of them)")
    parser.add_argument("--console", type=int, default=0, metavar="N",
                        help="bench_console's measurement N times each, plain and with --net-proxies")
    parser.add_argument("--console-records", type=int, default=300_000,
                        help="records the console benchmark's producer writes")
    parser.add_argument("--only", choices=("proxied", "plain"), help="one cluster (a trial; no results written)")
    args = parser.parse_args()
    began = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - began:6.1f} s] {message}", flush=True)

    picker = ValuePicker(1)
    values = [picker.next_bytes() for _ in range(args.records)]
    root = Path(tempfile.mkdtemp(prefix="kafkalab-bench-net-cost-"))
    try:
        proxied = run_cluster(root, True, args.runs, values, log) if args.only != "plain" else None
        plain = run_cluster(root, False, args.runs, values, log) if args.only != "proxied" else None
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if proxied is None or plain is None:
        return
    write_results("net-cost", clusters_results(args, picker, proxied, plain, None))
    log("wrote the clusters' figures" + (": now the console" if args.console else ""))
    if not args.console:
        return
    try:
        console: dict[str, Any] = console_compared(args, log)
    except Exception as exc:  # the clusters' figures stand: the console's failure is said beside them
        console = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        log(f"console measurement failed: {console['error']}")
    path = write_results("net-cost", clusters_results(args, picker, proxied, plain, console))
    log(f"wrote {path}")
    if "error" not in console:
        print("console key -> visible (ms), plain / proxied: " + ", ".join(
            f"{k}={console['plain'][k]['median']}/{console['proxied'][k]['median']}" for k in CONSOLE_KEYS))


def clusters_results(args: argparse.Namespace, picker: ValuePicker, proxied: dict[str, Any], plain: dict[str, Any],
                     console: dict[str, Any] | None) -> dict[str, Any]:
    idle = proxied["proxy_idle_cpu_percent"]["median"]
    same_cluster = ratios(proxied["proxied"], proxied["direct"])
    whole_path = ratios(proxied["proxied"], plain["direct"])
    results: dict[str, Any] = {
        "runs": args.runs, "records": args.records, "record_size_bytes": picker.average_size(),
        "goals": GOALS,
        "workloads": {
            "topics": f"{PARTITIONS} partitions, RF 3, min.insync.replicas=2, a fresh topic per workload and run",
            "produce_demo": f"{args.records // 3} records, kafkalab's producer settings (acks=all, idempotent, "
                            "linger 0, batch 16 KiB)",
            "produce_throughput": f"{args.records} records, acks=all, idempotent, linger.ms=10, batch 256 KiB",
            "consume": f"the {args.records} records of produce_throughput, a fresh group from the start",
            "latency": f"acks=all, {LATENCY_RATE} msg/s for {LATENCY_S:g} s, per-message delivery latency; "
                       "on the proxied cluster a producer per path, sends interleaved (half the rate each)",
            "idle": f"{IDLE_S:g} s of the proxy's CPU, no clients, after the workloads",
        },
        "paths": {
            "direct": "the brokers' PLAINTEXT listeners (kafkalab's admin path)",
            "proxied": "the proxy's CLIENT ports (the lab's clients' path)",
            "plain": "a cluster without proxies, started after the proxied one on the same machine",
        },
        "same_cluster": {"compared": same_cluster, "met": verdict(same_cluster, idle)},
        "whole_path": {"compared": whole_path, "met": verdict(whole_path, idle)},
        "console": console,
        "load_average_at_end": [round(x, 2) for x in psutil.getloadavg()],
        "metrics": {"proxied_cluster": proxied, "plain_cluster": plain},
    }
    print(", ".join(f"{k}={v}" for k, v in same_cluster.items()) + f"; idle {idle} %")
    return results


if __name__ == "__main__":
    main()
