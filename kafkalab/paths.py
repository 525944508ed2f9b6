"""Where kafkalab keeps the Kafka jars (cache) and cluster state (state dirs)."""

from __future__ import annotations

import os
from pathlib import Path

from kafkalab import KAFKA_VERSION


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


def assets_dir() -> Path:
    """The repository's assets/ (pom, corpora); also shipped inside the package for installs."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "assets", here / "assets"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("kafkalab assets/ not found beside the package")
