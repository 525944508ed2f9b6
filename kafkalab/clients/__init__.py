"""Producer and consumer workloads faithful to the course's apps, with payload logs and live stats.

Each runs its loop in a child process (``child_io`` and ``child_client`` are the two ends of the pipe):
``Consumer`` so that ``crash()`` is a real process death (no close, no leave-group, no final commit), as in
the course; ``Producer`` so that its librdkafka threads never take the CPU the nodes need.
"""

from kafkalab.clients.consumer import Consumer
from kafkalab.clients.options import ConsumerConfig, ProducerConfig, parse_defines
from kafkalab.clients.producer import Producer
from kafkalab.clients.stats import ClientEvent, ClientState, ConsumerStats, ProducerStats

__all__ = [
    "ClientEvent", "ClientState", "Consumer", "ConsumerConfig", "ConsumerStats", "Producer", "ProducerConfig",
    "ProducerStats", "parse_defines",
]
