"""Ending the Spark driver JVM on purpose leaves no py4j traceback on the terminal after a run's result."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest
from pyspark import SparkContext

from kafkalab.analysis.spark_session import end_jvm


def test_after_end_jvm_py4j_send_errors_are_not_printed(monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    """A warm-up query in flight when the JVM ends fails, and py4j logs it on the root logger with a traceback
    (seen after `kafkalab run`'s result); other errors still show."""
    monkeypatch.setattr(SparkContext, "_gateway", SimpleNamespace(proc=None))  # a gateway whose JVM is gone
    root = logging.getLogger()
    monkeypatch.setattr(root, "filters", list(root.filters))  # the filter end_jvm adds goes with the test
    end_jvm()
    with caplog.at_level(logging.INFO):
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError:
            logging.exception("Exception while sending command.")
            logging.exception("something else went wrong")
    assert [r.getMessage() for r in caplog.records] == ["something else went wrong"]
