"""The network faults a link can carry: typed, validated rules and their JSON form on the control socket.

A link is (source, target): the target is a node the proxy forwards to, the source the node whose process
opened the connection (``clients`` for any process the proxy was not told about, ``*`` for every source); a
client registered by name (``producer``, ``consumer-1``) is its own source, and a ``clients`` rule acts on it too.
Bytes flow two ways on a link: *requests* (source -> target) and *replies* (target -> source).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from kafkalab.errors import KafkalabError

CLIENTS = "clients"  # the source of a connection whose process nobody registered; as a rule's, every client's
ANY_SOURCE = "*"  # a rule on every source of a target (an exact source's own rule wins, slot by slot)
AnEnum = TypeVar("AnEnum", bound=Enum)
MAX_DELAY_MS = 600_000  # ten minutes: a longer delay is a typo, or a hold


class NetFaultsError(KafkalabError):
    """A rule, a config or a control request that cannot be obeyed: the message names what and what to do."""


class Direction(Enum):
    """Which bytes of a link a rule acts on."""

    REQUESTS = "requests"  # source -> target
    REPLIES = "replies"  # target -> source
    BOTH = "both"

    def flows(self) -> tuple[Flow, ...]:
        if self is Direction.BOTH:
            return (Flow.REQUESTS, Flow.REPLIES)
        return (Flow(self.value),)


class Flow(Enum):
    """One way of a link: where a byte goes. A rule's Direction covers one flow or both."""

    REQUESTS = "requests"
    REPLIES = "replies"


class RuleKind(Enum):
    """What a rule does; its name on the wire."""

    CUT = "cut"  # new connections reset at once, open ones reset
    DROP = "drop"  # bytes that way thrown away (drop replies: the request arrives, the answer never does)
    HOLD = "hold"  # bytes that way kept, delivered in order when the rule is healed
    DELAY = "delay"  # bytes that way delivered ms +/- jitter_ms after they arrived, order kept
    LIMIT = "limit"  # bytes that way at most bytes_per_s


def check_name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise NetFaultsError(f"{what} must be a node name, not {value!r}")
    return value


@dataclass(frozen=True)
class Link:
    """The connections ``source`` opens to ``target``."""

    source: str
    target: str

    def __post_init__(self) -> None:
        check_name(self.source, "a link's source")
        check_name(self.target, "a link's target")
        if self.target in (CLIENTS, ANY_SOURCE):
            raise NetFaultsError(f"a link's target must be a node the proxy forwards to, not {self.target!r}")

    def __str__(self) -> str:
        return f"{self.source} -> {self.target}"


@dataclass(frozen=True)
class Cut:
    """The link is down both ways: new connections are reset as soon as accepted, open ones are reset."""

    link: Link
    kind = RuleKind.CUT

    @property
    def direction(self) -> Direction:
        return Direction.BOTH


@dataclass(frozen=True)
class Drop:
    """The bytes going ``direction`` are thrown away; the connection stays open."""

    link: Link
    direction: Direction
    kind = RuleKind.DROP


@dataclass(frozen=True)
class Hold:
    """The bytes going ``direction`` are kept (then the senders' buffers fill) and delivered on heal."""

    link: Link
    direction: Direction
    kind = RuleKind.HOLD


@dataclass(frozen=True)
class Delay:
    """The bytes going ``direction`` arrive ``ms`` +/- ``jitter_ms`` late, in order (Toxiproxy's latency)."""

    link: Link
    direction: Direction
    ms: int
    jitter_ms: int = 0
    kind = RuleKind.DELAY

    def __post_init__(self) -> None:
        if not isinstance(self.ms, int) or not 0 < self.ms <= MAX_DELAY_MS:
            raise NetFaultsError(f"a delay must be 1..{MAX_DELAY_MS} ms, not {self.ms!r}")
        if not isinstance(self.jitter_ms, int) or not 0 <= self.jitter_ms <= self.ms:
            raise NetFaultsError(f"a delay's jitter must be 0..{self.ms} ms (at most the delay), "
                                 f"not {self.jitter_ms!r}")


@dataclass(frozen=True)
class Limit:
    """The bytes going ``direction`` pass at most ``bytes_per_s`` (Toxiproxy's bandwidth)."""

    link: Link
    direction: Direction
    bytes_per_s: int
    kind = RuleKind.LIMIT

    def __post_init__(self) -> None:
        if not isinstance(self.bytes_per_s, int) or self.bytes_per_s < 1:
            raise NetFaultsError(f"a bandwidth limit must be a whole number of bytes/s >= 1, not {self.bytes_per_s!r}")


Rule = Cut | Drop | Hold | Delay | Limit
# a flow of a link has one slot per aspect: a later rule in the same slot replaces the earlier one
BLOCKING_KINDS = (RuleKind.DROP, RuleKind.HOLD)  # one slot: bytes cannot be both dropped and held


def rule_to_json(rule: Rule) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": rule.kind.value, "source": rule.link.source, "target": rule.link.target,
                            "direction": rule.direction.value}
    if isinstance(rule, Delay):
        data |= {"ms": rule.ms, "jitter_ms": rule.jitter_ms}
    elif isinstance(rule, Limit):
        data["bytes_per_s"] = rule.bytes_per_s
    return data


def enum_value(cls: type[AnEnum], value: object, what: str) -> AnEnum:
    """``cls(value)``, or a NetFaultsError naming ``what`` and the values it may take."""
    try:
        return cls(value)
    except ValueError:
        raise NetFaultsError(f"{what} must be one of {', '.join(m.value for m in cls)}, not {value!r}") from None


def whole(data: dict[str, Any], key: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise NetFaultsError(f"a rule's {key} must be a whole number, not {value!r}")
    return value


def rule_from_json(data: object) -> Rule:
    """The rule a JSON object describes, or a NetFaultsError naming the field that is wrong."""
    if not isinstance(data, dict):
        raise NetFaultsError(f"a rule must be a JSON object, not {data!r}")
    kind = enum_value(RuleKind, data.get("kind"), "a rule's kind")
    link = Link(check_name(data.get("source"), "a rule's source"), check_name(data.get("target"), "a rule's target"))
    if kind is RuleKind.CUT:
        if data.get("direction", "both") != "both":
            raise NetFaultsError("a cut acts both ways: for one way, drop or hold that direction")
        return Cut(link)
    direction = enum_value(Direction, data.get("direction", "both"), "a rule's direction")
    if kind is RuleKind.DROP:
        return Drop(link, direction)
    if kind is RuleKind.HOLD:
        return Hold(link, direction)
    if kind is RuleKind.DELAY:
        return Delay(link, direction, whole(data, "ms"), whole(data, "jitter_ms", 0))
    return Limit(link, direction, whole(data, "bytes_per_s"))


def describe(rule: Rule) -> str:
    """One line for a person: ``drop replies broker-1 -> broker-2``."""
    what = rule.kind.value
    if not isinstance(rule, Cut):
        what += f" {rule.direction.value}"
    if isinstance(rule, Delay):
        what += f" {rule.ms} ms" + (f" +/- {rule.jitter_ms} ms" if rule.jitter_ms else "")
    elif isinstance(rule, Limit):
        what += f" {rule.bytes_per_s} B/s"
    return f"{what} {rule.link}"
