"""Where kafkalab keeps the Kafka jars (cache) and cluster state (state dirs), and finds its packaged files."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from kafkalab import KAFKA_VERSION
from kafkalab.errors import KafkalabError

# where `kafkalab run`, `fix` and the console put run folders unless told (--runs-dir), and `grades` looks
RUNS_DIR = Path("kafkalab-runs")


def cache_root() -> Path:
    """KAFKALAB_CACHE, else $XDG_CACHE_HOME/kafkalab, else ~/.cache/kafkalab."""
    if env := os.environ.get("KAFKALAB_CACHE"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "kafkalab"


def dist_dir(cache: Path | None = None, version: str = KAFKA_VERSION) -> Path:
    return (cache or cache_root()) / f"kafka-{version}"


def state_root() -> Path:
    """KAFKALAB_STATE, else $XDG_STATE_HOME/kafkalab, else ~/.local/state/kafkalab."""
    if env := os.environ.get("KAFKALAB_STATE"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "kafkalab"


def default_state_dir() -> Path:
    return state_root() / "clusters" / "default"


def package_file(package: str, name: str = "") -> Path:
    """A file (or, with no name, the directory) a package carries, found through importlib.resources.

    pip, pipx and uv install packages unpacked, so the resource is a real path the JVM and glob can use.
    """
    found = resources.files(package).joinpath(name) if name else resources.files(package)
    if not isinstance(found, Path) or not found.exists():
        what = name or "its files"
        raise KafkalabError(f"{package} lacks {what}: reinstall kafkalab (pip install --force-reinstall kafkalab)")
    return found


def assets_dir() -> Path:
    """The poms and corpora: the repository's assets/, installed as the package kafkalab._assets."""
    return package_file("kafkalab._assets")


def labs_dir() -> Path:
    """The lab catalog: the repository's labs/, installed as the package kafkalab._labs."""
    return package_file("kafkalab._labs")
