"""Lab files (TOML) to :class:`Lab`, with the file, line and field named in every error.

tomllib gives no positions, so a small scan of the text maps (table, index, key) to line numbers.
Unknown keys are errors: a misspelt setting must never be silently ignored.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from kafkalab import KAFKA_VERSIONS
from kafkalab.clients.foreign_command import check_template
from kafkalab.clients.options import OptionsError
from kafkalab.cluster.spec import CONTROLLER_COUNTS, MODES
from kafkalab.errors import KafkalabError
from kafkalab.kafka_install.distribution import has_kraft_only
from kafkalab.labs.expectations import make_expectation
from kafkalab.labs.faults import Fault, TargetCategory, TargetKind, make_fault
from kafkalab.labs.fix import Change, FixExercise, Hint, Incident, Rule, parse_changes
from kafkalab.labs.model import ClusterPlan, ConsumerPlan, Lab, ProcessorPlan, ProducerPlan, TopicPlan
from kafkalab.paths import labs_dir

LAB_KEYS = {"id", "title", "teaches", "instructions", "why", "short", "max_duration", "drain", "audit",
            "heal_before_audit"}
CLUSTER_KEYS = {"brokers", "overrides", "broker_overrides", "stopped", "mode", "modes", "controllers", "combined",
                "kafka_version", "kafka_versions", "net_proxies"}
TOPIC_KEYS = {"name", "partitions", "replication_factor", "configs", "create"}
CONSUMER_KEYS = {"local_id", "start", "wait_assigned", "command"}
FAULT_KEYS = {"at", "on", "do", "configs", "replication_factor", "partitions", "expect", "note", "timeout", "reset",
              "records", "fails", "to", "both_ways", "ms", "jitter_ms", "rate", "direction", "partition"}
TOP_KEYS = {"lab", "cluster", "topic", "producer", "processor", "consumers", "consumer", "fault", "expect", "fix",
            "incident"}
FIX_KEYS = {"task", "allow", "runs", "seed", "drop_faults", "expect", "rule", "hint", "solution", "wrong", "code"}
CODE_ROLES = ("producer", "consumer")  # roles whose fix may be a code change ([fix] code)
CHANGES_KEYS = {"settings", "topics", "brokers", "actions"}
INCIDENT_KEYS = {"ticket", "question", "choices", "answer", "explanation", "cure"}
_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,40}")
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
_KEY = re.compile(r"""^\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_.-]+)\s*=""")
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
# what a value must be, by the Python types tomllib gives, in the words a lab's author reads
_KIND_WORDS = {int: "a whole number", float: "a number", str: "text in quotes", bool: "true or false",
               list: "a list [...]", dict: "a table"}


class LineIndex:
    """Line numbers of table headers and keys, by (table path, array index, key)."""

    def __init__(self, text: str) -> None:
        self.keys: dict[tuple[str, int, str], int] = {}
        self.tables: dict[tuple[str, int], int] = {}
        counts: dict[str, int] = {}
        table, index = "", 0
        in_multiline = False
        for no, line in enumerate(text.splitlines(), start=1):
            if in_multiline:
                if line.count('"""') % 2 == 1 or line.count("'''") % 2 == 1:
                    in_multiline = False
                continue
            if m := _HEADER.match(line):
                table = m[2].replace('"', "").replace(" ", "")
                if m[1] == "[[":
                    counts[table] = counts.get(table, -1) + 1
                index = counts.get(table, 0) if m[1] == "[[" else 0
                self.tables.setdefault((table, index), no)
                continue
            if m := _KEY.match(line):
                key = m[1].strip("\"'")
                self.keys.setdefault((table, index, key), no)
                rest = line[m.end():]
                if rest.count('"""') % 2 == 1 or rest.count("'''") % 2 == 1:
                    in_multiline = True

    def line(self, table: str, index: int = 0, key: str | None = None) -> int:
        if key is not None and (table, index, key) in self.keys:
            return self.keys[(table, index, key)]
        if key is not None:  # a key that is a table of its own: [[faults]], [fix.expects]
            header = f"{table}.{key}" if table else key
            if (header, 0) in self.tables:
                return self.tables[(header, 0)]
        return self.tables.get((table, index), 1)


def field_name(table: str, index: int, key: str | None, array: bool = False) -> str:
    """The dotted path of a field as TOML writes it: ``fault[2].at``, ``producer."producer.acks"``, ``fix``."""
    where = f"{table}[{index + 1}]" if array else table
    if key is None:
        return where
    shown = f'"{key}"' if "." in key else key  # a course option's name holds dots: quoted, as in the file
    return f"{where}.{shown}" if where else shown


def kind_words(kinds: tuple[type, ...]) -> str:
    """``(int, float)`` -> ``a number``; ``(int,)`` -> ``a whole number``."""
    if set(kinds) == {int, float}:
        return "a number"
    return " or ".join(_KIND_WORDS.get(k, k.__name__) for k in kinds)


def value_words(value: Any) -> str:
    """A TOML value as its author wrote it: ``the text "3"``, ``the number 3``, ``true``, ``a list``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'the text "{value}"' if len(value) <= 40 else "text"
    if isinstance(value, int | float):
        return f"the number {value}"
    return "a list" if isinstance(value, list) else "a table" if isinstance(value, dict) else repr(value)


def named_setting(exc: Exception, written: Iterable[str]) -> str | None:
    """The first setting a client-options error is about that the lab file wrote: the field it points at."""
    given = set(written)
    names = exc.names if isinstance(exc, OptionsError) else ()
    return next((name for name in names if name in given), None)


class _Reader:
    """Validation helpers bound to one file: every failure names file:line and the field."""

    def __init__(self, path: Path, index: LineIndex) -> None:
        self.path = path
        self.index = index

    def fail(self, table: str, index: int, key: str | None, message: str, array: bool = False) -> KafkalabError:
        line = self.index.line(table, index, key)
        return KafkalabError(f"{self.path}:{line}: {field_name(table, index, key, array)}: {message}")

    def table(self, data: Mapping[str, Any], name: str, required: bool = False) -> dict[str, Any]:
        value = data.get(name, None)
        if value is None:
            if required:
                raise self.fail(name, 0, None, f"missing: add a [{name}] table")
            return {}
        if not isinstance(value, dict):
            raise self.fail("", 0, name, f"must be a table ([{name}])")
        return value

    def only(self, data: Mapping[str, Any], allowed: set[str], table: str, index: int = 0,
             array: bool = False, also: Callable[[str], bool] = lambda _k: False) -> None:
        for key in data:
            if key not in allowed and not also(key):
                known = ", ".join(sorted(allowed))
                close = difflib.get_close_matches(key, allowed, n=1)
                meant = f" (did you mean {close[0]}?)" if close else ""
                raise self.fail(table, index, key, f"unknown key{meant}: known keys are {known}", array)

    def typed(self, data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], table: str,
              index: int = 0, default: Any = None, array: bool = False) -> Any:
        if key not in data:
            if default is None:
                raise self.fail(table, index, key, "missing", array)
            return default
        value = data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # bool is an int to Python, never to a lab's author
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise self.fail(table, index, key, f"must be {kind_words(kinds)}, not {value_words(value)}", array)
        return value


def _setting(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_lab(path: Path, check_name: bool = True) -> Lab:
    """Parse and validate one lab file; KafkalabError (file:line: field: why) on the first problem.
    ``check_name=False`` for a copy whose file name is not its id (a run dir's lab.toml)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KafkalabError(f"cannot read lab file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = _TOML_AT.search(str(exc))  # tomllib says where in its message: put the line where every error has it
        if at is None:
            raise KafkalabError(f"{path}: not valid TOML: {exc}") from None
        why = _TOML_AT.sub("", str(exc))
        raise KafkalabError(f"{path}:{at[1]}: not valid TOML: {why} (column {at[2]})") from None
    return parse_lab(data, _Reader(path, LineIndex(text)), path if check_name else None)


def parse_lab(data: dict[str, Any], r: _Reader, path: Path | None = None) -> Lab:
    r.only(data, TOP_KEYS, "")
    lab = r.table(data, "lab", required=True)
    r.only(lab, LAB_KEYS, "lab")
    lab_id = r.typed(lab, "id", str, "lab")
    if not _ID.fullmatch(lab_id):
        raise r.fail("lab", 0, "id", f"{lab_id!r}: use lower-case letters, digits and dashes")
    cluster = _cluster(r, r.table(data, "cluster"))
    topics = _topics(r, data.get("topic", []), cluster.brokers)
    producer = _producer(r, r.table(data, "producer"))
    consumers = _consumers(r, r.table(data, "consumers"), data.get("consumer", []))
    processor = _processor(r, data["processor"], producer, {t.name for t in topics}) if "processor" in data else None
    for i, c in enumerate(consumers):
        if c.config.group_protocol == "consumer" and not all(map(has_kraft_only, cluster.kafka_versions)):
            raise r.fail("consumer", i, "consumer.group-protocol", "the consumer protocol (KIP-848) needs Kafka 4.0 "
                         "or later: set [cluster] kafka_versions = [\"4.4.0\"] and modes = [\"kraft\"]", array=True)
    faults = _faults(r, data.get("fault", []), cluster.brokers, {t.name: t.partitions for t in topics}, consumers,
                     processor is not None)
    cluster = _with_net_proxies(r, cluster, faults)
    expectations = tuple(
        _wrap(r, "expect", 0, key, partial(make_expectation, key, value, r.index.line("expect", 0, key)))
        for key, value in r.table(data, "expect", required=True).items()
    )
    if not expectations:
        raise r.fail("expect", 0, None, "empty: a lab says what must show, e.g. lost = \"> 0\"")
    if producer.config.topic not in {t.name for t in topics}:
        raise r.fail("producer", 0, "producer.topic", "names no [[topic]] of this lab: add the topic")
    fix = _fix(r, data["fix"], len(faults), cluster.brokers) if "fix" in data else None
    incident = _incident(r, data["incident"]) if "incident" in data else None
    # last: a copied lab's first error must be its real one, not the name it has not been given yet
    if path is not None and lab_id_of(path) != lab_id:
        raise r.fail("lab", 0, "id", f"{lab_id!r} differs from the file name {path.name}: make them agree")
    return Lab(
        id=lab_id,
        title=r.typed(lab, "title", str, "lab"),
        teaches=r.typed(lab, "teaches", str, "lab"),
        instructions=r.typed(lab, "instructions", str, "lab"),
        why_deterministic=r.typed(lab, "why", str, "lab"),
        cluster=cluster, topics=topics, producer=producer, consumers=consumers, faults=faults,
        expectations=expectations,
        short=r.typed(lab, "short", bool, "lab", default=False),
        max_duration_s=float(_positive(r, lab, "max_duration", 150)),
        drain_s=float(_positive(r, lab, "drain", 20)),
        audit=r.typed(lab, "audit", bool, "lab", default=True),
        heal_before_audit=r.typed(lab, "heal_before_audit", bool, "lab", default=True),
        source=path,
        fix=fix,
        incident=incident,
        processor=processor,
    )


def _positive(r: _Reader, lab: Mapping[str, Any], key: str, default: float) -> float:
    value = r.typed(lab, key, (int, float), "lab", default=default)
    if value <= 0:
        raise r.fail("lab", 0, key, f"{value} must be > 0 (seconds)")
    return float(value)


def _wrap(r: _Reader, table: str, index: int, key: str | None, fn: Callable[[], Any], array: bool = False) -> Any:
    try:
        return fn()
    except (ValueError, KafkalabError) as exc:
        raise r.fail(table, index, key, str(exc), array) from None


def _str_table(r: _Reader, value: Any, table: str, key: str, index: int = 0, array: bool = False) -> dict[str, str]:
    if not isinstance(value, dict) or any(isinstance(v, dict | list) for v in value.values()):
        raise r.fail(table, index, key, "must be a table of name = value", array)
    return {str(k): _setting(v) for k, v in value.items()}


def _cluster(r: _Reader, raw: dict[str, Any]) -> ClusterPlan:
    r.only(raw, CLUSTER_KEYS, "cluster")
    brokers = r.typed(raw, "brokers", int, "cluster", default=3)
    if not 1 <= brokers <= 9:
        raise r.fail("cluster", 0, "brokers", f"{brokers} is out of range: give 1..9")
    overrides = _str_table(r, raw.get("overrides", {}), "cluster", "overrides")
    per_broker: dict[int, dict[str, str]] = {}
    for key, value in dict(raw.get("broker_overrides", {})).items():
        if not str(key).isdigit() or not 1 <= int(key) <= brokers:
            raise r.fail("cluster", 0, "broker_overrides", f"{key!r} is not a broker id within 1..{brokers}")
        per_broker[int(key)] = _str_table(r, value, "cluster", "broker_overrides")
    stopped = r.typed(raw, "stopped", list, "cluster", default=[])
    if any(not isinstance(b, int) or isinstance(b, bool) or not 1 <= b <= brokers for b in stopped):
        raise r.fail("cluster", 0, "stopped", f"{stopped!r}: list broker ids within 1..{brokers}")
    if len(set(stopped)) >= brokers:
        raise r.fail("cluster", 0, "stopped", "leaves no broker running: keep at least one")
    mode, modes, controllers, combined = _modes(r, raw, brokers)
    versions = _kafka_versions(r, raw, modes)
    # unsaid: None, the default (on), which the cluster's spec resolves
    net_proxies = r.typed(raw, "net_proxies", bool, "cluster") if "net_proxies" in raw else None
    return ClusterPlan(brokers, overrides, per_broker, tuple(stopped), mode, modes, controllers, combined,
                       versions[0], versions, net_proxies)


def _with_net_proxies(r: _Reader, cluster: ClusterPlan, faults: tuple[Fault, ...]) -> ClusterPlan:
    """A lab with a network fault runs with the proxies in every link: it may not turn them off."""
    first = next((i for i, f in enumerate(faults) if f.net_action is not None), None)
    if first is None:
        return cluster
    if cluster.net_proxies is False:
        raise r.fail("fault", first, "do", f"{faults[first].action} is a network fault, which needs the "
                     "network-fault proxies: drop [cluster] net_proxies = false", array=True)
    return dataclasses.replace(cluster, net_proxies=True)


def _kafka_versions(r: _Reader, raw: dict[str, Any], modes: tuple[str, ...]) -> tuple[str, ...]:
    """[cluster] kafka_versions (every release the lab runs on) / kafka_version (its own, listed first).

    By default a lab runs on every Kafka kafkalab knows that has one of its modes: a ZooKeeper-only lab on
    3.x, a lab with KRaft on 4.x as well (4.x is KRaft only, as Kafka 4 is)."""
    own = r.typed(raw, "kafka_version", str, "cluster", default="")
    default = [own] if own else [v for v in KAFKA_VERSIONS if modes != ("zookeeper",) or not has_kraft_only(v)]
    versions = r.typed(raw, "kafka_versions", list, "cluster", default=default)
    for key, values in (("kafka_version", [own] if own else []), ("kafka_versions", versions)):
        for v in values:
            if not isinstance(v, str) or not re.fullmatch(r"\d+\.\d+\.\d+", v):
                raise r.fail("cluster", 0, key, f"{v!r} is not a Kafka release: give e.g. \"4.4.0\"")
    if not versions or len(set(versions)) != len(versions):
        raise r.fail("cluster", 0, "kafka_versions",
                     f"{versions!r}: list each release once, e.g. [\"3.9.2\", \"4.4.0\"]")
    if own and own not in versions:
        raise r.fail("cluster", 0, "kafka_version", f"{own!r} is not among kafka_versions {versions!r}: add it there")
    if modes == ("zookeeper",) and all(has_kraft_only(v) for v in versions):
        written = "kafka_versions" if "kafka_versions" in raw else "kafka_version"  # the key the author wrote
        raise r.fail("cluster", 0, written, f"Kafka {versions[0]} has no ZooKeeper mode (removed in 4.0): "
                     "add \"kraft\" to modes, or run on 3.9.2")
    if own and has_kraft_only(own) and modes[0] == "zookeeper":
        raise r.fail("cluster", 0, "kafka_version", f"Kafka {own} has no ZooKeeper mode (removed in 4.0): "
                     "list \"kraft\" first in modes")
    return (own, *[v for v in versions if v != own]) if own else tuple(versions)


def _modes(r: _Reader, raw: dict[str, Any], brokers: int) -> tuple[str, tuple[str, ...], int, bool]:
    """[cluster] mode / modes / controllers / combined: (default mode, modes, controllers, combined)."""
    mode = r.typed(raw, "mode", str, "cluster", default="")
    if mode and mode not in MODES:
        raise r.fail("cluster", 0, "mode", f"{mode!r} is not a mode: give {' or '.join(repr(x) for x in MODES)}")
    modes = r.typed(raw, "modes", list, "cluster", default=[mode or "zookeeper"])
    for m in modes:
        if m not in MODES:
            raise r.fail("cluster", 0, "modes", f"{m!r} is not a mode: give {' or '.join(repr(x) for x in MODES)}")
    if not modes or len(set(modes)) != len(modes):
        raise r.fail("cluster", 0, "modes", f"{modes!r}: list each mode once, e.g. [\"zookeeper\", \"kraft\"]")
    if mode and mode not in modes:
        raise r.fail("cluster", 0, "mode", f"{mode!r} is not among modes {modes!r}: add it there")
    controllers = r.typed(raw, "controllers", int, "cluster", default=1)
    if controllers not in CONTROLLER_COUNTS:
        raise r.fail("cluster", 0, "controllers", f"{controllers}: a quorum of 1 or 3 controllers, give 1 or 3")
    combined = r.typed(raw, "combined", bool, "cluster", default=False)
    if combined and controllers > brokers:
        raise r.fail("cluster", 0, "combined", f"{controllers} combined controllers need {controllers} brokers")
    return mode or modes[0], tuple(modes), controllers, combined


def _topics(r: _Reader, raw: Any, brokers: int) -> tuple[TopicPlan, ...]:
    if not isinstance(raw, list) or not raw:
        raise r.fail("topic", 0, None, "missing: add at least one [[topic]] with a name", array=True)
    topics: list[TopicPlan] = []
    for i, t in enumerate(raw):
        r.only(t, TOPIC_KEYS, "topic", i, array=True)
        name = r.typed(t, "name", str, "topic", i, array=True)
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,200}", name) or name.startswith("__"):
            raise r.fail("topic", i, "name", f"{name!r} is not a usable topic name", array=True)
        if name in {x.name for x in topics}:
            raise r.fail("topic", i, "name", f"{name} is defined twice", array=True)
        partitions = r.typed(t, "partitions", int, "topic", i, default=6, array=True)
        rf = r.typed(t, "replication_factor", int, "topic", i, default=min(3, brokers), array=True)
        if partitions < 1:
            raise r.fail("topic", i, "partitions", "must be >= 1", array=True)
        if not 1 <= rf <= brokers:
            raise r.fail("topic", i, "replication_factor", f"{rf} needs 1..{brokers} (the lab's brokers)", array=True)
        configs = _str_table(r, t.get("configs", {}), "topic", "configs", i, array=True)
        create = r.typed(t, "create", bool, "topic", i, default=True, array=True)
        topics.append(TopicPlan(name, partitions, rf, configs, create))
    return tuple(topics)


def _producer(r: _Reader, raw: dict[str, Any]) -> ProducerPlan:
    r.only(raw, {"start", "command"}, "producer", also=lambda k: k.startswith("producer."))
    settings = {k: _setting(v) for k, v in raw.items() if k not in ("start", "command")}
    start = r.typed(raw, "start", bool, "producer", default=True)
    command = _command(r, raw, "producer", 0, array=False)
    try:
        return ProducerPlan.of(settings, start, command)
    except (ValueError, KafkalabError) as exc:
        raise r.fail("producer", 0, named_setting(exc, settings), str(exc)) from None


def _processor(r: _Reader, raw: Any, producer: ProducerPlan, topics: set[str]) -> ProcessorPlan:
    """``[processor]``: it reads the producer's topic and writes another [[topic]] of the lab."""
    if not isinstance(raw, dict):
        raise r.fail("processor", 0, None, "must be a [processor] table")
    r.only(raw, {"start"}, "processor", also=lambda k: k.startswith("processor."))
    settings = {k: _setting(v) for k, v in raw.items() if k != "start"}
    settings.setdefault("processor.input-topic", producer.config.topic)
    try:
        plan = ProcessorPlan.of(settings, r.typed(raw, "start", bool, "processor", default=True))
    except (ValueError, KafkalabError) as exc:
        raise r.fail("processor", 0, named_setting(exc, settings), str(exc)) from None
    if plan.config.topic != producer.config.topic:
        raise r.fail("processor", 0, "processor.input-topic", f"must be the producer's topic, "
                     f"{producer.config.topic}: the run's records are the producer's")
    if plan.config.output_topic not in topics:
        raise r.fail("processor", 0, "processor.output-topic" if "processor.output-topic" in raw else None,
                     f"{plan.config.output_topic} names no [[topic]] of this lab: add the topic")
    return plan


def _command(r: _Reader, raw: dict[str, Any], table: str, index: int, array: bool) -> str | None:
    """A role's foreign ``command`` (None: kafkalab's own client), its places checked."""
    if "command" not in raw:
        return None
    command = r.typed(raw, "command", str, table, index, array=array)
    try:
        return check_template(command, "command")
    except KafkalabError as exc:
        raise r.fail(table, index, "command", str(exc).removeprefix("command: "), array=array) from None


def _consumers(r: _Reader, shared: dict[str, Any], raw: Any) -> tuple[ConsumerPlan, ...]:
    r.only(shared, set(), "consumers", also=lambda k: k.startswith("consumer."))
    base = {k: _setting(v) for k, v in shared.items()}
    if not isinstance(raw, list):
        raise r.fail("consumer", 0, None, "must be [[consumer]] tables", array=True)
    plans: list[ConsumerPlan] = []
    for i, c in enumerate(raw):
        r.only(c, CONSUMER_KEYS, "consumer", i, array=True, also=lambda k: k.startswith("consumer."))
        local_id = r.typed(c, "local_id", int, "consumer", i, array=True)
        if local_id < 1:
            raise r.fail("consumer", i, "local_id", "must be >= 1 (it names the consumer)", array=True)
        if local_id in {p.local_id for p in plans}:
            raise r.fail("consumer", i, "local_id", f"{local_id} is used twice", array=True)
        own = {k: _setting(v) for k, v in c.items() if k.startswith("consumer.")}
        if "consumer.local-id" in own:
            raise r.fail("consumer", i, "consumer.local-id", "set local_id instead", array=True)
        settings = {**base, **own, "consumer.local-id": str(local_id)}
        start = r.typed(c, "start", bool, "consumer", i, default=True, array=True)
        wait = r.typed(c, "wait_assigned", bool, "consumer", i, default=True, array=True)
        command = _command(r, c, "consumer", i, array=True)
        try:
            plans.append(ConsumerPlan.of(local_id, settings, start, wait, command))
        except (ValueError, KafkalabError) as exc:  # at the setting it names: this consumer's own, else the shared one
            named = named_setting(exc, settings)
            if named is not None and named not in own and named in base:
                raise r.fail("consumers", 0, named, str(exc)) from None
            raise r.fail("consumer", i, named if named in own else None, str(exc), array=True) from None
    return tuple(plans)


def _faults(r: _Reader, raw: Any, brokers: int, topics: dict[str, int],
            consumers: tuple[ConsumerPlan, ...], processor: bool = False) -> tuple[Fault, ...]:
    if not isinstance(raw, list):
        raise r.fail("fault", 0, None, "must be [[fault]] tables", array=True)
    faults: list[Fault] = []
    ids = {c.local_id for c in consumers}
    planned, topics = topics, dict(topics)  # topics: each one's partitions as the faults before left it
    for i, f in enumerate(raw):
        r.only(f, FAULT_KEYS, "fault", i, array=True)
        for key in ("at", "do"):
            r.typed(f, key, str, "fault", i, array=True)
        line = r.index.line("fault", i)
        try:
            fault = make_fault(f, brokers, line)
        except ValueError as exc:
            key, _, why = str(exc).partition(": ")
            raise r.fail("fault", i, key if key in FAULT_KEYS else None, why or str(exc), array=True) from None
        for key, topic, partition in (("at", fault.at.topic, fault.at.partition),
                                      ("on", fault.target.topic, fault.target.partition)):
            if topic and topic not in topics:
                raise r.fail("fault", i, key, f"topic {topic} is not a [[topic]] of this lab", array=True)
            if topic and partition is not None and partition >= topics[topic]:
                raise r.fail("fault", i, key, f"{topic}/{partition} does not exist: {topic} has {topics[topic]} "
                             f"partitions (0..{topics[topic] - 1})", array=True)
        for key, local_id in (("at", fault.at.local_id), ("on", fault.target.local_id)):
            if local_id is not None and local_id not in ids:
                raise r.fail("fault", i, key, f"consumer {local_id} is not a [[consumer]] local_id", array=True)
        if fault.target.kind == TargetKind.PROCESSOR and not processor:
            raise r.fail("fault", i, "on", "this lab has no [processor]", array=True)
        if fault.at.processor and not processor:
            raise r.fail("fault", i, "at", "this lab has no [processor]", array=True)
        for key, target in (("on", fault.target), ("to", fault.to)):
            if target is not None and target.kind == TargetKind.COORDINATOR and (
                    why := _coordinator_problem(target.group, consumers)):
                raise r.fail("fault", i, key, why, array=True)
        if fault.action == "add-partitions":
            topic = fault.target.topic
            if fault.partitions <= topics[topic]:
                grown = "" if topics[topic] == planned[topic] else " after the faults before this one"
                raise r.fail("fault", i, "partitions", f"{fault.partitions} adds none: {topic} has {topics[topic]} "
                             f"partitions{grown} and Kafka cannot remove partitions: give more than {topics[topic]}",
                             array=True)
            topics[topic] = fault.partitions
        if fault.target.kind == TargetKind.SAME and not any(x.target.category == TargetCategory.NODES for x in faults):
            raise r.fail("fault", i, "on", "'same' needs an earlier fault on a node", array=True)
        faults.append(fault)
    return tuple(faults)


def _coordinator_problem(group: str, consumers: tuple[ConsumerPlan, ...]) -> str:
    """Why ``coordinator [group]`` names no group of this lab's consumers ("" when it names one): the word is
    resolved when the fault fires, from the group the run's consumers are in."""
    groups = sorted({c.group for c in consumers})
    if not groups:
        return "coordinator is the broker coordinating the lab's consumer group: this lab has no [[consumer]]"
    if group and group not in groups:
        return f"group {group} is no consumer's consumer.group-id here (this lab's: {', '.join(groups)})"
    if not group and len(groups) > 1:
        return f"this lab's consumers are in groups {', '.join(groups)}: name one, e.g. 'coordinator {groups[0]}'"
    return ""


def _strings(r: _Reader, raw: dict[str, Any], key: str, table: str, index: int = 0, array: bool = False) -> list[str]:
    value = r.typed(raw, key, list, table, index, default=[], array=array)
    if any(not isinstance(v, str) for v in value):
        raise r.fail(table, index, key, "must be a list of strings", array)
    return list(value)


def _changes(r: _Reader, raw: Any, table: str, index: int, brokers: int, array: bool = False) -> tuple[Change, ...]:
    """A solution or a wrong fix: ``settings`` (-D), ``topics`` (--topic), ``brokers``, ``actions``."""
    if not isinstance(raw, dict):
        raise r.fail(table, index, None, "must be a table of settings, topics, brokers and actions", array)
    r.only(raw, CHANGES_KEYS, table, index, array)
    lists = {k: _strings(r, raw, k, table, index, array) for k in CHANGES_KEYS}
    return tuple(_wrap(r, table, index, None, partial(parse_changes, brokers, lists["settings"], lists["topics"],
                                                       lists["brokers"], lists["actions"]), array))


def _fix(r: _Reader, raw: Any, fault_count: int, brokers: int) -> FixExercise:
    if not isinstance(raw, dict):
        raise r.fail("", 0, "fix", "must be a table ([fix])")
    r.only(raw, FIX_KEYS, "fix")
    allow = _strings(r, raw, "allow", "fix")
    if not allow:
        raise r.fail("fix", 0, "allow", "missing: list what the attendee may change, e.g. [\"producer.*\"]")
    expectations = tuple(
        _wrap(r, "fix.expect", 0, key, partial(make_expectation, key, value, r.index.line("fix.expect", 0, key)))
        for key, value in r.table(raw, "expect").items())
    if not expectations:
        raise r.fail("fix", 0, "expect", "missing: say what must hold once fixed, e.g. [fix.expect] lost = 0")
    runs = r.typed(raw, "runs", int, "fix", default=2)
    if not 1 <= runs <= 10:
        raise r.fail("fix", 0, "runs", f"{runs}: give 1..10 graded runs")
    drop = r.typed(raw, "drop_faults", list, "fix", default=[])
    if any(not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= fault_count for n in drop):
        raise r.fail("fix", 0, "drop_faults", f"{drop!r}: list fault numbers within 1..{fault_count}")
    rules = []
    for i, rule in enumerate(r.typed(raw, "rule", list, "fix", default=[])):
        r.only(rule, {"when", "says", "outcome"}, "fix.rule", i, array=True)
        when = _strings(r, rule, "when", "fix.rule", i, array=True)
        outcome = r.typed(rule, "outcome", str, "fix.rule", i, default="", array=True)
        if outcome not in ("", "passed", "failed"):
            raise r.fail("fix.rule", i, "outcome", f"{outcome!r}: give \"passed\" or \"failed\"", array=True)
        rules.append(Rule(tuple(when), r.typed(rule, "says", str, "fix.rule", i, array=True), outcome))
    hints = []
    for i, hint in enumerate(r.typed(raw, "hint", list, "fix", default=[])):
        r.only(hint, {"after", "cost", "text"}, "fix.hint", i, array=True)
        after = r.typed(hint, "after", (int, float), "fix.hint", i, default=0, array=True)
        cost = r.typed(hint, "cost", int, "fix.hint", i, array=True)
        hints.append(Hint(float(after), cost, r.typed(hint, "text", str, "fix.hint", i, array=True)))
    if sum(h.cost for h in hints) >= 100:
        raise r.fail("fix", 0, "hint", "the hints cost 100 points or more: every hint taken must still leave "
                     "solving worth more than not solving")
    solution = _changes(r, raw.get("solution"), "fix.solution", 0, brokers)
    if not solution:
        raise r.fail("fix", 0, "solution", "missing: give the reference solution ([fix.solution])")
    wrong = tuple(_changes(r, w, "fix.wrong", i, brokers, array=True)
                  for i, w in enumerate(r.typed(raw, "wrong", list, "fix", default=[])))
    code = _strings(r, raw, "code", "fix") if "code" in raw else []
    if bad := [c for c in code if c not in CODE_ROLES]:
        raise r.fail("fix", 0, "code", f"{bad[0]!r}: a code fix is the producer's or the consumer's")
    fix = FixExercise(
        task=r.typed(raw, "task", str, "fix"), allow=tuple(allow), expectations=expectations, solution=solution,
        runs=runs, seed=r.typed(raw, "seed", int, "fix", default=1), rules=tuple(rules), hints=tuple(hints),
        drop_faults=tuple(drop), wrong=wrong, code=tuple(code))
    for table, changes in (("fix.solution", solution), *(("fix.wrong", w) for w in wrong)):
        _wrap(r, table, 0, None, partial(fix.check, changes))
    return fix


def _incident(r: _Reader, raw: Any) -> Incident:
    if not isinstance(raw, dict):
        raise r.fail("", 0, "incident", "must be a table ([incident])")
    r.only(raw, INCIDENT_KEYS, "incident")
    choices = _strings(r, raw, "choices", "incident")
    if len(choices) < 2:
        raise r.fail("incident", 0, "choices", "give at least two possible root causes")
    answer = r.typed(raw, "answer", int, "incident")
    if not 1 <= answer <= len(choices):
        raise r.fail("incident", 0, "answer", f"{answer}: give the number of the right choice, 1..{len(choices)}")
    return Incident(r.typed(raw, "ticket", str, "incident"),
                    r.typed(raw, "question", str, "incident", default="What is the root cause?"),
                    tuple(choices), answer - 1, r.typed(raw, "explanation", str, "incident"),
                    r.typed(raw, "cure", str, "incident", default=""))


def lab_id_of(path: Path) -> str:
    """The lab id a file name carries: its stem less the catalog number (``03-acks-0.toml`` -> ``acks-0``)."""
    return re.sub(r"^\d+-", "", path.stem)


def catalog() -> list[Path]:
    """Every lab file of the catalog, in catalog order (the file names start with their number)."""
    return sorted(labs_dir().glob("*.toml"))


def find_lab(ref: str) -> Path:
    """A lab by id, catalog number (``3``) or path."""
    candidate = Path(ref)
    if candidate.suffix == ".toml" or candidate.exists():
        if not candidate.is_file():
            raise KafkalabError(f"lab file {ref} does not exist: give a lab id (kafkalab labs lists them) or a path")
        return candidate
    files = catalog()
    for number, p in enumerate(files, start=1):
        if ref in (p.stem, str(number), lab_id_of(p)):
            return p
    raise KafkalabError(f"no lab {ref!r}: `kafkalab labs` lists the catalog, or give a .toml path")
