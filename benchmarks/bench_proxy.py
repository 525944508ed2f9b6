"""The network-fault proxy's cost on loopback, through the proxy and direct in the same run (no cluster, no lock):

    .venv/bin/python -m benchmarks.bench_proxy --repeat 5

- request/reply: one connection, 1 KiB request, 1 KiB reply, one at a time: round trips/s and latency
  percentiles (the proxy's added p99, goal <= 2 ms);
- streaming: one connection sending 256 MiB to a sink: MB/s (goal: ratio >= 0.9) and the proxy's CPU-seconds
  per GiB (the asyncio ceiling, when the ratio falls short);
- connect: a new connection's first round trip, with 4 pids registered (so the source lookup runs);
- idle: the proxy's CPU over 10 s with open, silent connections (goal < 2 % of a core).

The server is a separate process (threads on blocking sockets), the client this one. Each repeat runs the
direct and the proxied workload back to back; medians over the repeats. Writes benchmarks/results/proxy.json.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.benchutil import summary, write_results
from kafkalab.cluster.ports import free_ports
from kafkalab.netfaults import NetFaultsProcess, PortSpec, ProxyConfig

MSG = 1024
STREAM_BYTES = 256 * 2**20
WRITE = 256 * 1024
ROUND_TRIPS = 5000
CONNECTS = 50
IDLE_S = 10.0
GOALS = {"throughput_ratio_min": 0.9, "added_p99_ms_max": 2.0, "idle_cpu_percent_max": 2.0}

SERVER = r"""
import socket, sys, threading
MSG = int(sys.argv[3])

def echo(conn):
    with conn:
        while True:
            buf = b""
            while len(buf) < MSG:
                chunk = conn.recv(MSG - len(buf))
                if not chunk:
                    return
                buf += chunk
            conn.sendall(buf)

def sink(conn):
    with conn:
        total = 0
        while chunk := conn.recv(1 << 20):
            total += len(chunk)
        conn.sendall(str(total).encode())

def serve(port, handler):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(64)
    while True:
        conn, _ = s.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=handler, args=(conn,), daemon=True).start()

threading.Thread(target=serve, args=(int(sys.argv[2]), sink), daemon=True).start()
print("ready", flush=True)
serve(int(sys.argv[1]), echo)
"""


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def recv_exactly(sock: socket.socket, n: int) -> None:
    left = n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("the server closed")
        left -= len(chunk)


def request_reply(port: int) -> dict[str, float]:
    payload = b"r" * MSG
    with connect(port) as sock:
        for _ in range(200):  # warm up
            sock.sendall(payload)
            recv_exactly(sock, MSG)
        times = []
        start = time.perf_counter()
        for _ in range(ROUND_TRIPS):
            t0 = time.perf_counter()
            sock.sendall(payload)
            recv_exactly(sock, MSG)
            times.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
    times.sort()
    return {"per_s": ROUND_TRIPS / elapsed, "p50_ms": times[len(times) // 2] * 1000,
            "p99_ms": times[int(len(times) * 0.99)] * 1000}


def stream(port: int, proxy: psutil.Process | None) -> dict[str, float]:
    block = b"s" * WRITE
    cpu0 = sum(proxy.cpu_times()[:2]) if proxy else 0.0
    with connect(port) as sock:
        start = time.perf_counter()
        for _ in range(STREAM_BYTES // WRITE):
            sock.sendall(block)
        sock.shutdown(socket.SHUT_WR)
        received = int(sock.recv(64))
        elapsed = time.perf_counter() - start
    assert received == STREAM_BYTES, received
    out = {"mb_per_s": STREAM_BYTES / elapsed / 1e6}
    if proxy:
        out["proxy_cpu_s_per_gib"] = (sum(proxy.cpu_times()[:2]) - cpu0) * 2**30 / STREAM_BYTES
    return out


def connects(port: int) -> float:
    """Median ms from connect() to the first reply on a new connection."""
    samples = []
    for _ in range(CONNECTS):
        t0 = time.perf_counter()
        with connect(port) as sock:
            sock.sendall(b"c" * MSG)
            recv_exactly(sock, MSG)
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def idle_cpu_percent(proxy: psutil.Process, port: int) -> float:
    held = [connect(port) for _ in range(4)]
    try:
        time.sleep(1.0)
        cpu0, t0 = sum(proxy.cpu_times()[:2]), time.monotonic()
        time.sleep(IDLE_S)
        return (sum(proxy.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0) * 100
    finally:
        for sock in held:
            sock.close()


def one_repeat(echo: int, sink: int, proxy_echo: int, proxy_sink: int, proxy: psutil.Process) -> dict[str, Any]:
    rr_direct, rr_proxy = request_reply(echo), request_reply(proxy_echo)
    st_direct, st_proxy = stream(sink, None), stream(proxy_sink, proxy)
    return {
        "rr_direct_per_s": rr_direct["per_s"], "rr_proxy_per_s": rr_proxy["per_s"],
        "rr_ratio": rr_proxy["per_s"] / rr_direct["per_s"],
        "rr_direct_p50_ms": rr_direct["p50_ms"], "rr_proxy_p50_ms": rr_proxy["p50_ms"],
        "rr_direct_p99_ms": rr_direct["p99_ms"], "rr_proxy_p99_ms": rr_proxy["p99_ms"],
        "rr_added_p99_ms": rr_proxy["p99_ms"] - rr_direct["p99_ms"],
        "stream_direct_mb_per_s": st_direct["mb_per_s"], "stream_proxy_mb_per_s": st_proxy["mb_per_s"],
        "stream_ratio": st_proxy["mb_per_s"] / st_direct["mb_per_s"],
        "proxy_cpu_s_per_gib": st_proxy["proxy_cpu_s_per_gib"],
        "connect_direct_ms": connects(echo), "connect_proxy_ms": connects(proxy_echo),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    echo, sink, proxy_echo, proxy_sink = free_ports(4)
    control = Path(tempfile.mkdtemp(prefix="nf-bench-"))
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(echo), str(sink), str(MSG)],
                              stdout=subprocess.PIPE, text=True)
    proc: NetFaultsProcess | None = None
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        config = ProxyConfig(control, (PortSpec(proxy_echo, "echo", echo), PortSpec(proxy_sink, "sink", sink)))
        proc = NetFaultsProcess.start(config)
        # registered pids, none of them this process: every new connection runs the full lookup, then is 'clients'
        others = [*(p.pid for p in psutil.Process().parents()[:3]), server.pid]
        for i, pid in enumerate(others):
            proc.client.register(f"node-{i}", pid)
        proxy = psutil.Process(proc.pid)
        repeats = []
        for i in range(args.repeat):
            repeats.append(one_repeat(echo, sink, proxy_echo, proxy_sink, proxy))
            print(f"repeat {i + 1}: " + ", ".join(f"{k}={v:.3g}" for k, v in repeats[-1].items()), flush=True)
        idle = [idle_cpu_percent(proxy, proxy_echo) for _ in range(min(3, args.repeat))]
        status = proc.client.status()
        assert {s.link.source for s in status.links} == {"clients"}, status.links
    finally:
        if proc is not None:
            proc.stop()
        server.kill()
        server.wait()
        shutil.rmtree(control, ignore_errors=True)
    metrics = {key: summary([r[key] for r in repeats]) for key in repeats[0]}
    metrics["idle_cpu_percent"] = summary(idle)
    verdict = {
        "rr_ratio": metrics["rr_ratio"]["median"] >= GOALS["throughput_ratio_min"],
        "stream_ratio": metrics["stream_ratio"]["median"] >= GOALS["throughput_ratio_min"],
        "added_p99_ms": metrics["rr_added_p99_ms"]["median"] <= GOALS["added_p99_ms_max"],
        "idle_cpu_percent": metrics["idle_cpu_percent"]["median"] < GOALS["idle_cpu_percent_max"],
    }
    path = write_results("proxy", {
        "repeat": args.repeat, "goals": GOALS, "met": verdict,
        "load_average_at_end": [round(x, 2) for x in psutil.getloadavg()],
        "workloads": {"request_reply": f"{ROUND_TRIPS} round trips of {MSG} B each way, one connection",
                      "stream": f"{STREAM_BYTES // 2**20} MiB one way in {WRITE // 1024} KiB writes",
                      "connect": f"{CONNECTS} new connections, {len(others)} pids registered",
                      "idle": f"{IDLE_S:g} s, 4 open silent connections"},
        "metrics": metrics,
    })
    print(f"wrote {path}")
    for key, ok in verdict.items():
        print(f"{key}: {metrics[key if key != 'added_p99_ms' else 'rr_added_p99_ms']['median']:.3g} "
              f"{'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
