"""One driver per state dir: a lock, a pid file of the nodes, and a registry of running clusters."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil

from kafkalab.errors import KafkalabError
from kafkalab.paths import state_root

LOCK_FILE = "kafkalab.lock"
PID_FILE = "nodes.pid.json"


class StateDirLock:
    """An exclusive flock on the state dir, held for as long as this process drives the cluster."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise KafkalabError(
                f"cannot use state dir {self.state_dir}: {exc.strerror}: pick another --state-dir"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise KafkalabError(
                f"state dir {self.state_dir} is already driven by kafkalab pid {holder}: "
                "use that one, or `kafkalab cluster down`"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        _register(self.state_dir)

    def release(self) -> None:
        if self._fd is not None:
            _unregister(self.state_dir)
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def is_driven(state_dir: Path) -> bool:
    """True when some process holds the state dir's lock."""
    path = state_dir / LOCK_FILE
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def write_pid_file(state_dir: Path, pids: dict[str, int | None]) -> None:
    """Record the node pids (none: nothing runs); a state dir already removed has nothing to record."""
    if not pids and not state_dir.is_dir():
        return
    tmp = state_dir / (PID_FILE + ".tmp")
    tmp.write_text(json.dumps({"driver": os.getpid(), "nodes": pids}))
    tmp.replace(state_dir / PID_FILE)


def _registry_dir() -> Path:
    return state_root() / "running"


def _registry_entry(state_dir: Path) -> Path:
    """This process's entry for ``state_dir`` (a process may drive several clusters: one entry each)."""
    key = hashlib.sha1(str(state_dir).encode()).hexdigest()[:12]
    return _registry_dir() / f"{os.getpid()}-{key}.json"


def _register(state_dir: Path) -> None:
    claim_ports(state_dir, [])  # no ports yet: they are chosen after the state dir is locked


def _unregister(state_dir: Path) -> None:
    _registry_entry(state_dir).unlink(missing_ok=True)


def _live_entries() -> list[tuple[Path, dict[str, object]]]:
    found: list[tuple[Path, dict[str, object]]] = []
    for entry in sorted(_registry_dir().glob("*.json")) if _registry_dir().is_dir() else []:
        try:
            pid = int(entry.stem.split("-")[0])
            data = json.loads(entry.read_text())
            state_dir = Path(data["state_dir"])
        except (ValueError, KeyError, OSError, json.JSONDecodeError):
            continue
        if psutil.pid_exists(pid) and is_driven(state_dir):
            found.append((state_dir, data))
        else:
            entry.unlink(missing_ok=True)
    return found


def running_state_dirs() -> list[Path]:
    """State dirs of clusters that a live kafkalab process drives right now."""
    return [state_dir for state_dir, _ in _live_entries()]


@contextmanager
def port_claims(state_dir: Path) -> Iterator[dict[int, Path]]:
    """The ports other live kafkalab clusters claimed (port -> their state dir), under a machine-wide lock.

    Two clusters starting in the same second both find a port free before either JVM binds it; while
    this lock is held the caller picks its ports and records them with :func:`claim_ports`.
    """
    _registry_dir().mkdir(parents=True, exist_ok=True)
    fd = os.open(_registry_dir() / "ports.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        claimed: dict[int, Path] = {}
        for other, data in _live_entries():
            ports = data.get("ports", [])
            if other != state_dir and isinstance(ports, list):
                claimed.update({int(port): other for port in ports})
        yield claimed
    finally:
        os.close(fd)


def claim_ports(state_dir: Path, ports: list[int]) -> None:
    """Record the ports this process's cluster in ``state_dir`` uses, for :func:`port_claims` elsewhere."""
    with suppress(OSError):  # the registry only helps: finding a cluster without --state-dir, port claims
        _registry_dir().mkdir(parents=True, exist_ok=True)
        _registry_entry(state_dir).write_text(json.dumps({"state_dir": str(state_dir), "ports": ports}))
