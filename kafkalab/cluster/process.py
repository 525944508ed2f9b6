"""How a node's JVM runs: the backend protocol and the local (child process) backend.

A backend launches a node's command line and hands back a :class:`NodeProcess` with the controls the
labs need. The local backend runs the JVM as a child process; the docker backend runs it in a container.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

import psutil

from kafkalab.priority import lower_autogroup_priority, nice_prefix

NODE_MARKER_PROPERTY = "kafkalab.node"


def node_marker(state_dir: Path, node_name: str) -> str:
    """A JVM system property naming the node's state dir: proof that a process is that dir's node."""
    return f"-D{NODE_MARKER_PROPERTY}={state_dir / node_name}"


class NodeProcess(Protocol):
    """A running (or exited) node. Every method returns at once."""

    @property
    def pid(self) -> int | None: ...

    def poll(self) -> int | None:
        """The exit code once the node has exited, else None."""

    def terminate(self) -> None:
        """SIGTERM: Kafka's shutdown hook runs a controlled shutdown."""

    def kill(self) -> None:
        """SIGKILL."""

    def pause(self) -> None:
        """SIGSTOP (or the backend's freeze)."""

    def resume(self) -> None:
        """SIGCONT (or the backend's thaw)."""

    def usage(self) -> tuple[float, int]:
        """CPU percent since the last call, and resident memory in bytes."""


class Backend(Protocol):
    name: str

    def launch(self, node_name: str, argv: list[str], stdout_path: Path) -> NodeProcess: ...

    def reap(self, state_dir: Path) -> list[str]:
        """End leftover nodes of ``state_dir`` from a crashed run; return what was ended."""

    def net_proxies_refused(self) -> str | None:
        """Why the network-fault proxy could not tell this backend's nodes apart (a clause), or None when it can.

        The proxy knows a connection's source by the process owning the connecting socket
        (:mod:`kafkalab.netfaults.sources`): the nodes' processes must be on this host, in its network
        namespace, and readable by this user."""

    def close(self) -> None: ...


class LocalProcess:
    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self._ps: psutil.Process | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self._popen.pid

    def poll(self) -> int | None:
        with self._lock:
            return self._popen.poll()

    def _signal(self, sig: signal.Signals) -> None:
        with self._lock:
            if self._popen.poll() is None:
                self._popen.send_signal(sig)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    def usage(self) -> tuple[float, int]:
        try:
            if self._ps is None:
                self._ps = psutil.Process(self._popen.pid)
            with self._ps.oneshot():
                return self._ps.cpu_percent(None), self._ps.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return 0.0, 0


class LocalBackend:
    """JVMs as child processes of this process.

    Children are launched from one long-lived thread with a parent-death signal (Linux), so they die
    with kafkalab even when it is SIGKILLed; the pid file and :meth:`reap` cover the rest.
    """

    name = "local"
    _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafkalab-spawner")

    def launch(self, node_name: str, argv: list[str], stdout_path: Path) -> NodeProcess:
        prefix = supervised_prefix()

        def spawn() -> subprocess.Popen[bytes]:
            with open(stdout_path, "ab") as out:
                return subprocess.Popen(
                    prefix + argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # Ctrl-C in the terminal reaches kafkalab, which stops nodes in order
                    env={**os.environ, "LC_ALL": "C"},
                )

        popen = self._spawner.submit(spawn).result()
        lower_autogroup_priority(popen.pid)
        return LocalProcess(popen)

    def reap(self, state_dir: Path) -> list[str]:
        return reap_marked_processes(state_dir)

    def net_proxies_refused(self) -> str | None:
        return None  # its own children: always visible to the proxy

    def close(self) -> None:
        pass


def supervised_prefix() -> list[str]:
    """What goes before a child JVM's command: die with kafkalab (Linux), run niced."""
    prefix: list[str] = []
    setpriv = shutil.which("setpriv")
    if sys.platform.startswith("linux") and setpriv:
        prefix = [setpriv, "--pdeathsig", "KILL", "--"]
    return prefix + nice_prefix()


def marked_processes(state_dir: Path) -> list[psutil.Process]:
    """Processes whose command line carries a node marker of ``state_dir``."""
    prefix = f"-D{NODE_MARKER_PROPERTY}={state_dir}/"
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if any(arg.startswith(prefix) for arg in cmdline):
            found.append(proc)
    return found


def reap_marked_processes(state_dir: Path) -> list[str]:
    ended = []
    procs = marked_processes(state_dir)
    for proc in procs:
        try:
            proc.kill()
            ended.append(f"pid {proc.pid}")
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(procs, timeout=10)
    return ended
