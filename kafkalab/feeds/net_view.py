"""The network faults in force as the console shows them: per node, short marks ("ISOLATED", "cut from 2,3 · zk",
"replies to clients dropped", "delay 200ms with 2"); per broker, whether it is cut off from the cluster's
metadata nodes (ZooKeeper, KRaft's controllers) or from every other broker: the reason a leader turns zombie.

Built from the proxy's status (:class:`~kafkalab.netfaults.ProxyStatus`), in the sources' node polls (a thread
worker), and from a recording's ``net`` lines in a replay. No Textual here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafkalab.cluster.view import NetControls
from kafkalab.errors import KafkalabError
from kafkalab.netfaults import ANY_SOURCE, CLIENTS, Cut, Delay, Direction, Drop, Hold, Limit, ProxyStatus, Rule

ZOOKEEPER = "zookeeper"
CONTROLLER_PREFIX = "controller-"
BROKER_PREFIX = "broker-"


def short(node: str) -> str:
    """A node as a mark names it: broker-2 -> 2, zookeeper -> zk, controller-1 -> ctl1, * -> all."""
    if node.startswith(BROKER_PREFIX):
        return node.removeprefix(BROKER_PREFIX)
    if node == ZOOKEEPER:
        return "zk"
    if node.startswith(CONTROLLER_PREFIX):
        return "ctl" + node.removeprefix(CONTROLLER_PREFIX)
    return "all" if node == ANY_SOURCE else node


def is_metadata_node(node: str) -> bool:
    """ZooKeeper or a KRaft controller: a broker cut from all of them loses its session, then its leaderships."""
    return node == ZOOKEEPER or node.startswith(CONTROLLER_PREFIX)


def never_opens(source: str, target: str) -> bool:
    """``source`` never connects to ``target`` (as kafkalab.cluster.netwiring wires them): ZooKeeper connects to
    nobody, a dedicated KRaft controller only to the other controllers. Such a link needs no cut to be severed."""
    if source == ZOOKEEPER:
        return True
    return source.startswith(CONTROLLER_PREFIX) and not target.startswith(CONTROLLER_PREFIX)


def peers_text(peers: Iterable[str]) -> str:
    """'2,3 · zk': brokers first (by id), then the others, so a line reads alike on every pane."""
    names = sorted(set(peers), key=lambda n: (not n.startswith(BROKER_PREFIX), len(n), n))
    brokers = [short(n) for n in names if n.startswith(BROKER_PREFIX)]
    others = [short(n) for n in names if not n.startswith(BROKER_PREFIX)]
    return " · ".join(filter(None, (",".join(brokers), *others)))


def amount(rule: Rule) -> str:
    """What a rule does, in a word or two: dropped, held, delay 200ms, limit 100KB/s."""
    if isinstance(rule, Delay):
        return f"delay {rule.ms}ms" + (f"±{rule.jitter_ms}" if rule.jitter_ms else "")
    if isinstance(rule, Limit):
        rate = rule.bytes_per_s
        return f"limit {rate // 1000}KB/s" if rate >= 1000 else f"limit {rate}B/s"
    return "dropped" if isinstance(rule, Drop) else "held"


def flow_phrase(rule: Drop | Hold | Delay | Limit, node: str) -> str:
    """Which bytes of the rule's link, seen from ``node`` (its source or its target): 'replies to', 'requests
    from', 'traffic with' (both ways)."""
    if rule.direction is Direction.BOTH:
        return "traffic with"
    outgoing = (rule.direction is Direction.REQUESTS) == (rule.link.source == node)
    return f"{rule.direction.value} {'to' if outgoing else 'from'}"


@dataclass(frozen=True)
class NetView:
    """The rules in force on a cluster's links; ``error`` says why the proxy gave none (it did not answer)."""

    rules: tuple[Rule, ...] = ()
    nodes: tuple[str, ...] = ()  # every node the proxy forwards to: those an isolation cuts a node from
    error: str = ""

    @classmethod
    def of(cls, status: ProxyStatus) -> NetView:
        return cls(status.rules(), tuple(t.name for t in status.targets))

    def cuts(self, source: str, target: str) -> bool:
        """The connections ``source`` opens to ``target`` are cut (a rule on every source counts too)."""
        return any(isinstance(r, Cut) and r.link.target == target and r.link.source in (source, ANY_SOURCE)
                   for r in self.rules)

    def severed(self, node: str, other: str) -> bool:
        """Neither node can reach the other: each way cut, or never used (ZooKeeper connects to nobody)."""
        return ((never_opens(node, other) or self.cuts(node, other))
                and (never_opens(other, node) or self.cuts(other, node))
                and not (never_opens(node, other) and never_opens(other, node)))

    def isolated(self, node: str) -> bool:
        """Severed from every other node (clients may still reach it)."""
        others = [n for n in self.nodes if n != node]
        return bool(others) and all(self.severed(node, n) for n in others)

    def marks(self, node: str) -> tuple[str, ...]:
        """What the node's pane says about its links: 'ISOLATED' first (then only what an isolation does not
        say), cuts both ways ('cut from'), one way ('cut to' / 'cut off from' by the other), then the rest."""
        isolated = self.isolated(node)
        both, out, into = set(), set(), set()
        for other in self.nodes:
            if other == node:
                continue
            to = self.cuts(node, other)
            fro = self.cuts(other, node)
            if isolated and (to or fro):
                continue
            if (to or fro) and self.severed(node, other):
                both.add(other)
            elif to:
                out.add(other)
            elif fro:
                into.add(other)
        if self.cuts(CLIENTS, node) or self.cuts(ANY_SOURCE, node):
            into.add(CLIENTS)
        out_marks: list[str] = ["ISOLATED"] if isolated else []
        out_marks += [f"{what} {peers_text(peers)}" for what, peers in
                      (("cut from", both), ("cannot reach", out), ("unreachable from", into)) if peers]
        grouped: dict[str, list[str]] = {}
        for rule in self.rules:
            if isinstance(rule, Cut) or node not in (rule.link.source, rule.link.target):
                continue
            peer = rule.link.target if rule.link.source == node else rule.link.source
            if isinstance(rule, Delay | Limit):  # 'delay 200ms with 2', 'limit 100KB/s replies to clients'
                phrase = flow_phrase(rule, node)
                key = f"{amount(rule)} {'with' if rule.direction is Direction.BOTH else phrase}"
            else:
                key = f"{flow_phrase(rule, node)} {{}} {amount(rule)}"
            grouped.setdefault(key, []).append(peer)
        for key, peers in grouped.items():
            text = peers_text(peers)
            out_marks.append(key.replace("{}", text) if "{}" in key else f"{key} {text}")
        return tuple(out_marks)

    def cut_off(self) -> dict[int, str]:
        """Brokers (by id) cut from every metadata node, or from every other broker, each with what from: the
        ones a leader's zombie state comes from (its session lost, or its followers unable to fetch)."""
        return {b: peers_text(what) for b, what in self._cut_off().items()}

    def _cut_off(self) -> dict[int, list[str]]:
        brokers = [n for n in self.nodes if n.startswith(BROKER_PREFIX)]
        metadata = [n for n in self.nodes if is_metadata_node(n)]
        out: dict[int, list[str]] = {}
        for broker in brokers:
            from_meta = bool(metadata) and all(self.cuts(broker, m) for m in metadata)
            others = [b for b in brokers if b != broker]
            from_brokers = bool(others) and all(self.cuts(broker, b) or self.cuts(b, broker) for b in others)
            if from_meta or from_brokers:
                what = [*(metadata if from_meta else []), *(others if from_brokers else [])]
                out[int(broker.removeprefix(BROKER_PREFIX))] = what
        return out

    def summary(self) -> str:
        """One line for a toast: the nodes cut off or isolated, else how many rules are in force."""
        if self.error:
            return f"network-fault proxy: {self.error}"
        if not self.rules:
            return "every link healed"
        isolated = [n for n in self.nodes if self.isolated(n)]
        cut = {f"broker-{b}": peers_text(what) for b, what in self._cut_off().items()  # not for the isolated alone
               if f"broker-{b}" not in isolated and not set(what) <= set(isolated)}
        said = [f"{n} isolated" for n in isolated] + [f"{n} cut from {what}" for n, what in cut.items()]
        return "; ".join(said) or f"{len(self.rules)} network rule{'s' if len(self.rules) != 1 else ''} in force"


def net_view(net: NetControls | None) -> NetView | None:
    """The rules in force on ``net``'s links (None: the cluster has no proxies); a proxy that does not answer
    is said in the view, it never fails the node poll."""
    if net is None or net.pid is None:  # no proxies, or the cluster has ended (its proxy with it)
        return None
    try:
        return NetView.of(net.status())
    except (KafkalabError, OSError) as exc:
        return NetView(error=str(exc) or type(exc).__name__)
