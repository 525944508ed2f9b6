"""Console responsiveness, measured on the real `kafkalab console` in tmux with a real cluster.

- startup: `kafkalab console` to every badge RUNNING, minus the same cluster's own start (Cluster.start());
- key to visible reaction: a broker number key until the screen says it is selected (idle and during a run
  of --records records), median and p95;
- new leader: after a kill of the leader, the time from this script's own admin client seeing the new
  leader to the console's table showing it, in admin refreshes (1 s each);
- the console process's CPU while idle and while the producer runs;
- a peer: a program that only echoes the key, in the same tmux under the same load (the terminal's and the
  scheduler's part of the latency), measured interleaved with the console.

    .venv/bin/python benchmarks/bench_console.py [--records 500000] [--samples 20] [--runs 3] [--net-proxies]

Writes benchmarks/results/console.json. With --net-proxies the console's cluster (and the cluster timed for
the startup figure) runs with the network-fault proxies and the producer writes through them: the result
goes to stdout only (benchmarks/bench_net_cost.py --console measures both, each run under the cluster lock,
into net-cost.json).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.cluster import Cluster, ClusterSpec
from kafkalab.cluster.control_socket import read_cluster_file
from kafkalab.cluster.process import reap_marked_processes
from kafkalab.ui.app import ADMIN_POLL_S

KAFKALAB = Path(sys.executable).with_name("kafkalab")
RESULTS = Path(__file__).resolve().parent / "results" / "console.json"
TOPIC = "bench-console"


# The peer: the least a program can do on a key in the same tmux, under the same load (it prints what
# the console prints). Its latency is the terminal's and the scheduler's share of the console's.
ECHO_PEER = """
import sys, tty
tty.setcbreak(sys.stdin.fileno())
while True:
    sys.stdout.write("\\rselected: broker-" + sys.stdin.read(1) + "   ")
    sys.stdout.flush()
"""


class Screen:
    def __init__(self, socket: str, target: str = "c") -> None:
        self.socket = socket
        self.target = target

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True).stdout

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.target)

    def wait(self, check: object, timeout: float, step: float = 0.005) -> float:
        """Seconds until check(screen) holds."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if check(self.text()):  # type: ignore[operator]
                return time.monotonic() - started
            time.sleep(step)
        raise TimeoutError(f"screen condition not met in {timeout}s:\n{self.text()}")


def leader_on_screen(screen: str, key: str) -> str | None:
    m = re.search(rf"{re.escape(key)}\s+(\d+|none)\s", screen)
    return m.group(1) if m else None


def key_latencies(screen: Screen, samples: int) -> list[float]:
    out = []
    for i in range(samples):
        broker = str(i % 3 + 1)
        started = time.monotonic()
        screen.tmux("send-keys", "-t", screen.target, broker)
        screen.wait(lambda s, b=broker: f"selected: broker-{b}" in s, 10, step=0.002)
        out.append((time.monotonic() - started) * 1000)
        time.sleep(0.1)
    return out


def cpu_of(pid: int, seconds: float) -> float:
    proc = psutil.Process(pid)
    proc.cpu_percent(None)
    time.sleep(seconds)
    return proc.cpu_percent(None)


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"median_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 1), "n": len(ordered)}


def cluster_own_start(root: Path, net_proxies: bool = False) -> float:
    spec = ClusterSpec(state_dir=root / "plain", brokers=3, free_ports=True, net_proxies=net_proxies)
    started = time.monotonic()
    with Cluster(spec, kafka_install.locate()) as cluster:
        cluster.start()
        return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3, help="whole measurements; the summary is their median")
    parser.add_argument("--net-proxies", action="store_true",
                        help="the console's cluster with the network-fault proxies (result printed, not written)")
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        runs.append(measure(args))
        print(f"run {i + 1}/{args.runs}: {json.dumps(runs[-1])}", file=sys.stderr)
    medians = {
        name: statistics.median(run[section][key] for run in runs)
        for name, section, key in (
            ("key_live_median_ms", "key_to_visible_live_run", "median_ms"),
            ("key_live_p95_ms", "key_to_visible_live_run", "p95_ms"),
            ("key_idle_median_ms", "key_to_visible_idle", "median_ms"),
            ("key_idle_p95_ms", "key_to_visible_idle", "p95_ms"),
            ("peer_live_p95_ms", "peer_key_to_visible_live_run", "p95_ms"),
            ("beyond_cluster_s", "startup", "beyond_cluster_s"),
            ("console_after_admin_s", "new_leader", "console_after_admin_s"),
            ("cpu_idle_percent", "console_cpu_percent", "idle"),
            ("cpu_live_percent", "console_cpu_percent", "live_run"),
        )
    }
    result = {"medians_of_runs": medians, "runs": runs}
    if args.net_proxies:
        print(json.dumps(result, indent=2))
        return 0
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(medians, indent=2))
    return 0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """One whole measurement on a fresh cluster and console."""
    root = Path(tempfile.mkdtemp(prefix="kafkalab-bench-console-"))
    state_dir = root / "console"
    screen = Screen(f"kafkalab-bench-{os.getpid()}")
    producer: subprocess.Popen[bytes] | None = None
    load_at_start = os.getloadavg()[0]
    net_proxies = bool(getattr(args, "net_proxies", False))
    try:
        plain_start = cluster_own_start(root, net_proxies)
        started = time.monotonic()
        screen.tmux("new-session", "-d", "-s", "c", "-x", "140", "-y", "40",
                    f"{KAFKALAB} console --no-lab --free-ports --state-dir {state_dir}"
                    + (" --net-proxies" if net_proxies else ""))
        # the top bar's last progress line: "cluster ready" once, "<demo topic> ready: g runs ..." since
        screen.wait(lambda s: s.count("RUNNING") == 4 and ("cluster ready" in s or " ready: g runs" in s), 240,
                    step=0.05)
        console_start = time.monotonic() - started
        console_pid = next(p.pid for p in psutil.process_iter(["cmdline"])
                           if str(state_dir) in " ".join(p.info["cmdline"] or []) and "console" in p.info["cmdline"])
        facts = read_cluster_file(state_dir)
        bootstrap = facts["bootstrap"]  # the direct listeners: this script's own admin view, as the console's
        client_bootstrap = facts.get("client_bootstrap") or bootstrap  # through the proxy with --net-proxies
        admin = Admin(bootstrap, timeout_s=2)
        admin.create_topic(TOPIC, 6, 3, {"min.insync.replicas": "2"}, timeout_s=60)
        screen.wait(lambda s: (leader_on_screen(s, f"{TOPIC}/0") or "none") != "none", 30, step=0.05)
        peer = Screen(screen.socket, "p")
        peer.tmux("new-session", "-d", "-s", "p", "-x", "140", "-y", "40",
                  shlex.join([sys.executable, "-c", ECHO_PEER]))
        idle_cpu = cpu_of(console_pid, 10)
        idle_keys = key_latencies(screen, args.samples)
        idle_peer = key_latencies(peer, args.samples)

        # Its own session, like a producer started in another terminal: in this script's session it shared the
        # scheduler's autogroup with the tmux clients that send keys and read the screen, and starved them
        # (`tmux send-keys` alone took 40 ms median at load 11), so the figure measured this script, not the console.
        producer = subprocess.Popen(
            [str(KAFKALAB), "produce", f"-Dbootstrap.server={client_bootstrap}", f"-Dproducer.topic={TOPIC}",
             f"-Dproducer.num-records-per-roll={args.records}", "-Dproducer.num-rolls=1", "-Dproducer.acks=all",
             "--log-dir", str(root / "logs")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(2)
        live_cpu = cpu_of(console_pid, 3)
        live_keys, live_peer = [], []
        for _ in range(args.samples // 5):  # interleaved, so both see the same moments of the run
            live_keys += key_latencies(screen, 5)
            live_peer += key_latencies(peer, 5)
        in_topic = sum(admin.end_offsets([(TOPIC, p) for p in range(6)]).values())
        if in_topic >= args.records:
            print(f"the run ended before the kill: raise --records (now {args.records})", file=sys.stderr)
        old = admin.snapshot(offsets=False).partition(TOPIC, 0)
        assert old is not None and old.leader is not None
        screen.tmux("send-keys", "-t", "c", str(old.leader), "k")
        killed = time.monotonic()
        admin_seen = screen_seen = None
        while time.monotonic() - killed < 120 and (admin_seen is None or screen_seen is None):
            if admin_seen is None:
                p = admin.snapshot(offsets=False).partition(TOPIC, 0)
                if p is not None and p.leader not in (None, old.leader):
                    admin_seen = time.monotonic()
            if screen_seen is None and leader_on_screen(screen.text(), f"{TOPIC}/0") not in (
                    str(old.leader), "none", None):
                screen_seen = time.monotonic()
            time.sleep(0.05)
        assert admin_seen is not None and screen_seen is not None, "no new leader within 120 s"
        lag = screen_seen - admin_seen
        result = {
            "machine": {"cpus": os.cpu_count(), "load_avg_1m_at_start": round(load_at_start, 2),
                        "load_avg_1m": round(os.getloadavg()[0], 2)},
            "records": args.records,
            "net_proxies": net_proxies,
            "records_in_topic_at_kill": in_topic,
            "startup": {"cluster_own_start_s": round(plain_start, 2), "console_ready_s": round(console_start, 2),
                        "beyond_cluster_s": round(console_start - plain_start, 2)},
            "key_to_visible_idle": summary(idle_keys),
            "key_to_visible_live_run": summary(live_keys),
            "peer_key_to_visible_idle": summary(idle_peer),
            "peer_key_to_visible_live_run": summary(live_peer),
            "live_p95_vs_peer": round(summary(live_keys)["p95_ms"] / summary(live_peer)["p95_ms"], 2),
            "new_leader": {"admin_first_s_after_kill": round(admin_seen - killed, 2),
                           "console_after_admin_s": round(lag, 2),
                           "within_one_refresh": lag <= ADMIN_POLL_S + 0.5,
                           "admin_refresh_s": ADMIN_POLL_S},
            "console_cpu_percent": {"idle": round(idle_cpu, 1), "live_run": round(live_cpu, 1)},
        }
        screen.tmux("send-keys", "-t", "c", "C-q")
        return result
    finally:
        if producer is not None and producer.poll() is None:
            producer.kill()
            producer.wait()
        screen.tmux("kill-session", "-t", "p")
        deadline = time.monotonic() + 60
        while screen.tmux("list-sessions") and time.monotonic() < deadline:
            time.sleep(0.5)
        screen.tmux("kill-server")
        reap_marked_processes(state_dir)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
