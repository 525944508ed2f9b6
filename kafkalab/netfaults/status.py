"""What ``status`` answers, typed: every target (up or down, its ports), every link's rules and counters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkalab.netfaults.rules import Flow, Link, Rule, rule_from_json


@dataclass(frozen=True)
class FlowCounters:
    """Bytes of one flow of a link: passed on, thrown away by a drop, waiting in a hold or a delay now."""

    forwarded: int
    dropped: int
    held: int
    delayed: int


@dataclass(frozen=True)
class LinkStatus:
    """One (source, target) link: its rules in force and its counters since the proxy started."""

    link: Link
    rules: tuple[Rule, ...]
    connections_open: int
    connections_total: int
    connections_refused: int
    connections_reset: int
    upstream_failures: int
    requests: FlowCounters
    replies: FlowCounters

    def flow(self, flow: Flow) -> FlowCounters:
        return self.requests if flow is Flow.REQUESTS else self.replies


@dataclass(frozen=True)
class TargetStatus:
    name: str
    down: bool
    listen_ports: tuple[int, ...]


@dataclass(frozen=True)
class ProxyStatus:
    pid: int
    targets: tuple[TargetStatus, ...]
    nodes: dict[str, int]  # registered nodes: node name -> pid
    links: tuple[LinkStatus, ...]
    clients: dict[str, int] = field(default_factory=dict)  # clients registered by name (producer, consumer-1) -> pid

    def link(self, source: str, target: str) -> LinkStatus | None:
        return next((s for s in self.links if s.link == Link(source, target)), None)

    def rules(self) -> tuple[Rule, ...]:
        return tuple(r for s in self.links for r in s.rules)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProxyStatus:
        def counters(d: dict[str, Any]) -> FlowCounters:
            return FlowCounters(d["forwarded"], d["dropped"], d["held"], d["delayed"])

        links = tuple(
            LinkStatus(Link(s["source"], s["target"]), tuple(rule_from_json(r) for r in s["rules"]),
                       s["connections_open"], s["connections_total"], s["connections_refused"],
                       s["connections_reset"], s["upstream_failures"], counters(s["requests"]),
                       counters(s["replies"]))
            for s in data["links"])
        targets = tuple(TargetStatus(t["name"], t["down"], tuple(t["listen_ports"])) for t in data["targets"])
        return cls(data["pid"], targets, dict(data["nodes"]), links, dict(data.get("clients", {})))
