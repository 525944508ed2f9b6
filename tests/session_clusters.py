"""A session cluster lives from its first test to its last, not to the end of the suite: on two cores the idle
JVMs of the four shared clusters (20 of them, the docker ones in containers) slowed every test after their last
user. A cluster's fixture registers how to stop it; once the last collected test that uses it is torn down, it
is stopped (its fixture's own teardown then finds nothing left to stop)."""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest

from kafkalab.cluster import Cluster

SESSION_CLUSTERS = ("cluster", "kraft_cluster", "docker_cluster", "docker_kraft_cluster")
# fixtures that take a session cluster by name at run time (request.getfixturevalue), per parameter
DYNAMIC_USERS = {"engine": {"local": "cluster", "docker": "docker_cluster", "kraft": "kraft_cluster"}}

_last_user: dict[str, str] = {}  # cluster fixture -> node id of the last collected test that uses it
_stops: dict[str, Callable[[], None]] = {}  # cluster fixture -> how to stop it, while it runs


def held(name: str, cluster: Cluster) -> Cluster:
    """``cluster``, to be stopped after the last test that uses fixture ``name``."""
    _stops[name] = lambda: cluster.shutdown(graceful=False)
    return cluster


def clusters_used(item: pytest.Item) -> set[str]:
    """The session clusters ``item`` uses; a module's own fixture of the same name (test_net_kraft_cluster's
    ``kraft_cluster``) is not the session's."""
    names = set(getattr(item, "fixturenames", ()))
    params = getattr(getattr(item, "callspec", None), "params", {})
    for fixture, by_param in DYNAMIC_USERS.items():
        if fixture in names and params.get(fixture) in by_param:
            names.add(by_param[params[fixture]])
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return {name for name in names & set(SESSION_CLUSTERS)
            if name not in definitions or definitions[name][-1].scope == "session"}


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        for name in clusters_used(item):
            _last_user[name] = item.nodeid


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    yield
    for name, nodeid in _last_user.items():
        if nodeid == item.nodeid and (stop := _stops.pop(name, None)) is not None:
            stop()
