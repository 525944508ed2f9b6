"""The docker backend: one container per node, driven through the Docker engine API.

Containers use the host's network and the same paths as the local backend: the Kafka jars are mounted
read-only and each node's dir read-write at their host paths, so the generated configs, data and logs are
the very files the local backend would use. Containers carry labels naming their state dir; :meth:`reap`
removes those of one state dir and nothing else.

KRaft mode needs nothing more of the image: the host prepares each node's dir before its container starts
(configs, and the storage formatted by the host's java from the same jars, as for the local backend), and
the quorum view's helper JVM runs on the host, a client of the controllers' loopback ports like the admin
client. :meth:`reap` ends that helper too (it carries the state dir's node marker).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import LogConfig
from requests.exceptions import RequestException

from kafkalab.cluster.process import NODE_MARKER_PROPERTY, NodeProcess, reap_marked_processes
from kafkalab.errors import KafkalabError

LABEL_STATE_DIR = "kafkalab.state_dir"
LABEL_NODE = "kafkalab.node"
DEFAULT_SOCKET = "unix:///var/run/docker.sock"
EXIT_NOT_STARTED = 125  # what `docker run` returns when the engine could not start the container


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET


def connect_engine(timeout: int = 60) -> docker.DockerClient:
    """A client of the engine at $DOCKER_HOST (or the default socket), checked with a ping."""
    try:
        client = docker.from_env(timeout=timeout, max_pool_size=32)
        client.ping()
    except (DockerException, RequestException) as exc:
        raise KafkalabError(
            f"Docker engine not reachable at {engine_address()}: start Docker or use --backend local"
        ) from exc
    return client


def require_image(client: docker.DockerClient, image: str) -> None:
    try:
        client.images.get(image)
    except ImageNotFound:
        raise KafkalabError(
            f"image {image} not found in the Docker engine: run `kafkalab docker build-image` "
            f"(or `docker pull {image}` for a registry image)"
        ) from None


def container_name(state_dir: Path, node_name: str) -> str:
    digest = hashlib.sha1(str(state_dir).encode()).hexdigest()[:10]
    return f"kafkalab-{digest}-{node_name}"


def node_dir_of(argv: list[str]) -> Path:
    """The node dir named by the node marker in ``argv`` (see :func:`kafkalab.cluster.process.node_marker`)."""
    prefix = f"-D{NODE_MARKER_PROPERTY}="
    for arg in argv:
        if arg.startswith(prefix):
            return Path(arg.removeprefix(prefix))
    raise ValueError(f"no {prefix}... node marker in the command line")


def classpath_dirs(argv: list[str]) -> list[Path]:
    """The directories of the -cp entries ('libs/*' -> libs)."""
    if "-cp" not in argv:
        return []
    entries = argv[argv.index("-cp") + 1].split(os.pathsep)
    return sorted({Path(e.removesuffix("*")) if e.endswith("*") else Path(e).parent for e in entries if e})


def bind_mounts(argv: list[str]) -> dict[str, dict[str, str]]:
    """The jars read-only and the node dir read-write, each at its host path."""
    mounts = {str(d): {"bind": str(d), "mode": "ro"} for d in classpath_dirs(argv)}
    node_dir = node_dir_of(argv)
    mounts[str(node_dir)] = {"bind": str(node_dir), "mode": "rw"}
    return mounts


_STATE_MISMATCH = ("is not running", "is not paused", "is already paused", "is paused")


def _ignore_gone(exc: APIError) -> None:
    """A control sent to a container that has exited (or is not paused) is a no-op, as a signal would be.

    Engines answer such a request with 404, 409 or (20.10 for unpause) 500 and a message.
    """
    if isinstance(exc, NotFound) or exc.status_code == 409 or any(m in str(exc.explanation) for m in _STATE_MISMATCH):
        return
    raise exc


class DockerProcess:
    """A node's container. One thread copies its log stream to the stdout file, then collects the exit code."""

    def __init__(self, container: Container, stdout_path: Path) -> None:
        self._container = container
        self._pid: int | None = container.attrs.get("State", {}).get("Pid") or None
        self._exit_code: int | None = None
        self._usage: tuple[float, int] = (0.0, 0)
        for target, args in ((self._follow, (stdout_path,)), (self._sample, ())):
            threading.Thread(target=target, args=args, name=f"kafkalab-{container.name}", daemon=True).start()

    @property
    def name(self) -> str:
        return str(self._container.name)

    def _follow(self, stdout_path: Path) -> None:
        try:
            with open(stdout_path, "ab") as out:
                for chunk in self._container.logs(stream=True, follow=True):
                    out.write(chunk)
                    out.flush()
        except (DockerException, RequestException, OSError):
            pass  # the exit code below still comes
        try:
            code = int(self._container.wait()["StatusCode"])
        except (DockerException, RequestException):
            code = -9  # removed under us (reap): it did not exit by itself
        with contextlib.suppress(DockerException, RequestException):  # reap may have removed it already
            self._container.remove(force=True)
        self._exit_code = code

    @property
    def pid(self) -> int | None:
        return self._pid

    def poll(self) -> int | None:
        return self._exit_code

    def _control(self, call: Callable[[Container], object]) -> None:
        """``call(container)`` unless the container is gone (already gone is no error)."""
        if self._exit_code is not None:
            return
        try:
            call(self._container)
        except APIError as exc:
            _ignore_gone(exc)

    def terminate(self) -> None:
        """What `docker stop` sends first; the node's stop bound escalates to :meth:`kill`.

        The engine delivers it to a paused container by unpausing it.
        """
        self._control(lambda c: c.kill(signal="SIGTERM"))

    def kill(self) -> None:
        self._control(lambda c: c.kill(signal="SIGKILL"))

    def pause(self) -> None:
        self._control(lambda c: c.pause())

    def resume(self) -> None:
        self._control(lambda c: c.unpause())

    def _sample(self) -> None:
        """Keep the latest sample of the engine's stats stream (one a second) for :meth:`usage`."""
        try:
            samples = self._container.stats(stream=True, decode=True)
            assert not isinstance(samples, dict)  # one dict only when stream=False
            for stats in samples:
                self._usage = cpu_percent(stats), memory_in_use(stats.get("memory_stats") or {})
        except (DockerException, RequestException):
            pass  # the container is gone
        self._usage = (0.0, 0)

    def usage(self) -> tuple[float, int]:
        """CPU percent over the last second and memory less page cache, as `docker stats` shows them."""
        return self._usage if self._exit_code is None else (0.0, 0)


def cpu_percent(stats: dict[str, Any]) -> float:
    """CPU use between the sample and the one before it, in percent of one CPU (as `docker stats`)."""
    now, before = stats.get("cpu_stats") or {}, stats.get("precpu_stats") or {}
    used = (now.get("cpu_usage") or {}).get("total_usage", 0) - (before.get("cpu_usage") or {}).get("total_usage", 0)
    elapsed = now.get("system_cpu_usage", 0) - before.get("system_cpu_usage", 0)
    cpus = now.get("online_cpus") or len((now.get("cpu_usage") or {}).get("percpu_usage") or []) or 1
    return max(0.0, used / elapsed * cpus * 100.0) if elapsed > 0 and before.get("system_cpu_usage") else 0.0


def memory_in_use(memory: dict[str, Any]) -> int:
    """Usage less inactive page cache, as `docker stats` shows it (cgroup v1 and v2 field names)."""
    stats = memory.get("stats") or {}
    cache = stats.get("total_inactive_file", stats.get("inactive_file", 0))
    return max(0, int(memory.get("usage") or 0) - int(cache or 0))


class NotStarted:
    """A launch the engine refused: exits at once; the reason is in the node's stdout file."""

    pid = None

    def poll(self) -> int | None:
        return EXIT_NOT_STARTED

    def terminate(self) -> None:
        pass

    kill = pause = resume = terminate

    def usage(self) -> tuple[float, int]:
        return 0.0, 0


def net_proxies_refused_by(client: docker.DockerClient) -> str | None:
    """Why the network-fault proxy could not see into this engine's containers, or None.

    A rootful engine on this Linux host, running the containers as this user on the host network, leaves their
    JVMs visible to the proxy: host pids, this network namespace, this user's open files. Not a remote engine,
    a rootless one (its own network namespace and user ids) or Docker Desktop (a VM)."""
    address = engine_address()
    if sys.platform != "linux":
        return "Docker Desktop runs the containers in a virtual machine"
    if not address.startswith("unix://"):
        return f"the engine at {address} is not on this machine"
    try:
        security = client.info().get("SecurityOptions") or []
    except (DockerException, RequestException):
        security = []  # the engine answered a ping a moment ago: a launch says what is wrong
    if any("rootless" in str(option) for option in security):
        return "a rootless engine runs the containers in its own network namespace"
    return None


class DockerBackend:
    """Runs each node's command line in a container of ``image`` (a Java 17 runtime with `java` on PATH)."""

    name = "docker"

    def __init__(self, image: str, client: docker.DockerClient | None = None) -> None:
        self.image = image
        self._client = client or connect_engine()
        require_image(self._client, image)

    def launch(self, node_name: str, argv: list[str], stdout_path: Path) -> NodeProcess:
        node_dir = node_dir_of(argv)
        state_dir = node_dir.parent
        name = container_name(state_dir, node_name)
        try:
            self._remove(name)  # an exited one left by the previous start of this node
            container = self._client.containers.create(
                self.image, command=argv, name=name, detach=True, network_mode="host",
                user=f"{os.getuid()}:{os.getgid()}", working_dir=str(node_dir), environment={"LC_ALL": "C"},
                volumes=bind_mounts(argv), labels={LABEL_STATE_DIR: str(state_dir), LABEL_NODE: node_name},
                log_config=LogConfig(type="json-file", config={"max-size": "10m", "max-file": "2"}),
            )
            container.start()
            container.reload()
        except (DockerException, RequestException) as exc:
            with open(stdout_path, "a") as out:
                out.write(f"Error: the Docker engine could not start {name}: {exc}\n")
            return NotStarted()
        return DockerProcess(container, stdout_path)

    def _remove(self, name: str) -> None:
        with contextlib.suppress(NotFound):
            self._client.containers.get(name).remove(force=True)

    def containers(self, state_dir: Path) -> list[Container]:
        return list(self._client.containers.list(all=True, filters={"label": f"{LABEL_STATE_DIR}={state_dir}"}))

    def reap(self, state_dir: Path) -> list[str]:
        ended = []
        for container in self.containers(state_dir):
            try:
                container.remove(force=True)
                ended.append(f"container {container.name}")
            except NotFound:
                continue  # its own follower removed it meanwhile
            except APIError as exc:
                _ignore_gone(exc)
        return ended + reap_marked_processes(state_dir)  # the quorum helper (KRaft), a host JVM

    def net_proxies_refused(self) -> str | None:
        return net_proxies_refused_by(self._client)

    def close(self) -> None:
        self._client.close()
