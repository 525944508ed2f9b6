"""The console's network faults without a cluster: the marks a rule set gives each node and the table, the keys
that isolate and heal (refused in words without proxies), the chart's markers and the recording's net lines."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from textual.widgets import Static

from kafkalab.cluster import EndCause, NodeState
from kafkalab.cluster.netwiring import NetAction, NetRequest
from kafkalab.feeds.frames import MarkerKind, NodesFrame
from kafkalab.feeds.lab_source import markers
from kafkalab.feeds.net_view import NetView
from kafkalab.feeds.replay_source import ReplaySource
from kafkalab.feeds.source import NO_NET_PROXIES
from kafkalab.labs.events import Actor, FaultEvent, NetEvent, NodeEvent
from kafkalab.labs.recording import RECORDING, RecordedRun
from kafkalab.netfaults import Cut, Delay, Direction, Drop, Link, Rule
from kafkalab.netfaults.rules import rule_to_json
from kafkalab.ui.app import LabConsole
from kafkalab.ui.chart import render_chart
from kafkalab.ui.nodepane import NodePane
from kafkalab.ui.partitions import PartitionTable
from tests.test_ui_app import leader_cell, running, settle, sync
from tests.test_ui_feed import FakeSource

NODES = ("zookeeper", "broker-1", "broker-2", "broker-3")


def isolation(node: str) -> tuple[Rule, ...]:
    """As ClusterNet isolates a node in ZooKeeper mode: both ways from every broker, its own link to ZooKeeper."""
    rules: list[Rule] = []
    for other in NODES:
        if other == node:
            continue
        if other != "zookeeper":
            rules.append(Cut(Link(other, node)))
        if node != "zookeeper":
            rules.append(Cut(Link(node, other)))
    return tuple(rules)


def test_an_isolated_broker_is_marked_isolated_its_peers_cut_from_it_and_cut_off_in_the_table() -> None:
    view = NetView(isolation("broker-1"), NODES)
    assert view.marks("broker-1") == ("ISOLATED",)
    assert view.marks("broker-2") == ("cut from 1",) and view.marks("zookeeper") == ("cut from 1",)
    assert view.cut_off() == {1: "2,3 · zk"}
    assert view.summary() == "broker-1 isolated"
    assert NetView((), NODES).summary() == "every link healed"


def test_an_isolated_zookeeper_cuts_every_broker_off_and_the_summary_names_it_once() -> None:
    view = NetView(isolation("zookeeper"), NODES)
    assert view.marks("zookeeper") == ("ISOLATED",)
    assert view.marks("broker-3") == ("cut from zk",)
    assert view.cut_off() == {1: "zk", 2: "zk", 3: "zk"}
    assert view.summary() == "zookeeper isolated"


def test_one_way_cuts_dropped_replies_and_delays_read_from_each_end() -> None:
    view = NetView((Cut(Link("broker-1", "zookeeper")), Cut(Link("broker-2", "broker-1")),
                    Drop(Link("clients", "broker-1"), Direction.REPLIES),
                    Delay(Link("broker-3", "broker-1"), Direction.BOTH, 200)), NODES)
    assert view.marks("broker-1") == ("cut from zk", "unreachable from 2", "replies to clients dropped",
                                      "delay 200ms with 3")
    assert view.marks("broker-2") == ("cannot reach 1",)
    assert view.marks("broker-3") == ("delay 200ms with 1",)
    assert view.cut_off() == {1: "zk"}  # its ZooKeeper session goes: the leader to mark
    assert not view.isolated("broker-1")


class NetFakeSource(FakeSource):
    """The fake feed with a network-fault proxy: isolate and heal change the rules its node frames carry."""

    def __init__(self) -> None:
        super().__init__()
        self.rules: tuple[Rule, ...] = ()
        self.requests: list[NetRequest] = []

    def nodes(self) -> NodesFrame:
        frame = super().nodes()
        with self.lock:
            return NodesFrame(frame.infos, frame.new_log_lines, frame.zk_connections, net=NetView(self.rules, NODES))

    def net_request(self, request: NetRequest) -> str:
        with self.lock:
            self.requests.append(request)
            self.rules = isolation(request.words[0]) if request.action is NetAction.ISOLATE else ()
        return f"done: {request.action.value}"


def net_line(app: LabConsole, node: str) -> str:
    line = app.query_one(f"#node-{node}", NodePane).query_one(".net-line", Static)
    return str(line.render()) if line.display else ""


@sync
async def test_without_proxies_the_keys_refuse_in_one_line_saying_how_to_get_them() -> None:
    feed = FakeSource()  # the base Source's net_request: no proxies
    async with running(feed, size=(100, 30)) as (app, pilot):
        await pilot.press("i")
        await pilot.pause()
        assert any("pick a node first" in n.message for n in app._notifications)
        await pilot.press("1", "i")
        await settle(pilot)
        refusals = [n.message for n in app._notifications if "--net-proxies" in n.message]
        assert refusals == [NO_NET_PROXIES] and "\n" not in NO_NET_PROXIES
        assert app.last_action == NO_NET_PROXIES  # the top bar says it too, not "isolating ..."
        await pilot.press("H")
        await settle(pilot)
        assert app.last_action == NO_NET_PROXIES
        assert not any(s for s in app.screen_stack[1:])  # a refusal is no error modal
        assert net_line(app, "broker-1") == ""  # nothing marked: no proxy, no rules


@sync
async def test_isolate_marks_the_node_its_peers_and_its_leaderships_and_heal_clears_them() -> None:
    feed = NetFakeSource()
    async with running(feed, size=(100, 30)) as (app, pilot):
        led_by_1 = "test-topic/0"  # the fake feed's partition p is led by p % 3 + 1
        assert leader_cell(app, led_by_1) == "1"
        await pilot.press("1", "i")
        await settle(pilot)
        assert feed.requests == [NetRequest(NetAction.ISOLATE, ("broker-1",))]
        assert "ISOLATED" in net_line(app, "broker-1")
        assert "cut from 1" in net_line(app, "broker-2") and "cut from 1" in net_line(app, "zookeeper")
        assert app.query_one("#node-broker-1", NodePane).has_class("-isolated")
        await settle(pilot)  # the table's next snapshot
        assert leader_cell(app, led_by_1) == "1✂"
        assert app.query_one(PartitionTable).get_cell(led_by_1, "status").plain.strip() == "leader cut off"
        assert leader_cell(app, "test-topic/1") == "2"  # another broker's leadership: unmarked
        assert "✂ 1 cut from 2,3 · zk" in str(app.query_one("#partitions-status", Static).render())
        assert any(n.title == "network" and n.message == "broker-1 isolated" for n in app._notifications)
        assert app.last_action == "done: isolate"
        await pilot.press("i")  # again on the isolated node: said, not sent
        await pilot.pause()
        assert len(feed.requests) == 1 and any("already isolated" in n.message for n in app._notifications)
        await pilot.press("H")
        await settle(pilot, polls=3)
        assert feed.requests[-1] == NetRequest(NetAction.HEAL)
        assert net_line(app, "broker-1") == "" and net_line(app, "broker-2") == ""
        assert leader_cell(app, led_by_1) == "1"
        assert any(n.message == "every link healed" for n in app._notifications)


@sync
async def test_the_keys_are_listed_in_the_help_and_the_footer() -> None:
    async with running(NetFakeSource(), size=(160, 48)) as (app, _pilot):
        rows = {binding_id: (key, text) for key, text, binding_id in app.help_rows()}
        assert rows["net.isolate"][0] == "i" and rows["net.heal"][0] == "H"
        footer = " ".join(str(w.render()) for w in app.query("FooterKey"))
        assert "Isolate" in footer and "Heal" in footer


@sync
async def test_at_100_columns_every_footer_key_shows_whole_and_none_covers_another() -> None:
    async with running(NetFakeSource(), size=(100, 30)) as (app, _pilot):
        regions = sorted((w.region, str(w.render())) for w in app.query("FooterKey"))
        assert any(text.startswith("i ") for _r, text in regions) and any(text.startswith("H ") for _r, text in regions)
        for (region, text), (after, _) in itertools.pairwise(regions):
            assert region.right <= after.x, f"{text!r} runs under the next key"
        assert regions[-1][0].right <= 100, f"{regions[-1][1]!r} is cut at the edge"


def test_a_network_change_is_a_marker_named_by_its_action_and_drawn_on_the_chart() -> None:
    detail = "network isolate broker-1: cut broker-2 -> broker-1; cut broker-1 -> broker-2"
    marks = markers([
        NetEvent(t=12.0, source="network", detail=detail, action="isolate", nodes=("broker-1",), rules=()),
        NodeEvent(t=3.0, source="broker-2", state=NodeState.KILLED, was=NodeState.RUNNING, cause=EndCause.KILLED,
                  actor=Actor.LAB),
        FaultEvent(t=3.0, source="lab", detail="kill broker-2", action="kill", targets=("broker-2",),
                   trigger="after 3s"),  # marked by the node's change
        FaultEvent(t=11.9, source="lab", detail="isolate broker-1: 5 rules", action="isolate", targets=("broker-1",),
                   trigger="after 11s"),  # marked by its change
        NetEvent(t=20.0, source="network", detail="network heal every link: cut broker-2 -> broker-1", action="heal",
                 nodes=(), rules=())])
    assert [(m.at_s, m.label, m.kind) for m in marks] == [
        (3.0, "kill broker-2", MarkerKind.FAULT), (12.0, "isolate broker-1", MarkerKind.NET),
        (20.0, "heal every link", MarkerKind.NET)]
    chart = render_chart([(t, 100.0) for t in range(25)], marks, 80, 12).plain
    assert "@12s isolate broker-1" in chart and "@20s heal every link" in chart and "5 rules" not in chart


def test_a_recording_s_net_lines_give_the_replay_the_rules_in_force_at_each_second(tmp_path: Path) -> None:
    started = 1_700_000_000.0
    (tmp_path / "timeline.json").write_text(json.dumps({"lab": "leader-failover", "started_at": started, "events": [
        {"t": 5.0, "ts": started + 5, "kind": "net", "source": "network", "detail": "network isolate broker-1: ...",
         "action": "isolate", "nodes": ["broker-1"], "rules": []}]}))
    lines = [{"ts": started + 1, "kind": "net", "rules": [], "nodes": list(NODES)},
             {"ts": started + 5, "kind": "net", "rules": [rule_to_json(r) for r in isolation("broker-1")],
              "nodes": list(NODES)},
             {"ts": started + 9, "kind": "net", "rules": [], "nodes": list(NODES)},
             {"ts": started + 10, "kind": "phase", "phase": "done"}]
    (tmp_path / RECORDING).write_text("".join(json.dumps(line) + "\n" for line in lines))
    recorded = RecordedRun(tmp_path)
    assert recorded.net(6.0) == (isolation("broker-1"), NODES)
    assert recorded.net(9.5) == ((), NODES)
    replay = ReplaySource(tmp_path)
    frame = replay.nodes(6.0)
    assert frame.net is not None and frame.net.marks("broker-1") == ("ISOLATED",)
    assert replay.nodes(0.5).net == NetView((), NODES)  # proxies recorded, nothing in force yet
    assert [m.label for m in replay.run(6.0).markers] == ["isolate broker-1"]


@sync
async def test_in_presenter_mode_an_isolated_node_shows_its_cut_in_place_of_cpu_and_memory() -> None:
    feed = NetFakeSource()
    async with running(feed, size=(100, 30)) as (app, pilot):
        await pilot.press("P")
        await settle(pilot)
        pane = app.query_one("#node-broker-1", NodePane)
        usage, facts = pane.query_one(".usage-line", Static), pane.query_one(".facts-line", Static)
        assert app.screen.has_class("-presenter") and usage.region.height, "no mark yet: cpu/memory shown"
        await pilot.press("1", "i")
        await settle(pilot)
        assert "ISOLATED" in net_line(app, "broker-1")
        inside = pane.content_region
        assert facts.region.height and inside.contains_region(facts.region)
        assert not usage.region.height, "cpu/memory gives its rows to the cut, not pushed past the pane's edge"
