"""Free ports come from below the kernel's ephemeral range, where no ``bind(0)`` can take them first."""

from __future__ import annotations

import socket

from kafkalab.cluster.ports import ephemeral_range, free_port


def test_free_ports_are_outside_the_ephemeral_range_and_bindable() -> None:
    low, high = ephemeral_range()
    ports = {free_port() for _ in range(50)}
    assert len(ports) > 40  # picked at random, not one port again and again
    for port in ports:
        assert not low <= port <= high, (port, low, high)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", ports.pop()))


def test_a_port_the_kernel_gives_to_bind_0_is_never_a_free_port_pick() -> None:
    """The CI failure: Spark's accumulator server bound port 0 and got the port a broker was to take."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        kernels = taken.getsockname()[1]
        assert all(free_port() != kernels for _ in range(200))
