"""Shared fixtures: one real 3-broker cluster for the whole session, on free ports and its own state dir."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.cluster import Cluster, ClusterSpec
from kafkalab.cluster.ports import free_port
from kafkalab.cluster.process import reap_marked_processes
from kafkalab.errors import KafkalabError
from tests.session_clusters import held

TEST_STATE_ROOT = Path(tempfile.gettempdir()) / f"kafkalab-tests-{os.getpid()}"
# the suite's own state root (progress, config, the running clusters' registry), never the machine's: a lab's
# verdict hides a fix lab's cause until the attendee's progress says solved, and a developer's progress.json
# must not change what a test sees; subprocesses inherit it
os.environ["KAFKALAB_STATE"] = str(TEST_STATE_ROOT / "state")
# the docker backend's engine, image and cluster; the session clusters stopped after their last test
pytest_plugins = ["tests.docker_fixtures", "tests.session_clusters"]


def free_ports(n: int) -> list[int]:
    ports: set[int] = set()
    while len(ports) < n:
        ports.add(free_port())
    return sorted(ports)


def make_spec(name: str, brokers: int = 3, **kwargs: object) -> ClusterSpec:
    """A spec on free ports in a fresh state dir under the suite's temp root (KRaft: mode="kraft")."""
    controllers = int(kwargs.pop("controllers", 1))  # type: ignore[call-overload]
    ports = free_ports(brokers + 1 + controllers)
    return ClusterSpec(
        state_dir=TEST_STATE_ROOT / name, brokers=brokers, zk_port=ports[0], broker_ports=ports[1:brokers + 1],
        controllers=controllers, controller_ports=ports[brokers + 1:], free_ports=True,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="session")
def distribution() -> kafka_install.Distribution:
    try:
        return kafka_install.locate()
    except KafkalabError as exc:
        pytest.fail(f"{exc} (make test fetches it)")


def started(spec: ClusterSpec, distribution: kafka_install.Distribution, timeout: float,
            session_fixture: str | None = None) -> Iterator[Cluster]:
    """A started cluster, ended (SIGKILL) when the fixture using it is torn down; a session fixture's, once its
    last test is done (tests/session_clusters.py)."""
    c = Cluster(spec, distribution)
    c.start(timeout=timeout)
    try:
        yield held(session_fixture, c) if session_fixture else c
    finally:
        c.shutdown(graceful=False)


@pytest.fixture(scope="session")
def cluster(distribution: kafka_install.Distribution) -> Iterator[Cluster]:
    """ZooKeeper + 3 brokers, shared by every test; each test uses its own topic."""
    yield from started(make_spec("shared"), distribution, 180, "cluster")


@pytest.fixture(scope="session")
def admin(cluster: Cluster) -> Admin:
    return Admin(cluster.bootstrap, timeout_s=2.0)


@pytest.fixture(scope="session")
def kraft_cluster(distribution: kafka_install.Distribution) -> Iterator[Cluster]:
    """KRaft mode: 3 dedicated controllers + 3 brokers, shared by the tests of both modes."""
    yield from started(make_spec("kraft", mode="kraft", controllers=3), distribution, 240, "kraft_cluster")


@pytest.fixture(scope="session")
def kraft_admin(kraft_cluster: Cluster) -> Admin:
    return Admin(kraft_cluster.bootstrap, timeout_s=2.0)


@pytest.fixture
def kraft_engine(kraft_cluster: Cluster, kraft_admin: Admin,
                 request: pytest.FixtureRequest) -> tuple[Cluster, Admin, Callable[..., str]]:
    return kraft_cluster, kraft_admin, topic_factory_for(kraft_cluster, kraft_admin, request)


_topic_ids = itertools.count()


@pytest.fixture
def topic_factory(cluster: Cluster, admin: Admin, request: pytest.FixtureRequest) -> Callable[..., str]:
    return topic_factory_for(cluster, admin, request)


def topic_factory_for(cluster: Cluster, admin: Admin, request: pytest.FixtureRequest) -> Callable[..., str]:
    """Create a uniquely named topic with every partition led; returns its name."""

    def create(partitions: int = 6, replication_factor: int = 3, configs: dict[str, str] | None = None) -> str:
        base = "".join(ch if ch.isalnum() else "-" for ch in request.node.name)[:60]
        name = f"{base}-{next(_topic_ids)}"
        for node in cluster.brokers:  # a previous test may have left a broker down
            node.start()
        for node in cluster.brokers:
            cluster.wait_state(node.broker_id or 0, "running", timeout=90)  # type: ignore[arg-type]
        admin.create_topic(name, partitions, replication_factor, configs, timeout_s=60)
        return name

    return create


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Whatever happened, no JVM of the suite's state dirs outlives it."""
    if TEST_STATE_ROOT.exists():
        for state_dir in TEST_STATE_ROOT.iterdir():
            reap_marked_processes(state_dir)
        shutil.rmtree(TEST_STATE_ROOT, ignore_errors=True)


@pytest.fixture
def fresh_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Progress and config in a state root of the test's own; a wide terminal so Rich's tables do not wrap words."""
    root = tmp_path / "state"
    monkeypatch.setenv("KAFKALAB_STATE", str(root))
    monkeypatch.setenv("COLUMNS", "250")
    return root
