"""kafkalab's own Python children import the kafkalab their parent runs, wherever the console was started."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafkalab.child_python import python_module


def test_a_kafkalab_folder_in_the_working_directory_never_shadows_the_childs_kafkalab(tmp_path: Path) -> None:
    """Found with an installed wheel run from a checkout of the repository: every client's child imported the
    checkout's kafkalab/ (the working directory comes first on ``python -m``'s path), which has no _assets, and
    the run failed with "consumer-1 ended before it got partitions: ModuleNotFoundError"."""
    (tmp_path / "kafkalab").mkdir()
    (tmp_path / "kafkalab" / "__init__.py").write_text("raise ImportError('the working directory shadowed kafkalab')")
    done = subprocess.run(python_module("kafkalab.child_python"), cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
