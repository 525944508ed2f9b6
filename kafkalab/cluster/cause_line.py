"""The line of a node's log that names why it failed: what a failed node's pane and a run's error quote.

Kafka logs why it exits in two lines: its own ERROR line ("Exiting Kafka due to fatal exception"), then the
exception it caught ("org.apache.kafka.common.config.ConfigException: Invalid value one for configuration
offsets.topic.replication.factor: Not a number of type SHORT") and its stack. The first says only that it
failed; the second says why, so it is the one quoted, its classes without their packages.
"""

from __future__ import annotations

import re

PROBLEM = re.compile(r"\] (ERROR|FATAL) |^Error|Exception in thread|OutOfMemoryError")
# a throwable's first line as log4j prints it under the message logged with it: a class name, then its message
THROWABLE = re.compile(r"(?:[a-z_]\w*\.)+[A-Z][\w$]*(?::|$)")
JAVA_CLASS = re.compile(r"\b(?:[a-z_]\w*\.)+([A-Z]\w*)")


def cause_line(log: str) -> str:
    """The exception under the log's last problem line (ERROR, FATAL, a JVM's own error) when it has one, else
    that line itself; "" when nothing went wrong."""
    lines = log.splitlines()
    for at in range(len(lines) - 1, -1, -1):
        if PROBLEM.search(lines[at]):
            below = lines[at + 1] if at + 1 < len(lines) else ""
            return without_packages(below.strip()) if THROWABLE.match(below) else lines[at].strip()
    return ""


def without_packages(text: str) -> str:
    """Java class names without their packages ("org.apache.kafka.common.config.ConfigException" filled a pane
    with the package name)."""
    return JAVA_CLASS.sub(r"\1", text)
