"""`kafkalab diff` on logs that are no payload logs, through the real command: one line naming the file and what is
wrong, never the file's bytes, exit 2, before Spark starts."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

from kafkalab.logformat import CONSUMER_COLUMNS, PRODUCER_COLUMNS

ERROR = "kafkalab: error: "
# a gzip header, bytes that are no UTF-8, a NUL, a terminal escape: what a wrong file given as a log looks like
BINARY = b"\x1f\x8b\x08\x00\xde\xad\xbe\xef\x00\x03\x1b[2J\xff\xfe\x00\x00BINARYMARK\n" + bytes(range(256))


def consumer_log(path: Path) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(CONSUMER_COLUMNS)
        writer.writerow(("r1:producer:0", "consumer-1", "test-topic", 0, 0, "k0", 0, 1700000000000, "v0", "g"))
    return path


def producer_log(path: Path, rows: int) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(PRODUCER_COLUMNS)
        for seq in range(rows):
            writer.writerow((f"r1:producer:{seq}", seq, "test-topic", 0, seq, f"k{seq}", "acked", "",
                             1700000000000 + seq, f"v{seq}"))
    return path


def diff_error(*args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "kafkalab", "diff", *args], capture_output=True, timeout=120,
                            env={**os.environ, "COLUMNS": "100"})
    stdout, stderr = result.stdout.decode(errors="replace"), result.stderr.decode(errors="replace")
    assert result.returncode == 2, stdout + stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), stderr
    assert b"BINARYMARK" not in result.stderr + result.stdout and "\ufffd" not in stderr
    assert not any(c in stderr for c in "\x00\x1b\x1f\x8b")  # no byte of the file reaches the terminal
    return lines[0]


def test_a_binary_file_is_no_payload_log_and_its_bytes_are_not_shown(tmp_path: Path) -> None:
    binary = tmp_path / "capture.bin"
    binary.write_bytes(BINARY)
    consumer = consumer_log(tmp_path / "consumer-1.csv")
    line = diff_error("--producer", str(binary), "--consumer", str(consumer))
    assert f"producer log {binary} is not a payload log" in line and "not text" in line
    line = diff_error("--producer", str(producer_log(tmp_path / "producer.csv", 3)), "--consumer", str(binary))
    assert f"consumer log {binary} is not a payload log" in line


def test_a_producer_log_with_only_its_header_is_bad_input(tmp_path: Path) -> None:
    """Nothing sent: every record the consumers got would be blamed on 'leftovers in the topic'; say so instead."""
    empty = producer_log(tmp_path / "producer.csv", 0)
    line = diff_error("--producer", str(empty), "--consumer", str(consumer_log(tmp_path / "consumer-1.csv")))
    assert f"producer log {empty} holds no record, only the header" in line and "leftovers" not in line
