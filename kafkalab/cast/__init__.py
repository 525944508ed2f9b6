"""Terminal recordings: asciicast v2 files of what a terminal was sent, made by running kafkalab in a pty."""

from kafkalab.cast.asciicast import CastWriter, read_cast
from kafkalab.cast.pty_session import record_headless, record_interactive

__all__ = ["CastWriter", "read_cast", "record_headless", "record_interactive"]
