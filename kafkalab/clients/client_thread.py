"""ClientThread: the thread a client works in, as its caller sees it: started once, joined, running."""

from __future__ import annotations

import threading
from collections.abc import Callable


class ClientThread:
    """Base of the producer (its send loop) and the consumer (its reader of the child's reports)."""

    _thread: threading.Thread | None = None

    def _start_thread(self, target: Callable[[], None], name: str) -> None:
        self._thread = threading.Thread(target=target, name=f"kafkalab-{name}", daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the thread has ended (a consumer's: its process ended and its last report read);
        True when it has."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()
