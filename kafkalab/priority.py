"""The CPU priority of kafkalab's background processes: the nodes' JVMs and the producer.

On a laptop's two cores four busy JVMs, or a producer whose librdkafka threads busy-poll (seen with
``linger.ms=0`` and a full in-flight window), would otherwise take the console's and the other processes'
turns. Niced they still get every cycle nobody else wants.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

BACKGROUND_NICE = 5
"""How much lower the background processes' priority is than kafkalab's."""


def nice_prefix() -> list[str]:
    """What goes before a background command to run it niced (empty where ``nice`` is missing)."""
    nice = shutil.which("nice")
    return [nice, "-n", str(BACKGROUND_NICE)] if nice else []


def lower_autogroup_priority(pid: int) -> None:
    """Give a background process's session the niceness its process has (Linux, best effort).

    With the kernel's session autogroups (``kernel.sched_autogroup_enabled``) a session leader is scheduled
    as a group of its own against kafkalab's, and only the group's niceness counts there. Unprivileged
    writes are rate-limited to one per 100 ms across the machine: hence the retries.
    """
    path = Path(f"/proc/{pid}/autogroup")
    if not path.exists():
        return
    for _ in range(3):
        try:
            path.write_text(str(BACKGROUND_NICE))
            return
        except BlockingIOError:  # EAGAIN: another write within the last 100 ms
            time.sleep(0.11)
        except OSError:  # the process already ended, or the kernel refuses: it runs unniced
            return
