"""The bare console's default workload: the course's demo topic, one producer and one consumer on it.

A console without a lab (`kafkalab console --no-lab`) opens with the demo topic so the partition table
is alive at once; `g` starts the producer and a consumer on it, `x` stops them. No report: that is what
labs are for.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kafkalab.admin import Admin, ClusterSnapshot
from kafkalab.clients.consumer import Consumer
from kafkalab.clients.producer import Producer
from kafkalab.clients.throughput import ThroughputSampler
from kafkalab.feeds.frames import RunFrame
from kafkalab.labs.results import Phase

DEMO_TOPIC = "test-topic"  # the course's topic, which the clients' defaults use
DEMO_PARTITIONS = 6
DEMO_RF = 3
DEMO_MIN_ISR = 2
# about 500 records/s for half an hour: steady enough to watch, light on a shared machine
PRODUCER_SETTINGS = {"producer.num-rolls": "1000", "producer.num-records-per-roll": "1000",
                     "producer.wait-after-roll": "0", "producer.wait-after-send": "2"}
CONSUMER_SETTINGS = {"consumer.auto-offset-reset": "latest"}


def demo_topic_shape(brokers: int) -> tuple[int, int]:
    """(replication factor, min.insync.replicas) of the demo topic on ``brokers`` brokers."""
    rf = min(DEMO_RF, brokers)
    return rf, min(DEMO_MIN_ISR, rf)


def ensure_demo_topic(admin: Admin, brokers: int) -> str:
    """Create the demo topic unless it exists; returns what was done, for the status line."""
    rf, min_isr = demo_topic_shape(brokers)
    if DEMO_TOPIC in admin.topics():
        return f"topic {DEMO_TOPIC} is there"
    admin.create_topic(DEMO_TOPIC, DEMO_PARTITIONS, rf, {"min.insync.replicas": str(min_isr)}, timeout_s=30,
                       brokers_up=brokers)
    return f"created {DEMO_TOPIC}: {DEMO_PARTITIONS} partitions, RF {rf}, min.insync.replicas {min_isr}"


def waiting_for(snapshot: ClusterSnapshot | None, topic: str = DEMO_TOPIC) -> str:
    """What a producer with acks=all on ``topic`` waits for now, e.g. 'waiting for 2 in-sync replicas of
    test-topic/2: broker 2 down' ('' when nothing holds it up)."""
    if snapshot is None or not snapshot.reachable:
        return "waiting for the brokers to answer"
    for p in snapshot.partitions:
        if p.topic != topic:
            continue
        down = sorted(r for r in p.replicas if r not in snapshot.brokers)  # "brokers 1, 2", not replica order
        why = (f": broker {down[0]} down" if len(down) == 1 else
               f": brokers {', '.join(map(str, down))} down" if down else "")
        if p.leader is None:
            return f"waiting for a leader of {topic}/{p.partition}{why}"
        if p.min_isr is not None and len(p.isr) < p.min_isr:
            return f"waiting for {p.min_isr} in-sync replicas of {topic}/{p.partition}{why}"
    return ""


class Workload:
    """One producer and one consumer on the demo topic, started and stopped by the console's keys."""

    def __init__(self, log_root: Path) -> None:
        self.log_root = log_root
        self._lock = threading.Lock()
        self._producer: Producer | None = None
        self._consumer: Consumer | None = None
        self._throughput = ThroughputSampler()
        self._started = 0.0

    @property
    def live(self) -> bool:
        return self._producer is not None and self._producer.running

    def start(self, bootstrap: str) -> None:
        with self._lock:
            if self.live:
                raise RuntimeError("the workload is already running: x stops it")
            self.stop_clients()
            run_id = time.strftime("workload-%Y%m%d-%H%M%S")
            log_dir = self.log_root / run_id
            log_dir.mkdir(parents=True, exist_ok=True)
            self._consumer = Consumer(CONSUMER_SETTINGS, log_dir, bootstrap=bootstrap)
            self._producer = Producer(PRODUCER_SETTINGS, log_dir, run_id, bootstrap=bootstrap)
            self._consumer.start()
            self._producer.start()
            self._throughput.clear()
            self._started = time.monotonic()

    def stop(self) -> None:
        with self._lock:
            self.stop_clients()

    def stop_clients(self) -> None:
        if self._producer is not None and self._producer.running:
            self._producer.stop(drain=False)
            self._producer.join(15)
        if self._consumer is not None and self._consumer.running:
            self._consumer.stop()
            self._consumer.join(10)

    def frame(self) -> RunFrame:
        producer = self._producer.stats() if self._producer else None
        consumers = (self._consumer.stats(),) if self._consumer else ()
        if producer is not None and self.live:
            self._throughput.add(time.monotonic() - self._started, producer.acked)
        phase = Phase.RUNNING if self.live else Phase.STOPPED if producer is not None else Phase.IDLE
        return RunFrame(live=self.live, phase=phase, producer=producer, consumers=consumers,
                        throughput=self._throughput.points, settings=PRODUCER_SETTINGS)
