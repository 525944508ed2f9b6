"""Kafka's own definitions of its broker settings and topic configs, per release, read from its jars.

ConfigDefs.java dumps ``KafkaConfig.configDef()`` and ``LogConfig``'s definition (name, type, default, valid
values) as JSON: once per release and helper source, at `kafkalab fetch` or on first use, into kafkalab's cache,
then from the file (a JVM start costs 0.4-2 s; the prompt that checks a setting must answer at once). The same
helper gives Kafka's own verdict on a value whose validator only Kafka's code knows (:func:`kafka_verdicts`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.distribution import Distribution, java_binary
from kafkalab.kafka_install.java_helpers import java_helper_argv
from kafkalab.paths import cache_root, package_file

CONFIG_DEFS_SOURCE = package_file("kafkalab.kafka_install", "ConfigDefs.java")
KINDS = ("broker", "topic")
HELPER_TIMEOUT_S = 120.0  # a JVM loading Kafka's server classes on a machine busy with a cluster
# the types whose parsing kafkalab reproduces (config_check); the others (DOUBLE's text, LIST, CLASS) Kafka judges
LOCAL_TYPES = ("BOOLEAN", "SHORT", "INT", "LONG", "STRING", "PASSWORD")
NUMBER_TYPES = ("SHORT", "INT", "LONG")


@dataclass(frozen=True)
class ConfigKey:
    """One setting as Kafka defines it. ``at_least``/``at_most``: a range's bounds as Kafka prints them;
    ``one_of``: the strings a ValidString takes; ``kafka_validator``: a validator only Kafka's code can apply."""

    name: str
    type: str
    default: str | None = None
    valid: str = ""  # the validator's own text ("[1,...]", "[compact, delete]")
    at_least: str | None = None
    at_most: str | None = None
    one_of: tuple[str, ...] | None = None
    kafka_validator: bool = False

    @property
    def local(self) -> bool:
        """Whether kafkalab can judge a value as Kafka would without a JVM: a type it parses, and a range on a
        number or a list of strings on a string (anything else: Kafka's own code, :func:`kafka_verdicts`)."""
        if self.kafka_validator or self.type not in LOCAL_TYPES:
            return False
        ranged = self.at_least is not None or self.at_most is not None
        return (not ranged or self.type in NUMBER_TYPES) and (self.one_of is None or self.type == "STRING")

    @classmethod
    def of(cls, name: str, raw: Mapping[str, Any]) -> ConfigKey:
        check = raw.get("check")
        bounds = check.get("range", (None, None)) if isinstance(check, dict) else (None, None)
        one_of = check.get("in") if isinstance(check, dict) else None
        return cls(name, str(raw["type"]), raw.get("default"), str(raw.get("valid", "")), bounds[0], bounds[1],
                   tuple(one_of) if one_of is not None else None, check == "kafka")


@dataclass(frozen=True)
class ConfigDefs:
    """Every broker setting and topic config of one Kafka release."""

    version: str
    broker: Mapping[str, ConfigKey]
    topic: Mapping[str, ConfigKey]

    def of(self, kind: str) -> Mapping[str, ConfigKey]:
        return self.broker if kind == "broker" else self.topic


@functools.cache
def config_defs(dist: Distribution) -> ConfigDefs:
    """``dist``'s definitions: from the cache file, else dumped by the helper (a JVM) and cached."""
    path = defs_path(dist)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raw = json.loads(_run(dist, ["dump"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}-", delete=False,
                                         encoding="utf-8") as tmp:
            json.dump(raw, tmp)
        os.replace(tmp.name, path)  # atomic: a concurrent first use writes the same file
    broker, topic = ({n: ConfigKey.of(n, k) for n, k in raw[kind].items()} for kind in KINDS)
    return ConfigDefs(dist.version(), broker, topic)


def defs_path(dist: Distribution) -> Path:
    """Keyed like the compiled helpers: a new helper source or another release gets a file of its own."""
    key = hashlib.sha256(b"\0".join([CONFIG_DEFS_SOURCE.read_bytes(), dist.version().encode()])).hexdigest()[:16]
    return cache_root() / "config-defs" / f"kafka-{dist.version()}-{key}.json"


def cache_config_defs(dist: Distribution, say: Callable[[str], None]) -> None:
    """At fetch: the definitions cached now, so the first check at a prompt does not wait for a JVM."""
    defs = config_defs(dist)
    say(f"Kafka {defs.version}'s settings read: {len(defs.broker)} broker settings, {len(defs.topic)} topic configs")


@functools.lru_cache(maxsize=256)
def kafka_verdicts(dist: Distribution, settings: tuple[tuple[str, str, str], ...]) -> tuple[str | None, ...]:
    """Kafka's own verdict on each (kind, name, value): None when it takes the value, else its message
    (``ConfigDef.parseType`` and the key's validator, as the broker applies them). One JVM for the lot."""
    lines = "".join(f"{kind} {name} {value.encode('utf-8', 'surrogatepass').hex()}\n"
                    for kind, name, value in settings)
    return tuple(json.loads(_run(dist, ["check"], lines)))


def _run(dist: Distribution, args: Sequence[str], given: str = "") -> str:
    cmd = [java_binary(), "-Xmx128m", "-XX:TieredStopAtLevel=1", *java_helper_argv(dist, CONFIG_DEFS_SOURCE), *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=HELPER_TIMEOUT_S, check=False,
                              input=given, encoding="utf-8")
    except subprocess.TimeoutExpired:
        raise KafkalabError(f"reading Kafka {dist.version()}'s setting definitions took over "
                            f"{HELPER_TIMEOUT_S:.0f}s: is the machine overloaded?") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if "Exception" in ln or "rror" in ln] or ["no output"]
        raise KafkalabError(f"reading Kafka {dist.version()}'s setting definitions from {dist.libs} failed: "
                            f"{lines[0].strip()[:300]}")
    return done.stdout
