"""Ending the Spark driver JVM on purpose leaves no py4j traceback on the terminal after a run's result."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from kafkalab.analysis.spark_session import end_jvm

FORGOTTEN = ((SparkContext, "_jvm"), (SparkContext, "_active_spark_context"),
             (SparkSession, "_instantiatedSession"), (SparkSession, "_activeSession"))


def test_after_end_jvm_py4j_send_errors_are_not_printed(monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    """A warm-up query in flight when the JVM ends fails, and py4j logs it on the root logger with a traceback
    (seen after `kafkalab run`'s result); other errors still show."""
    monkeypatch.setattr(SparkContext, "_gateway", SimpleNamespace(proc=None))  # a gateway whose JVM is gone
    for owner, name in FORGOTTEN:  # end_jvm forgets the JVM: a session other tests share comes back after this one
        monkeypatch.setattr(owner, name, getattr(owner, name))
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


def test_a_session_started_after_end_jvm_gets_a_new_jvm() -> None:
    """`kafkalab run --repeat 2`: each run's end ended the JVM, and pyspark still knew its gateway, so the next run
    joined the dead one ("could not start Spark ...: Connection refused") and had no analysis. In a process of its
    own: the suite's shared session must live on."""
    script = textwrap.dedent("""
        from kafkalab.analysis.spark_session import end_jvm, start_session
        for run in range(2):
            print(run, start_session().range(3).count(), flush=True)
            end_jvm()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "3", "1", "3"]
