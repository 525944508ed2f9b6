"""A SparkSession started once, in the background, and reused for every analysis.

Starting Spark's JVM takes seconds; the console and the lab runner create a :class:`WarmSession` early
(when they start), and by the time a run ends the session is up and its code paths are warmed by a tiny
analysis, so the report comes in about the time of the job itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kafkalab.analysis.report import SparkRun
from kafkalab.errors import KafkalabError
from kafkalab.paths import state_root

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
APP_NAME = "kafkalab-analysis"


def is_local(master: str) -> bool:
    return master.startswith("local")


def spark_conf(master: str) -> dict[str, str]:
    """Settings for a small machine: no UI, loopback only, few shuffle partitions, enough driver heap.

    On a cluster the driver binds where executors can reach it (SPARK_LOCAL_IP, or spark.driver.host
    and spark.driver.bindAddress given with --spark-conf), not to loopback.
    """
    local = is_local(master)
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4" if local else "64",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.sql.files.maxPartitionBytes": str(64 * 1024 * 1024),
        # with pruning, a line with too many or too few fields is not flagged as malformed
        "spark.sql.csv.parser.columnPruning.enabled": "false",
        "spark.driver.memory": os.environ.get("KAFKALAB_SPARK_DRIVER_MEMORY", "2g"),
        "spark.sql.session.timeZone": "UTC",
        "spark.log.level": "ERROR",
    }
    if local:
        conf |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    return conf


def default_log_path() -> Path:
    """Where Spark's JVM writes when nobody gave a file: the state root, one file per kafkalab process."""
    return state_root() / "spark" / f"spark-{os.getpid()}.log"


def start_session(master: str = DEFAULT_MASTER, extra_conf: dict[str, str] | None = None,
                  log_path: Path | None = None) -> SparkSession:
    """Start (or join) the process's SparkSession with :func:`spark_conf`, then ``extra_conf`` over it; the
    driver JVM writes to ``log_path`` (default: :func:`default_log_path`)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - pyspark is a dependency
        raise KafkalabError("pyspark is not installed; install kafkalab's dependencies (pip install -e .)") from exc
    conf = {"spark.master": master, "spark.app.name": APP_NAME} | spark_conf(master) | (extra_conf or {})
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    log = log_path or default_log_path()
    try:
        launch_driver_jvm(conf, log)
        session = builder.getOrCreate()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise KafkalabError(f"could not start Spark with master {master!r}: {first}; check Java 17+ "
                            f"is on PATH (or JAVA_HOME) and the master URL (the driver's log: {log})") from exc
    session.sparkContext.setLogLevel("ERROR")
    return session


def launch_driver_jvm(conf: dict[str, str], log: Path) -> None:
    """Start the process's driver JVM (unless it runs) with ``conf``, its output appended to ``log``:
    nothing from Spark reaches the terminal the console draws on."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(conf.items())),
                                     popen_kwargs={"stdout": out, "stderr": out})
        SparkContext._ensure_initialized(gateway=gateway)


def spark_run(session: SparkSession) -> SparkRun:
    """The master, version, executors and cores the session has now (after a job: those that ran it)."""
    sc = session.sparkContext
    master = sc.master
    assert master is not None  # set once the context runs
    if is_local(master):
        return SparkRun(master, sc.version, executors=0, cores=sc.defaultParallelism)
    jsc = sc._jsc.sc()
    # executors' block managers plus the driver's; the coarse-grained backend (standalone, YARN,
    # Kubernetes) counts the cores its executors registered with
    cores = jsc.schedulerBackend().totalCoreCount()
    return SparkRun(master, sc.version, executors=jsc.getExecutorMemoryStatus().size() - 1,
                    cores=cores if isinstance(cores, int) else cores.get())


WARM_UP_CANCEL_POLL_S = 0.2


class WarmSession:
    """A SparkSession starting in a background thread; :meth:`get` waits for it.

    ``warmup`` (default: an analysis of ``warmup_rows`` generated sends) runs once on the new session so
    the JVM has compiled the job's code paths before the first real run; local masters only, as the
    generated logs are on the driver's disk. The default size is for a
    session warming while idle (the console) before runs of any size; a session started beside a lab
    run, whose logs are small, does better with fewer rows (its report is not held up by the warm-up) and
    only the shape of query its run will ask (``warmup_shapes``: True for with an audit log). An idle
    session's warm-up goes on for ``warmup_rounds`` (Spark's optimising compiler keeps improving the job over
    several passes) while the ``go_on`` given to :meth:`start` allows.
    """

    def __init__(self, master: str = DEFAULT_MASTER, *, warmup: bool = True, warmup_rows: int = 100_000,
                 warmup_shapes: tuple[bool, ...] = (True, False), warmup_rounds: int = 1,
                 extra_conf: dict[str, str] | None = None, log_path: Path | None = None) -> None:
        self.master = master
        self.log_path = log_path
        self._warmup = warmup
        self._warmup_rows = warmup_rows
        self._warmup_shapes = warmup_shapes
        self._warmup_rounds = warmup_rounds
        self._go_on: Callable[[], bool] = lambda: True
        self._extra_conf = extra_conf
        self._ready = threading.Event()
        self._session: SparkSession | None = None
        self._warming: SparkSession | None = None  # the session while its warm-up runs
        self._stopping = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, go_on: Callable[[], bool] | None = None) -> WarmSession:
        """Begin starting Spark in the background (idempotent); returns self for chaining. ``go_on``: whether
        the warm-up may go on with its rounds after the first (see :func:`~kafkalab.analysis.warmup.warm_up`)."""
        with self._lock:
            if go_on is not None:
                self._go_on = go_on
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kafkalab-spark", daemon=True)
                self._thread.start()
        return self

    def _run(self) -> None:
        try:
            session = start_session(self.master, self._extra_conf, self.log_path)
            if self._warmup and is_local(self.master) and not self._stopping.is_set():
                self._warm(session)
            self._session = session
        except BaseException as exc:  # reported to whoever calls get()
            self._error = exc
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set() and self._error is None

    def get(self, timeout: float | None = None,
            on_wait: Callable[[], None] | None = None) -> SparkSession:
        """The session, starting it if nobody did; raises KafkalabError if it failed or timed out."""
        self.start()
        if not self._ready.is_set() and on_wait is not None:
            on_wait()
        if not self._ready.wait(timeout):
            raise KafkalabError(f"Spark did not start within {timeout:.0f} s; try again or check Java")
        if self._error is not None:
            if isinstance(self._error, KafkalabError):
                raise self._error
            raise KafkalabError(f"Spark failed to start: {self._error}") from self._error
        assert self._session is not None
        return self._session

    def cancel_analysis(self) -> None:
        """End the analysis job running on the session now, if it is up (a stopped run's)."""
        if self._session is not None:
            from kafkalab.analysis.job import cancel_analysis

            cancel_analysis(self._session)

    def _warm(self, session: SparkSession) -> None:
        from kafkalab.analysis.warmup import warm_up

        self._warming = session
        try:
            warm_up(session, self._warmup_rows, self._warmup_shapes, self._warmup_rounds,
                    lambda: self._go_on() and not self._stopping.is_set())
        except Exception:
            if not self._stopping.is_set():
                raise  # a warm-up cut short by stop() is no failure to start
        finally:
            self._warming = None

    def stop(self) -> None:
        """Stop the session once it is up. A start in progress is waited for, but not a warm-up: its job is
        cancelled (a console quit while Spark warmed on a busy machine waited minutes for the rounds to end)."""
        if self._thread is None:
            return
        self._stopping.set()
        while not self._ready.wait(WARM_UP_CANCEL_POLL_S):
            if (warming := self._warming) is not None:
                from kafkalab.analysis.job import cancel_analysis

                with contextlib.suppress(Exception):  # the job may end by itself as it is cancelled
                    cancel_analysis(warming)  # again each poll: the next pass may have begun meanwhile
        if self._session is not None:
            self._session.stop()
            self._session = None


def stop_jvm(session: SparkSession) -> None:
    """Stop the session and end the JVM this process launched for it (tests leave no JVM behind)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    session.stop()
    proc = getattr(gateway, "proc", None)
    if gateway is not None:
        gateway.shutdown()
    if proc is not None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except Exception:
            proc.kill()
    _forget_jvm()


# SIGTERM lets Spark's shutdown hooks remove its temp dirs; SIGKILL after this (they took over 5 s on 2 busy
# cores, and 1 s was not enough even on an idle machine: the end of an analysis stopped by Ctrl-C waited for it)
JVM_END_S = 0.5


class _EndedGatewayFilter(logging.Filter):
    """Drops py4j's "Exception while sending command." once kafkalab ended the JVM on purpose: a warm-up
    query still in flight then fails, and py4j logs it with a traceback on the root logger, after the result."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Exception while sending command."


def end_jvm() -> None:
    """End the driver JVM this process launched, now, and wait until it is gone (no session.stop(): a command
    ending, after a Ctrl-C say, must not wait for Spark's orderly stop, nor leave the JVM to notice its closed
    stdin a second or two after the command exited). Waits for a launch in progress first."""
    from pyspark import SparkContext

    with SparkContext._lock:  # held while the driver JVM launches: a launch under way ends here too
        gateway = SparkContext._gateway
        if gateway is None:
            return
        root = logging.getLogger()
        if not any(isinstance(f, _EndedGatewayFilter) for f in root.filters):
            root.addFilter(_EndedGatewayFilter())
        proc = getattr(gateway, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=JVM_END_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        _forget_jvm()


def _forget_jvm() -> None:
    """pyspark's own memory of the JVM just ended, gone too: the next start launches a new one (kept, the next
    run of `kafkalab run --repeat` joined the dead gateway: "Connection refused", and no analysis)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
