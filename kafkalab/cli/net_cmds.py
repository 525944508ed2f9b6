"""`kafkalab net isolate|cut|drop-replies|hold|delay|limit|heal|status`: network faults on a running cluster started
with --net-proxies (ZooKeeper or KRaft mode), sent to the cluster's owner through its control socket (as
`kafkalab broker kill` is)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from kafkalab.admin import Admin
from kafkalab.admin.coordinator import GroupCoordinator, group_coordinator
from kafkalab.cli.common import add_state_dir, bootstrap_for, target_state_dir
from kafkalab.cli.truncation_lines import HEADING, cluster_truncations, truncation_lines
from kafkalab.cluster.control_socket import request
from kafkalab.cluster.netwiring import NET_ACTIONS, NetAction, NetRequest, parse_ms, parse_rate
from kafkalab.errors import KafkalabError
from kafkalab.netfaults import Direction

EPILOG = """\
nodes:
  `broker N` (or N, broker-N), `zookeeper`, `clients` (as a source: every
  client process); during a lab run, as sources: `producer`, `consumer K`
  (or consumer-K): that client process alone; KRaft: `controller N` (or
  controller-N), `controller` (the active controller, when you ask);
  as a target: `coordinator GROUP`, the broker coordinating group GROUP
examples:
  kafkalab net isolate broker 1
      broker 1 cut from ZooKeeper (KRaft: the controllers) and the other
      brokers, clients kept
  kafkalab net isolate controller
      KRaft: the active controller cut from the other voters and the brokers
  kafkalab net cut broker 2 broker 1
      broker 2's connections to broker 1 reset (add --both-ways)
  kafkalab net drop-replies clients broker 1
      requests arrive at broker 1, its answers are lost
  kafkalab net hold clients broker 1 --direction requests
      kept by the proxy, delivered on heal
  kafkalab net cut producer broker 1
      the run's producer alone cut from broker 1, the consumers kept
  kafkalab net cut consumer 1 coordinator test-app
      consumer 1 cut from its group's coordinator: its heartbeats fail,
      the group moves its partitions to the others
  kafkalab net delay broker 2 broker 1 200ms --jitter 50ms
  kafkalab net limit broker 3 broker 1 100KB/s --direction replies
  kafkalab net heal [NODE [NODE]]
      every link, a node's links, or one link
  kafkalab net status
"""
AMOUNT_ACTIONS = (NetAction.DELAY, NetAction.LIMIT)
DIRECTION_ACTIONS = (NetAction.HOLD, *AMOUNT_ACTIONS)  # the actions that take --direction


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("net", help="network faults on a cluster started with --net-proxies",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=NET_ACTIONS)
    p.add_argument("words", nargs="*", metavar="NODE",
                   help="the node (isolate), the link SOURCE TARGET, then the delay or bandwidth (delay, limit)")
    p.add_argument("--jitter", default=None, metavar="MS", help="delay: +/- this much at random (e.g. 50ms)")
    p.add_argument("--direction", choices=[d.value for d in Direction], default=Direction.BOTH.value,
                   help="hold, delay, limit: the requests (SOURCE -> TARGET), the replies, or both (default)")
    p.add_argument("--both-ways", action="store_true", help="cut: TARGET's connections to SOURCE too")
    add_state_dir(p)
    p.set_defaults(func=cmd_net)


def net_request(args: argparse.Namespace) -> NetRequest:
    """The request the arguments describe; amounts parsed here, so a typo is refused before the owner is asked."""
    action = NetAction(args.action)
    words = tuple(args.words)
    ms = jitter_ms = bytes_per_s = 0
    if action in AMOUNT_ACTIONS:
        if not words:
            raise KafkalabError(f"{action.value} needs SOURCE TARGET and an amount, e.g. `kafkalab net {action.value} "
                                f"broker 2 broker 1 {'200ms' if action is NetAction.DELAY else '100KB/s'}`")
        *rest, amount = words
        words = tuple(rest)
        if action is NetAction.DELAY:
            ms = parse_ms(amount)
        else:
            bytes_per_s = parse_rate(amount)
    if args.jitter is not None:
        if action is not NetAction.DELAY:
            raise KafkalabError("--jitter goes with delay")
        jitter_ms = parse_ms(args.jitter, "a jitter")
        if jitter_ms > ms:
            raise KafkalabError(f"a jitter of {jitter_ms} ms is more than the {ms} ms delay: give at most the delay")
    if args.both_ways and action is not NetAction.CUT:
        raise KafkalabError("--both-ways goes with cut")
    direction = Direction(args.direction)
    if direction is not Direction.BOTH and action not in DIRECTION_ACTIONS:
        raise KafkalabError("--direction goes with hold, delay and limit")
    if action is NetAction.STATUS and words:
        raise KafkalabError("status takes no node: `kafkalab net status`")
    return NetRequest(action, words, ms, jitter_ms, bytes_per_s, direction, args.both_ways)


CoordinatorLookup = Callable[[str], GroupCoordinator]


def with_coordinators(request: NetRequest, lookup: CoordinatorLookup) -> tuple[NetRequest, list[str]]:
    """``coordinator GROUP`` in the words replaced by ``broker-N``, the broker coordinating GROUP now (``lookup``
    reads it from the cluster's metadata), and a line per group saying which broker that was."""
    words, said, queue = [], [], list(request.words)
    while queue:
        word = queue.pop(0)
        if word.strip().lower() != "coordinator":
            words.append(word)
            continue
        if not queue:
            raise KafkalabError("`coordinator` needs the group's id: e.g. coordinator test-app "
                                "(`kafkalab group list` shows the groups)")
        found = lookup(queue.pop(0))
        if found.broker is None:
            raise KafkalabError(f"group {found.group} has no coordinator right now: {found.describe()}")
        words.append(f"broker-{found.broker}")
        said.append(f"coordinator of group {found.group}: {found.describe()}")
    return NetRequest(request.action, tuple(words), request.ms, request.jitter_ms, request.bytes_per_s,
                      request.direction, request.both_ways), said


def cmd_net(args: argparse.Namespace) -> int:
    net = net_request(args)
    if any(w.strip().lower() == "coordinator" for w in net.words):
        admin = Admin(bootstrap_for(args), timeout_s=5)  # the direct listener: never cut by the proxy
        net, said = with_coordinators(net, lambda group: group_coordinator(
            admin.snapshot(offsets=False, internal=True), group))
        print("\n".join(said))
    state_dir = target_state_dir(args)
    reply = request(state_dir, "net", **net.to_json())
    if net.action is NetAction.STATUS:
        print("\n".join(reply["status"]))
        if truncated := truncation_lines(cluster_truncations(state_dir)):
            print("\n".join([HEADING, *(f"  {line}" for line in truncated)]))
    elif net.action is NetAction.HEAL:
        healed = reply["healed"]
        print("\n".join(f"healed: {line}" for line in healed) if healed else "nothing to heal")
    else:
        print("\n".join(f"applied: {line}" for line in reply["applied"]))
    return 0
