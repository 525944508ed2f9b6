"""Which Kafka a lab runs on: `[cluster] kafka_versions`, `Lab.on(mode, version)`, `--kafka-version`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalab import KAFKA_VERSIONS
from kafkalab.cli import main
from kafkalab.cluster.spec import ClusterSpec
from kafkalab.errors import KafkalabError
from kafkalab.labs import catalog, load_lab
from kafkalab.labs.loader import find_lab
from tests.test_labs_unit import MINIMAL, error_of, write

BOTH = MINIMAL + '\n[cluster]\nmodes = ["zookeeper", "kraft"]\n'


def test_a_lab_with_kraft_runs_on_every_kafka_and_zookeeper_only_on_3x(tmp_path: Path) -> None:
    both = load_lab(write(tmp_path, BOTH)).cluster
    assert both.kafka_versions == KAFKA_VERSIONS == ("3.9.2", "4.4.0")
    assert both.platforms() == (("zookeeper", "3.9.2"), ("kraft", "3.9.2"), ("kraft", "4.4.0"))
    zk_only = load_lab(write(tmp_path, MINIMAL)).cluster
    assert zk_only.platforms() == (("zookeeper", "3.9.2"),)


def test_on_picks_what_the_other_half_implies(tmp_path: Path) -> None:
    lab = load_lab(write(tmp_path, BOTH))
    assert (lab.cluster.mode, lab.cluster.kafka_version) == ("zookeeper", "3.9.2")
    four = lab.on(version="4.4.0").cluster  # 4.x has no ZooKeeper: KRaft is implied
    assert (four.mode, four.kafka_version) == ("kraft", "4.4.0")
    kraft = lab.on("kraft").cluster  # the lab's own version where it has the mode
    assert (kraft.mode, kraft.kafka_version) == ("kraft", "3.9.2")
    with pytest.raises(KafkalabError, match=r"Kafka 4.4.0 has no ZooKeeper mode .*--mode kraft"):
        lab.on("zookeeper", "4.4.0")
    with pytest.raises(KafkalabError, match=r"runs on Kafka 3.9.2 and 4.4.0, not 3.8.0"):
        lab.on(version="3.8.0")
    four_only = load_lab(write(tmp_path, MINIMAL + '\n[cluster]\nmodes = ["kraft"]\nkafka_version = "4.4.0"\n'))
    assert four_only.cluster.kafka_versions == ("4.4.0",)
    assert four_only.on("kraft").cluster.kafka_version == "4.4.0"


@pytest.mark.parametrize(("cluster", "message"), [
    ('kafka_versions = ["4.4"]', "'4.4' is not a Kafka release"),
    ('kafka_versions = ["3.9.2", "3.9.2"]', "list each release once"),
    ('kafka_versions = ["3.9.2"]\nkafka_version = "4.4.0"', "is not among kafka_versions"),
    ('modes = ["zookeeper"]\nkafka_versions = ["4.4.0"]', "Kafka 4.4.0 has no ZooKeeper mode"),
])
def test_bad_version_keys_name_the_field(tmp_path: Path, cluster: str, message: str) -> None:
    msg = error_of(tmp_path, MINIMAL + f"\n[cluster]\n{cluster}\n")
    field = cluster.split("\n")[-1].split(" =")[0]
    assert f"cluster.{field}: " in msg and message in msg


def test_every_catalog_lab_names_the_platforms_it_runs_on() -> None:
    for path in catalog():
        lab = load_lab(path)
        assert lab.cluster.platforms(), lab.id
        for mode, version in lab.cluster.platforms():
            assert (lab.on(mode, version).cluster.mode, lab.on(mode, version).cluster.kafka_version) == (mode, version)


def test_run_refuses_zookeeper_on_kafka_4_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    lab = load_lab(find_lab("leader-failover"))
    assert ("kraft", "4.4.0") in lab.cluster.platforms()
    assert main(["run", "leader-failover", "--mode", "zookeeper", "--kafka-version", "4.4.0", "--headless"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Kafka 4.4.0 has no ZooKeeper mode" in err


def test_a_zookeeper_setting_becomes_its_kraft_equivalent(tmp_path: Path) -> None:
    """A lab's ZooKeeper session (how long a silent broker keeps its leaderships) is the KRaft broker session."""
    overrides = {"zookeeper.session.timeout.ms": "6000", "zookeeper.connection.timeout.ms": "9000"}
    zk = ClusterSpec(state_dir=tmp_path, overrides=overrides)
    assert zk.broker_settings(1)["zookeeper.session.timeout.ms"] == "6000"
    kraft = ClusterSpec(state_dir=tmp_path, overrides=overrides, mode="kraft")
    assert kraft.broker_settings(1)["broker.session.timeout.ms"] == "6000"
    assert kraft.controller_settings(kraft.controller_ids[0])["broker.session.timeout.ms"] == "6000"
    assert not any(k.startswith("zookeeper.") for k in kraft.controller_settings(kraft.controller_ids[0]))
    assert kraft.session_timeout_s == 6.0
