"""Network faults without root: a TCP proxy per link, in its own process, that can cut, drop, hold, delay and
throttle each (source, target) link and take a node's ports down.

The caller (the cluster, later) starts one :class:`NetFaultsProcess` with the listen ports and the nodes
behind them, registers which pid is which node, and drives it through :class:`NetFaultsClient`. The source
of a connection is the node whose process owns the connecting socket; any other process is ``clients``.
"""

from __future__ import annotations

from kafkalab.netfaults.client import NetFaultsClient, NetFaultsProcess
from kafkalab.netfaults.config import PortSpec, ProxyConfig
from kafkalab.netfaults.rules import (
    ANY_SOURCE,
    CLIENTS,
    Cut,
    Delay,
    Direction,
    Drop,
    Flow,
    Hold,
    Limit,
    Link,
    NetFaultsError,
    Rule,
    RuleKind,
    describe,
)
from kafkalab.netfaults.status import FlowCounters, LinkStatus, ProxyStatus, TargetStatus

__all__ = [
    "ANY_SOURCE", "CLIENTS", "Cut", "Delay", "Direction", "Drop", "Flow", "FlowCounters", "Hold", "Limit", "Link",
    "LinkStatus", "NetFaultsClient", "NetFaultsError", "NetFaultsProcess", "PortSpec", "ProxyConfig", "ProxyStatus",
    "Rule", "RuleKind", "TargetStatus", "describe",
]
