"""A run directory's payload logs, of both formats: what the lab runner and ``kafkalab diff RUN_DIR`` analyse.

kafkalab's own clients write ``producer*.csv`` and ``consumer*.csv`` (or their ``.partial``) in the run
directory; a foreign client (the course's Java apps) runs in a directory of its own inside it,
``producer/`` or ``consumer-N/``, and writes ``payload.log`` or ``payload-LOCALID.log`` there. The audit is
kafkalab's ``audit*.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafkalab.clients.payload_log import log_files
from kafkalab.logformat import COURSE_LOG_GLOBS


@dataclass(frozen=True)
class RunLogs:
    producer: list[Path]
    consumer: list[Path]
    audit: list[Path]


def run_logs(run_dir: Path) -> RunLogs:
    """Every producer, consumer and audit log of ``run_dir``, kafkalab's first, each kind sorted."""
    return RunLogs([*log_files(run_dir, "producer"), *course_logs(run_dir, "producer")],
                   [*log_files(run_dir, "consumer"), *course_logs(run_dir, "consumer")],
                   log_files(run_dir, "audit"))


def course_logs(run_dir: Path, role: str) -> list[Path]:
    """The course-format payload logs in ``run_dir``'s directories of ``role`` (``producer/``, ``consumer-2/``).
    An empty one is left out: a course log has no header, so empty is a client that logged no record (a consumer
    that got nothing), not a broken file, and it adds nothing to count."""
    dirs = sorted(d for d in run_dir.glob(f"{role}*") if d.is_dir())
    found = sorted({p for d in dirs for pattern in COURSE_LOG_GLOBS for p in d.glob(pattern)})
    return [log for log in found if log.stat().st_size > 0]
