"""The short fix exercises graded on a real cluster, one run each way: the lab as shipped (no change) must
FAIL on the row that shows its break, the reference solution must PASS, and no process may outlive a run.

benchmarks/bench_fix.py grades every fix exercise, wrong fixes included, with more runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from kafkalab.labs.fix import Change
from kafkalab.labs.fix_attempt import FixAttempt
from kafkalab.labs.grade import Grade, read_grade
from kafkalab.labs.loader import find_lab, load_lab
from kafkalab.labs.run import PortChoice
from kafkalab.labs.runner import HeadlessRun
from tests.test_labs_cluster import leftovers

pytestmark = pytest.mark.cluster

# a short fix lab of the catalog (20-40 s a run on a quiet machine), and the row its break fails as shipped
# (others may fail too); acks-0 is graded both ways through the real command in test_fix_cli_cluster, an
# incident in test_incident_labs, and every fix exercise by benchmarks/bench_fix.py
SHORT = {"rf2-acks-0": "lost == 0"}


def graded_once(lab_id: str, changes: Sequence[Change] | None, runs: Path) -> Grade:
    lab = load_lab(find_lab(lab_id))
    assert lab.fix is not None
    attempt = FixAttempt(lab, lab.fix.solution if changes is None else changes, "test", runs=1)
    result = HeadlessRun(attempt.lab, runs, Console(quiet=True), seed=attempt.seeds[0],
                         ports=PortChoice.picked(attempt.lab)).run()
    grade = attempt.grade([result])
    assert read_grade(result.run_dir / "grade.json").passed == grade.passed
    assert leftovers(runs) == []
    return grade


@pytest.mark.parametrize("lab_id", sorted(SHORT))
def test_shipped_fails_on_its_break_and_the_solution_passes(lab_id: str, tmp_path: Path) -> None:
    shipped = graded_once(lab_id, [], tmp_path / "shipped")
    assert not shipped.passed
    assert SHORT[lab_id] in [r.text for r in shipped.rows if not r.passed], shipped.rows
    solved = graded_once(lab_id, None, tmp_path / "solved")
    assert solved.passed, [r for r in solved.rows if not r.passed]
    assert solved.score == 100 and solved.rules  # a rule names what the solution changed
