"""The one SparkSession the analysis tests share (local[2], two shuffle partitions), JVM ended after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kafkalab.analysis.spark_session import start_session, stop_jvm


@pytest.fixture(scope="session", name="spark")
def spark_fixture() -> Iterator[object]:
    session = start_session("local[2]", {"spark.sql.shuffle.partitions": "2"})
    yield session
    stop_jvm(session)
