"""The client commands' error paths that need no cluster: one line on stderr, exit 2, no log left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafkalab.cli import main
from kafkalab.cluster.ports import free_port

KAFKALAB = [sys.executable, "-m", "kafkalab"]


@pytest.mark.parametrize(("defines", "message"), [
    (["producer.ackz=1"], "unknown option producer.ackz (did you mean producer.acks?)"),
    (["producer.acks=2"], "producer.acks=2 is not one of 0, 1, all, -1"),
    (["producer.num-records-per-roll=-3"], "producer.num-records-per-roll=-3 is out of range: give 1..2147483647"),
])
def test_cli_bad_options_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        defines: list[str], message: str) -> None:
    code = main(["produce", "--log-dir", str(tmp_path), *(a for d in defines for a in ("-D", d))])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("kafkalab: error: ")
    assert message in err
    assert not any(tmp_path.rglob("*.csv*"))


def test_cli_unreachable_cluster_one_line_exit_2_no_log(tmp_path: Path) -> None:
    for command in ("produce", "consume"):
        out = subprocess.run([*KAFKALAB, command, "-D", f"bootstrap.server=127.0.0.1:{free_port()}"],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot reach the Kafka cluster" in lines[0]
        assert not any(tmp_path.rglob("*.csv*"))
