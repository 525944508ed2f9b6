"""A Spark standalone cluster (one master, one worker) started from the installed pyspark's jars.

On loopback and free ports; every JVM's output goes to files under the given directory; the worker runs
in its own process group, so stopping it also ends the executors it launched. Used by the standalone
test and the analysis benchmark.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pyspark

from kafkalab.cluster.ports import free_port

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


@dataclass
class Standalone:
    url: str  # spark://127.0.0.1:PORT
    master_pid: int
    worker_pid: int
    log_dir: Path


def spark_home() -> Path:
    return Path(pyspark.__file__).resolve().parent


def _env() -> dict[str, str]:
    home = spark_home()
    # the worker builds each executor's command from SPARK_HOME/jars and needs the Scala version to do it
    scala = next(home.glob("jars/scala-library-*.jar")).name.removeprefix("scala-library-").rsplit(".", 2)[0]
    return {**os.environ, "SPARK_HOME": str(home), "SPARK_SCALA_VERSION": scala, "SPARK_LOCAL_IP": "127.0.0.1"}


def _start(main: str, args: list[str], log_dir: Path, name: str) -> subprocess.Popen[bytes]:
    java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if "JAVA_HOME" in os.environ else shutil.which("java")
    assert java, "java is not on PATH"
    command = [java, "-Xmx256m", "-Dspark.master.rest.enabled=false", "-cp", f"{spark_home()}/jars/*", main, *args]
    with (log_dir / f"{name}.out").open("wb") as out, (log_dir / f"{name}.err").open("wb") as err:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=_env(),
                                start_new_session=True)


def _wait_for_log(proc: subprocess.Popen[bytes], log: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
    raise RuntimeError(f"{log.name}: no {text!r} within {timeout:.0f} s (exit {proc.poll()}):\n{tail}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the worker's shutdown hook kills its executors), then SIGKILL to the process group."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever it launched and left behind


@contextmanager
def standalone_cluster(log_dir: Path, cores: int = 1, memory: str = "1g",
                       timeout: float = 300) -> Iterator[Standalone]:
    """A master and one worker of ``cores`` and ``memory``, registered and ready; both stopped on exit."""
    log_dir.mkdir(parents=True, exist_ok=True)
    port, ui, worker_ui = free_port(), free_port(), free_port()
    with ExitStack() as stack:
        master = _start(MASTER_CLASS, ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
                        log_dir, "master")
        stack.callback(_stop, master)
        url = f"spark://127.0.0.1:{port}"
        _wait_for_log(master, log_dir / "master.err", "I have been elected leader", timeout)
        worker = _start(WORKER_CLASS, [url, "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                                       "--webui-port", str(worker_ui), "--work-dir", str(log_dir / "work")],
                        log_dir, "worker")
        stack.callback(_stop, worker)  # stopped first: callbacks run last in, first out
        _wait_for_log(worker, log_dir / "worker.err", "Successfully registered with master", timeout)
        yield Standalone(url, master.pid, worker.pid, log_dir)
