"""Fixtures of the docker backend: an engine (or a skip that says why), its image, and a cluster in containers.

`make test` provides the engine (scripts/with-docker-engine.sh); the image is imported from kafkalab's
cache, or built once. KAFKALAB_TEST_IMAGE picks another Java 17 image (e.g. one pulled from a registry).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator

import docker
import pytest
from requests.exceptions import RequestException

from kafkalab import kafka_install
from kafkalab.admin import Admin
from kafkalab.cluster import Cluster
from kafkalab.cluster.docker_backend import LABEL_STATE_DIR, DockerBackend, connect_engine
from kafkalab.cluster.docker_image import DEFAULT_IMAGE, ensure_image, image_present, rootfs_path
from kafkalab.errors import KafkalabError
from tests.conftest import TEST_STATE_ROOT, make_spec, topic_factory_for
from tests.session_clusters import held

DOCKER_IMAGE = os.environ.get("KAFKALAB_TEST_IMAGE", DEFAULT_IMAGE)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    """A client of a reachable engine that holds :data:`DOCKER_IMAGE`."""
    try:
        client = connect_engine(timeout=600)
    except KafkalabError as exc:
        pytest.skip(f"{exc} (`make test` starts a private engine when run as root on Linux)")
    buildable = DOCKER_IMAGE == DEFAULT_IMAGE and (rootfs_path().exists() or shutil.which("mmdebstrap"))
    if not image_present(client, DOCKER_IMAGE) and not buildable:
        pytest.skip(f"image {DOCKER_IMAGE} is missing and cannot be built here (no mmdebstrap): "
                    "set KAFKALAB_TEST_IMAGE to a Java 17 image, or install mmdebstrap")
    ensure_image(client, DOCKER_IMAGE)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def docker_cluster(distribution: kafka_install.Distribution, docker_client: docker.DockerClient) -> Iterator[Cluster]:
    """ZooKeeper + 3 brokers in containers, shared by the docker tests; each test uses its own topic."""
    c = Cluster(make_spec("docker"), distribution, backend=DockerBackend(DOCKER_IMAGE))  # through the proxies
    c.start(timeout=240)
    try:
        yield held("docker_cluster", c)
    finally:
        c.shutdown(graceful=False)


@pytest.fixture(scope="session")
def docker_kraft_cluster(distribution: kafka_install.Distribution,
                         docker_client: docker.DockerClient) -> Iterator[Cluster]:
    """KRaft mode in containers: 3 dedicated controllers + 3 brokers, shared by the docker KRaft tests."""
    spec = make_spec("docker-kraft", mode="kraft", controllers=3)
    c = Cluster(spec, distribution, backend=DockerBackend(DOCKER_IMAGE))
    c.start(timeout=300)
    try:
        yield held("docker_kraft_cluster", c)
    finally:
        c.shutdown(graceful=False)


@pytest.fixture
def docker_kraft_engine(
    docker_kraft_cluster: Cluster, request: pytest.FixtureRequest
) -> tuple[Cluster, Admin, Callable[..., str]]:
    """(cluster, admin, topic_factory) of KRaft mode on the docker backend."""
    admin = Admin(docker_kraft_cluster.bootstrap, timeout_s=5.0)
    return docker_kraft_cluster, admin, topic_factory_for(docker_kraft_cluster, admin, request)


@pytest.fixture(scope="session")
def docker_admin(docker_cluster: Cluster) -> Admin:
    return Admin(docker_cluster.bootstrap, timeout_s=5.0)  # the cluster may have just started on a busy machine


@pytest.fixture
def docker_engine(
    docker_cluster: Cluster, docker_admin: Admin, request: pytest.FixtureRequest
) -> tuple[Cluster, Admin, Callable[..., str]]:
    """(cluster, admin, topic_factory) of the docker backend, for the engine tests parametrised by backend."""
    return docker_cluster, docker_admin, topic_factory_for(docker_cluster, docker_admin, request)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Whatever happened, no container of the suite's state dirs outlives it (and no other is touched)."""
    try:
        client = docker.from_env(timeout=30)
        containers = client.containers.list(all=True, filters={"label": LABEL_STATE_DIR})
    except (docker.errors.DockerException, RequestException):
        return
    for container in containers:
        if container.labels.get(LABEL_STATE_DIR, "").startswith(f"{TEST_STATE_ROOT}/"):
            container.remove(force=True)
    client.close()
