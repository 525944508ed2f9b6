"""The truncations of a running cluster's life, for `kafkalab cluster status` and `kafkalab net status`: after
`net heal` a zombie leader cuts off what it acknowledged alone, and only its ``server.log`` said so."""

from __future__ import annotations

import time
from pathlib import Path

from kafkalab.cluster.control_socket import SPEC_FILE
from kafkalab.cluster.truncations import Truncation, logged_truncations

HEADING = "truncated records (the brokers' logs, since the cluster started):"


def cluster_truncations(state_dir: Path) -> list[Truncation]:
    """The truncations that removed records since the cluster in ``state_dir`` started (its ``cluster.json`` is
    written as it starts: an earlier cluster's lines in the same logs are not this one's)."""
    try:
        started = (state_dir / SPEC_FILE).stat().st_mtime
    except OSError:
        return []
    return logged_truncations(state_dir, started)


def truncation_lines(truncations: list[Truncation]) -> list[str]:
    """One line per truncation, with the time its broker logged it (local time, as the log has it)."""
    return [f"{time.strftime('%H:%M:%S', time.localtime(t.ts))} {t.said()}" for t in truncations]
