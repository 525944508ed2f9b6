"""group.G.distinct is read from every consumer's payload log, kafkalab's CSV and the course format a foreign
consumer writes; a foreign consumer that left no log at all was not observed (its group judges nothing)."""

from __future__ import annotations

import csv
from pathlib import Path

from kafkalab.labs import load_lab
from kafkalab.labs.measured import Unmeasured
from kafkalab.labs.metrics import group_metrics
from kafkalab.logformat import CONSUMER_COLUMNS

NO_COMMITS = Path(__file__).parent.parent / "labs" / "02-no-commits.toml"  # groups plain (1, 3), static (2, 4)


def _csv(path: Path, ids: list[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, CONSUMER_COLUMNS)
        w.writeheader()
        for i, msg_id in enumerate(ids):
            w.writerow({"msg_id": msg_id, "topic": "t", "partition": 0, "offset": i})


def test_both_formats_count_distinct_records_and_a_missing_log_is_not_observed(tmp_path: Path) -> None:
    lab = load_lab(NO_COMMITS)
    _csv(tmp_path / "consumer-1.csv", ["r:p:1", "r:p:2", "r:p:2"])
    _csv(tmp_path / "consumer.csv", ["r:p:9"])  # a tail's: no consumer of the lab
    assert group_metrics(tmp_path, lab) == {"group.plain.distinct": 2.0}

    foreign = lab.with_commands(consumer="java -jar app.jar {bootstrap} {topic}")
    (tmp_path / "consumer-2").mkdir()  # the redelivery, a control record, a value with commas
    (tmp_path / "consumer-2" / "payload-2.log").write_text(
        "t,0,1,a\nt,0,1,a\nt,1,null,b,c\nt,0,,quit\n", encoding="utf-8")
    (tmp_path / "consumer-3").mkdir()
    (tmp_path / "consumer-3" / "payload.log").write_text("t,2,7,x\n", encoding="utf-8")
    (tmp_path / "consumer-4").mkdir()  # ran, wrote nothing at all
    got = group_metrics(tmp_path, foreign)
    assert got["group.static.distinct"] == Unmeasured.NOT_OBSERVED  # consumer 4 said nothing of group static
    assert got["group.plain.distinct"] == 3.0  # consumer 1's two ids and consumer 3's record
    (tmp_path / "consumer-4" / "payload.log").write_text("", encoding="utf-8")  # it processed nothing: observed
    assert group_metrics(tmp_path, foreign)["group.static.distinct"] == 2.0
