"""The lab console: watch the cluster, break it, run the lab, read the report.

Everything that can block (admin calls, process signals, the run, Spark) happens in a :class:`Source`
called from thread workers; the app only renders frames and forwards keys.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.actions import parse as parse_action
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.notifications import Notify, SeverityLevel
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import Footer, Static, TabbedContent, TabPane

from kafkalab.admin import ClusterSnapshot
from kafkalab.admin.transactions import OpenTransaction
from kafkalab.cluster import NodeAction, NodeState
from kafkalab.cluster.netwiring import NetAction, NetRequest
from kafkalab.feeds import by_hand
from kafkalab.feeds.frames import ExerciseView, NodesFrame, RunFrame, no_cluster_yet
from kafkalab.feeds.groups_feed import AdminGroupsFeed, GroupsFeed
from kafkalab.feeds.net_view import NetView
from kafkalab.feeds.source import EXERCISE_ACTIONS, Choice, ConsoleAction, NotOffered, Question, Source
from kafkalab.feeds.topic_ops import NeedsReassignment
from kafkalab.feeds.workload import DEMO_TOPIC, waiting_for
from kafkalab.labs.results import Phase
from kafkalab.ui import bindings, repaint_fix
from kafkalab.ui.broker import BrokerPane
from kafkalab.ui.change_prompt import (
    CHANGE_PROMPT,
    SETTING_PROMPT,
    ChangePrompt,
    LineHistory,
    exercise_change,
    set_setting,
)
from kafkalab.ui.check_view import CheckChanged, check_word
from kafkalab.ui.consumers import ConsumersTable
from kafkalab.ui.controllers import MetadataPanes
from kafkalab.ui.exercise_keys import ExerciseKeys
from kafkalab.ui.groups import GroupsPane, open_reset
from kafkalab.ui.lab import LabPane
from kafkalab.ui.line import Line
from kafkalab.ui.modals import ChoiceScreen, ConfirmScreen, ErrorScreen, HelpScreen, InputScreen, TextScreen
from kafkalab.ui.nodepane import NodePane
from kafkalab.ui.partitions import PartitionsPane, PartitionTable, leader_moves
from kafkalab.ui.processor import ProcessorPane
from kafkalab.ui.producer import ProducerPane, presenter_line
from kafkalab.ui.records import RecordsPane
from kafkalab.ui.results import ResultsPane
from kafkalab.ui.toasts import KindNotification, ToastKind, toast_kind
from kafkalab.ui.workers import Poller

NODE_POLL_S = 0.5
ADMIN_POLL_S = 1.0
RUN_POLL_S = 0.5
GROUPS_POLL_S = 2.0
RECORDS_POLL_S = 0.3
MOVES_IN_A_TOAST = 3
# The smallest terminal every pane, button and tab stays usable in: four node panes of 24 columns (badge,
# buttons in two rows, log), the partition table beside the clients pane, the footer's keys. Below it the
# console says so instead of drawing cut-off panes.
MIN_SIZE = (100, 30)
# A node pane narrower than this cannot hold its four buttons in one row (Restart was cut): they go in two.
# The terminal's width alone does not say it: KRaft's three controllers make six panes of 26 at 160 columns.
ONE_BUTTON_ROW_WIDTH = 34
# Narrower still (six panes of 16 at 100 columns), not even two rows hold "Restart": the buttons give way
# and the keys (s, k, p, r, named in the footer) act on the picked node, as in presenter mode.
TWO_BUTTON_ROWS_WIDTH = 21
STATE_WORDS = {NodeState.KILLED: "killed", NodeState.STOPPED: "stopped", NodeState.PAUSED: "paused",
               NodeState.RUNNING: "running", NodeState.FAILED: "FAILED", NodeState.STOPPING: "stopping"}
# the state a node action leaves a node in: a key pressed on a node already there is "already" so
NODE_ACTION_LEAVES = {NodeAction.KILL: NodeState.KILLED, NodeAction.STOP: NodeState.STOPPED,
                      NodeAction.PAUSE: NodeState.PAUSED}


# the binding ids the `?` screen lists, by their group (a subclass's own keys, such as a replay's, too)
HELP_GROUPS = ("app.", "broker.", "net.", "run.", "lab.", "fix.", "incident.", "consumer.", "topic.", "view.",
               "results.", "group.", "replay.")
TAB_NAMES = {"run": "clients"}  # a tab's name in words, where its id says otherwise
WIDE_TABS = ("tab-results", "tab-groups", "tab-records", "tab-lab")  # narrow screen: the whole row, no partition table
SCROLLING_TABS = {"tab-results": "#results", "tab-lab": "#lab", "tab-groups": "#groups"}  # focused when shown
CONTRAST = Theme(
    name="kafkalab-contrast", primary="#ffff00", secondary="#00ffff", accent="#ff00ff", warning="#ffaf00",
    error="#ff3030", success="#00ff00", foreground="#ffffff", background="#000000", surface="#000000",
    panel="#202020", dark=True,
)


class LabConsole(App[None], ExerciseKeys):
    CSS_PATH = "app.tcss"
    TITLE = "kafkalab"
    BINDINGS: ClassVar[list[BindingType]] = [*bindings.BINDINGS]
    # Textual annotates it `ClassVar[...] | None`, which mypy takes for an instance variable
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [  # type: ignore[misc]  # Textual's isn't a ClassVar
        (0, "-narrow"), (130, "-wide")]
    picks_nodes = True  # the top bar says how to pick a node

    def __init__(self, source: Source, broker_ids: Iterable[int], *, clock: Callable[[], float] = time.monotonic,
                 keymap: dict[str, str] | None = None, presenter: bool = False, boot: bool = True,
                 screenshot_dir: Path | None = None, poll_s: float | None = None,
                 groups_feed: GroupsFeed | None = None, metadata: MetadataPanes | None = None) -> None:
        """``poll_s`` overrides every poll interval (tests poll fast; the defaults suit a person).
        ``metadata``: KRaft mode's controller panes in place of ZooKeeper's (default: ZooKeeper)."""
        repaint_fix.install()
        super().__init__()
        self.metadata = metadata or MetadataPanes()
        self.source = source
        self.broker_ids = list(broker_ids)
        self.clock = clock
        self.boot_source = boot
        self.presenter = presenter
        self.screenshot_dir = screenshot_dir or Path.cwd()
        self.selected: str | None = None
        self.ready = False
        self.snapshot: ClusterSnapshot | None = None
        self.run_frame = RunFrame()
        self.node_states: dict[str, NodeState] = {}
        self.net: NetView | None = None  # the network faults in force, as the last nodes frame said
        self.node_panes: dict[str, NodePane] = {}  # by node name, found once: a DOM query walks every widget
        self.last_action = ""
        self.typed_lines = LineHistory()  # the change prompt's, for ↑ ↓
        self.told_verdict = ""  # the last run's verdict, as its toast said it
        self.waiting = ""  # what a live run's producer waits for, shown until it is resolved
        self.task_shown = False  # a lab's task was opened before its first run
        self.before_first_run = False  # the Lab tab, opened for the task, takes the whole row until the first run
        self.quitting = False
        self.position = ""  # a replay's place in its run: in the top bar always, beside the phase
        self.register_theme(CONTRAST)
        if keymap:
            self.set_keymap(keymap)
        self.pollers: list[Poller[Any]] = [
            Poller(self, "nodes", source.nodes, self.apply_nodes, poll_s or NODE_POLL_S, self.show_error),
            Poller(self, "admin", source.snapshot, self.apply_snapshot, poll_s or ADMIN_POLL_S, self.show_error),
            Poller(self, "run", source.run, self.apply_run, poll_s or RUN_POLL_S, self.show_error),
        ]
        self.groups_feed = groups_feed or AdminGroupsFeed(source.cluster_now)
        self.pollers += [
            Poller(self, "groups", self.groups_feed.groups,
                   lambda f: self.query_one(GroupsPane).show(f, run_groups(self.run_frame)),
                   poll_s or GROUPS_POLL_S, self.show_error),
            Poller(self, "records", self.groups_feed.records, lambda f: self.query_one(RecordsPane).show(f),
                   poll_s or RECORDS_POLL_S, self.show_error),
        ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that cannot act here are not offered: brokers the cluster lacks, what the source cannot do."""
        if action == "select_node":
            return ConsoleAction.NODE in self.source.offers and (
                not parameters or parameters[0] in self.broker_ids or self.metadata.has_key(parameters[0]))
        if action in ConsoleAction.__members__.values() and action not in self.source.offers:
            return False
        if action in (ConsoleAction.START_RUN, ConsoleAction.STOP_RUN):  # one of the two at a time: the footer
            return self.run_frame.live == (action == ConsoleAction.STOP_RUN)  # has room for the network keys
        if action in (ConsoleAction.NODE, ConsoleAction.ISOLATE_NODE, ConsoleAction.HEAL_LINKS):
            return bool(self.node_states)  # no nodes yet (a lab's cluster starts with its run): nothing to act on
        if action in EXERCISE_ACTIONS:
            return exercise_offers(self.run_frame.exercise, ConsoleAction(action))
        if action in RunAction.__members__.values():
            return run_offers(self.run_frame, RunAction(action))
        return True

    # ---- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Line(id="topbar")
        yield Static(id="too-small")
        with Horizontal(id="nodes"):
            yield from self.metadata.compose()
            for broker_id in self.broker_ids:
                yield BrokerPane(broker_id)
        with Horizontal(id="main"):
            yield PartitionsPane(clock=self.clock)
            with TabbedContent(id="side", initial="tab-run"):
                with TabPane("Clients", id="tab-run"), Vertical():
                    yield ProducerPane()
                    yield ProcessorPane()
                    yield ConsumersTable()
                with TabPane("Lab", id="tab-lab"):
                    yield LabPane(id="lab")
                with TabPane("Results", id="tab-results"):
                    yield ResultsPane(self.source.reports, id="results")
                with TabPane("Groups", id="tab-groups"):
                    yield GroupsPane()
                with TabPane("Records", id="tab-records"):
                    yield RecordsPane(self.groups_feed)
        yield Footer()

    def on_mount(self) -> None:
        self.node_panes = {pane.node_name: pane for pane in self.query(NodePane)}
        self.title = self.source.title
        self.set_presenter(self.presenter)
        self.fit_to(self.size.width, self.size.height)
        self.update_topbar()
        if self.boot_source:
            self.run_worker(self._boot, name="boot", thread=True, exit_on_error=False)
        else:
            self.ready = True
        for poller in self.pollers:
            poller.start()
        self.ask_source()

    def ask_source(self) -> None:
        """A source with a question (its ports are another cluster's: free ports, attach, quit) is answered
        before it boots; its answer is carried out off the event loop (attaching asks the other cluster)."""
        question = self.source.question()
        if question is None:
            return

        def work(choice: str) -> None:
            try:
                self.source.choose(choice)
            except Exception as exc:
                self.call_from_thread(self.ask_source)
                self.call_from_thread(self.show_error, choice, exc)
                return
            self.call_from_thread(self._source_chosen)

        def answer(choice: str | None) -> None:
            if choice == "quit":
                self.shut_down()
            elif choice:
                self.run_worker(lambda: work(choice), name="choose", thread=True, exit_on_error=False)

        self.push_screen(ChoiceScreen(question), answer)

    def _source_chosen(self) -> None:
        self.title = self.source.title
        self.refresh_bindings()
        self.update_topbar()

    def on_resize(self, event: events.Resize) -> None:
        self.fit_to(event.size.width, event.size.height)
        self.update_topbar()

    def fit_to(self, width: int, height: int) -> None:
        """Below :data:`MIN_SIZE` the panes give way to a message saying what size is needed."""
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        self.screen.set_class(small, "-too-small")
        pane_width = width // (len(self.query_one("#nodes").children) or 1)
        self.screen.set_class(pane_width < ONE_BUTTON_ROW_WIDTH, "-crowded")
        self.screen.set_class(pane_width < TWO_BUTTON_ROWS_WIDTH, "-no-buttons")
        footer = self.query_one(Footer)
        footer.compact = width < self.HORIZONTAL_BREAKPOINTS[1][0]
        footer.show_command_palette = not footer.compact  # at 100 columns its ^p would cover the last keys
        if small:
            self.query_one("#too-small", Static).update(Text(
                f"The console needs a terminal of at least {MIN_SIZE[0]}x{MIN_SIZE[1]}; this one is {width}x{height}.\n"
                "Enlarge the window or zoom out (ctrl+minus in most terminals). ctrl+q quits.", justify="center"))

    def on_ready(self) -> None:
        freeze_long_lived()

    def on_unmount(self) -> None:
        gc.unfreeze()  # collectable again once the console is gone (tests run many apps in one process)

    def _boot(self) -> None:
        try:
            self.source.boot(lambda msg: self.call_from_thread(self.set_action, msg))
        except Exception as exc:
            self.call_from_thread(self.show_error, "cluster start", exc)
            return
        self.call_from_thread(self._booted)

    def _booted(self) -> None:
        """The source's last word on its boot stays up (a lab's cluster starts only with its run)."""
        self.ready = True
        self.notify(self.last_action or "ready", timeout=3)
        for poller in self.pollers:
            poller.poll_now()
        self.call_after_refresh(freeze_long_lived)  # the cluster's and admin client's objects too

    # ---- frames ----------------------------------------------------------------------------------
    def pane(self, name: str) -> NodePane:
        return self.node_panes[name]

    def apply_nodes(self, frame: NodesFrame) -> None:
        if not frame.infos and self.node_states:  # no cluster now (a reset): the old states and logs are gone
            for pane in self.node_panes.values():
                pane.forget()
            self.node_states = {}
            self.refresh_bindings()
        for info in frame.infos:
            pane = self.pane(info.name)
            pane.show_info(info)
            old = self.node_states.get(info.name)
            if old is not None and old != info.state and info.state in STATE_WORDS:
                self.notify(f"{info.name} {STATE_WORDS[info.state]}", severity="error"
                            if info.state in (NodeState.KILLED, NodeState.FAILED) else "information", timeout=4,
                            kind=ToastKind.NODE)
            if info.name not in self.node_states:
                self.refresh_bindings()  # the node keys are offered from the first node on
            self.node_states[info.name] = info.state
        for name, lines in frame.new_log_lines.items():
            self.pane(name).add_log(lines)
        for cut in frame.truncations:  # read by the source from the lines above: said here, never parsed
            self.notify(cut.said(), title="records truncated", severity="warning", timeout=10, kind=ToastKind.TRUNCATED)
        self.show_net(frame)
        self.query_one(PartitionTable).set_down(frozenset(
            info.broker_id for info in frame.infos
            if info.broker_id is not None and info.state in (NodeState.KILLED, NodeState.STOPPED, NodeState.FAILED)))
        self.metadata.show(self, frame, len(self.snapshot.brokers) if self.snapshot else 0)
        if frame.down_requested and not self.quitting:
            self.notify("`kafkalab cluster down` asked the console to stop")
            self.shut_down()

    def show_net(self, frame: NodesFrame) -> None:
        """Each pane's links cut (or delayed, dropped ...), the cut-off leaders in the table; a change, from a key,
        a lab's fault or `kafkalab net` in another terminal, said in a toast."""
        net, previous = frame.net, self.net
        if not frame.infos:  # no cluster now (a lab's next run starts its own): nothing holds
            net = None
        for pane in self.node_panes.values():
            pane.show_net(net.marks(pane.node_name) if net is not None else (), net.error if net is not None else "")
        self.query_one(PartitionTable).set_cut(net.cut_off() if net is not None and not net.error else {})
        self.net = net
        if net is None or net.error:
            return
        before = frozenset(previous.rules) if previous is not None and not previous.error else frozenset()
        if frozenset(net.rules) != before:
            self.notify(net.summary(), title="network", severity="warning" if net.rules else "information",
                        timeout=5, kind=ToastKind.NET)

    def apply_snapshot(self, snapshot: ClusterSnapshot) -> None:
        previous = self.snapshot
        role, controller = self.metadata.controller(snapshot)
        self.query_one(PartitionsPane).show(snapshot, role, controller)
        if no_cluster_yet(snapshot):  # a fresh cluster starting (or none): nothing of the last one holds
            self.snapshot = previous = None
            self.show_waiting()
        if not snapshot.reachable:
            for pane in self.query(BrokerPane):
                pane.show_roles(pane.controller and previous is not None, *self._counts(previous, pane.broker_id),
                                reachable=False)
            return
        self.snapshot = snapshot
        self.show_waiting()
        for pane in self.query(BrokerPane):
            pane.show_roles(controller == pane.broker_id, *self._counts(snapshot, pane.broker_id),
                            reachable=True)
        if previous is not None and previous.reachable:
            moves = leader_moves(previous, snapshot, short=True)
            if moves:
                more = f" (+{len(moves) - MOVES_IN_A_TOAST} more)" if len(moves) > MOVES_IN_A_TOAST else ""
                self.notify("\n".join(moves[:MOVES_IN_A_TOAST]) + more, title="leaders moved", timeout=5,
                            kind=ToastKind.LEADERS)

    @staticmethod
    def _counts(snapshot: ClusterSnapshot | None, broker_id: int) -> tuple[int | None, int | None]:
        if snapshot is None or broker_id not in snapshot.brokers:
            return None, None
        return snapshot.leader_counts().get(broker_id, (0, 0))

    def apply_run(self, frame: RunFrame) -> None:
        previous, self.run_frame = self.run_frame, frame
        rates = [rate for _t, rate in frame.throughput]
        self.query_one(ProducerPane).show(frame.producer, frame.settings, rates)
        self.query_one(ProcessorPane).show(frame.processor)
        self.query_one("#presenter-run", Line).show(presenter_line(frame.producer, frame.consumers, frame.leadership))
        self.query_one(ConsumersTable).show(frame.consumers)
        self.query_one(LabPane).show(frame.lab)
        self.query_one(ResultsPane).show(frame)
        self.show_task_first(previous, frame)
        self.follow_exercise(previous.exercise, frame.exercise)
        if frame.live != previous.live or any(run_offers(frame, a) != run_offers(previous, a) for a in RunAction):
            self.refresh_bindings()  # the footer and ? follow the run: start or stop, samples, consumer controls
        if frame.check != previous.check:
            self.post_message(CheckChanged(previous.check, frame.check))
        elif frame.report is not None and frame.report != previous.report and frame.check.grade is None:
            if frame.report.verdict != self.told_verdict:  # once, though the report may be rebuilt
                self.told_verdict = frame.report.verdict
                self.notify(frame.report.verdict, title=report_title(frame), timeout=8,
                            severity="information" if frame.report.ok else "warning", kind=ToastKind.RUN)
            self.action_show_tab("results")
        elif frame.report is None:
            self.told_verdict = ""
        if frame.message != previous.message and frame.message and frame.live:
            self.set_action(frame.message)
        if previous.live and not frame.live:  # the run's last word, not a stale "run started"
            self.set_action(run_ended(frame))
        elif (frame.phase, frame.lab and frame.lab.lab_id) != (previous.phase, previous.lab and previous.lab.lab_id):
            self.update_topbar()
        if frame.live != previous.live or frame.electing != previous.electing:
            self.show_waiting()

    def show_task_first(self, previous: RunFrame, frame: RunFrame) -> None:
        """Before a lab's first run its task (or instructions) is what the console shows, in the whole row: the
        table has nothing to show yet. The first run brings the clients and the table back."""
        if not self.task_shown and frame.lab is not None and frame.phase == Phase.IDLE and frame.report is None:
            self.task_shown = self.before_first_run = True
            self.action_show_tab("lab")
            self.query("#main").set_class(True, "-task")
        elif self.before_first_run and frame.live and not previous.live:
            self.before_first_run = False
            self.query("#main").set_class(False, "-task")
            if self.query_one("#side", TabbedContent).active == "tab-lab":
                self.action_show_tab("run")

    def follow_exercise(self, previous: ExerciseView | None, now: ExerciseView | None) -> None:
        """The exercise's keys follow it (no hint left, the cause named); a graded check that failed says why."""
        if now is None:
            return
        offered = tuple(exercise_offers(now, a) for a in EXERCISE_ACTIONS)
        if previous is None or offered != tuple(exercise_offers(previous, a) for a in EXERCISE_ACTIONS):
            self.refresh_bindings()

    def show_waiting(self) -> None:
        """While a run is live, say the leader being elected after a fault, or what its producer waits for."""
        frame, topic = self.run_frame, self.run_frame.settings.get("producer.topic", DEMO_TOPIC)
        waiting = frame.electing or (waiting_for(self.snapshot, topic) if frame.live and self.snapshot else "")
        if waiting != self.waiting:
            self.waiting = waiting
            self.update_topbar()

    # ---- status ----------------------------------------------------------------------------------
    def set_action(self, message: str) -> None:
        self.last_action = message
        self.update_topbar()

    def update_topbar(self) -> None:
        frame = self.run_frame
        lab = frame.lab.lab_id if frame.lab else self.source.label
        phase_style = "bold black on green" if frame.live else "bold reverse"
        hint = Text()
        if not self.waiting:  # what the run waits for needs the room more (the picked pane is outlined anyway)
            if self.selected:
                hint = Text.assemble(("  selected: ", "dim"), (self.selected, "bold"))
            elif self.picks_nodes:
                hint = Text(f"  pick a node: 1..{max(self.broker_ids, default=1)}, {self.metadata.keys_hint()}",
                            style="dim")
        news = Text()
        if self.waiting:
            news = Text.assemble(("  » ", "dim"), (self.waiting, "bold yellow"))
        elif self.last_action:
            news = Text.assemble(("  » ", "dim"), (self.last_action, "italic"))
        state = Text.assemble(f" {lab} ", (f" run: {frame.phase} ", phase_style))
        if frame.check.running:
            state.append(f" {frame.check.text} ", style="bold black on yellow")
        if self.position:
            state.append(f" {self.position} ", style="bold reverse")
        platform = Text(f" {self.source.platform} ", style="dim") if self.source.platform else Text()
        self.query_one("#topbar", Line).show(fit_topbar(state, news, hint, self.size.width, platform))

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True, kind: ToastKind = ToastKind.NEWS) -> None:
        """A toast of ``kind``: it replaces the one of that kind on screen (see :class:`ToastKind`). Thread-safe,
        as Textual's: the notification is posted, and the older one goes as it arrives (:meth:`fold_toast`)."""
        self.post_message(Notify(KindNotification(
            message, title, severity, self.NOTIFICATION_TIMEOUT if timeout is None else timeout, markup=markup,
            kind=kind)))

    @on(Notify)
    def fold_toast(self, event: Notify) -> None:
        """Before Textual's own handler shows the new toast: the one of its kind on screen goes."""
        kind = toast_kind(event.notification)
        for shown in list(self._notifications):
            if toast_kind(shown) == kind:
                self._unnotify(shown, refresh=False)

    def key_of(self, binding_id: str, default: str) -> str:
        """The key of a binding in words (after the user's keymap), ``default`` if none is active."""
        for key, active in self.active_bindings.items():
            if active.binding.id == binding_id:
                return active.binding.key_display or key  # "ctrl+q" in words, not Textual's "^q"
        return default

    def show_error(self, where: str, exc: BaseException, title: str = "") -> None:
        """Errors of workers and actions: a dismissable modal titled with what failed (or ``title``), never the
        end of the app."""
        message = str(exc) or type(exc).__name__
        if isinstance(exc, NotOffered):
            self.notify(message, severity="warning", timeout=5)
            return
        if isinstance(exc, NeedsReassignment):
            self.offer_reassignment(exc)
            return
        if any(isinstance(s, ErrorScreen) and s.message == message for s in self.screen_stack):
            return
        self.push_screen(ErrorScreen(title or f"{where} failed", message))

    def offer_reassignment(self, need: NeedsReassignment) -> None:
        def answer(yes: bool | None) -> None:
            if yes:
                self.set_action(f"reassigning {need.topic} to RF {need.wanted} ...")
                self.in_thread(f"reassign {need.topic}", lambda: self.source.reassign_topic(need.topic, need.wanted))
            else:
                self.set_action(f"{need.topic} keeps RF {need.current}")

        self.push_screen(ConfirmScreen(f"Change {need.topic} from RF {need.current} to RF {need.wanted}?",
                                       f"{need}: kafkalab submits one (Kafka's admin API) and the ISR column "
                                       "shows the new replicas catch up."), answer)

    def in_thread(self, what: str, call: Callable[[], object], done: str = "", toast: bool = False,
                  refused: str = "", then: Callable[[Any], None] | None = None) -> None:
        """Run a source call off the event loop; its error shows in a modal (titled ``refused`` when given),
        its success as ``done`` (or what the call returned), that also as a toast with ``toast`` when it says
        more than ``done``; ``then`` is given what the call returned, on the event loop."""

        def work() -> None:
            try:
                said = call()
            except Exception as exc:
                self.call_from_thread(self.show_error, what, exc, refused)
                return
            if then is not None:
                self.call_from_thread(then, said)
                said = None
            if done or isinstance(said, str):
                message = said if isinstance(said, str) else done
                self.call_from_thread(self.set_action, message)
                if toast and message != done:
                    self.call_from_thread(self.notify, message, timeout=6)
            for poller in self.pollers:
                self.call_from_thread(poller.poll_now)

        self.run_worker(work, name=what, group="actions", thread=True, exit_on_error=False)

    # ---- node actions ----------------------------------------------------------------------------
    def action_select_node(self, number: int) -> None:
        name = self.metadata.node_for_key(number) or f"broker-{number}"
        if name == f"broker-{number}" and number not in self.broker_ids:
            self.notify(f"there is no broker {number}: brokers are {', '.join(map(str, self.broker_ids))}",
                        severity="warning", timeout=3)
            return
        self.selected = name
        for pane in self.node_panes.values():
            pane.set_selected(pane.node_name == name)
        self.update_topbar()

    def on_broker_pane_act(self, event: BrokerPane.Act) -> None:
        self.action_select_node(event.broker_id)
        self.action_node(event.action)

    def action_node(self, action: str) -> None:
        if self.selected is None:
            self.notify("pick a node first: 1..9 for a broker, 0 for ZooKeeper (KRaft: a controller's key, "
                        "! @ # as its pane's title shows, or 0 for each in turn)", severity="warning", timeout=3)
            return
        name = self.selected
        state = self.node_states.get(name, NodeState.STOPPED)
        if action == "pause_resume":  # the keys that toggle: what they do depends on the node's state
            act = NodeAction.RESUME if state == NodeState.PAUSED else NodeAction.PAUSE
        elif action == "start_restart":
            act = NodeAction.RESTART if state in (NodeState.RUNNING, NodeState.PAUSED) else NodeAction.START
        else:
            act = NodeAction(action)
        if why := nothing_to_do(name, state, act, self.key_of("broker.start", "r")):
            self.set_action(why)
            self.notify(why, severity="warning", timeout=4)
            return
        last = self.last_isr_of(name) if act in (NodeAction.STOP, NodeAction.KILL) else []
        if last:
            shown = ", ".join(last[:6]) + (f" and {len(last) - 6} more" if len(last) > 6 else "")
            self.push_screen(
                ConfirmScreen(f"{act.capitalize()} {name}, the last in-sync replica?",
                              f"{len(last)} partition(s) go offline: {shown}"),
                lambda yes: self.do_node(name, act) if yes else self.set_action(f"{act} {name} cancelled"),
            )
            return
        self.do_node(name, act)

    def action_isolate_node(self) -> None:
        """The picked node cut from every other node through the cluster's proxy (its clients kept)."""
        if self.selected is None:
            self.notify("pick a node first: 1..9 for a broker, 0 for ZooKeeper, then "
                        f"{self.key_of('net.isolate', 'i')} isolates it", severity="warning", timeout=3)
            return
        name = self.selected
        if self.net is not None and self.net.isolated(name):
            self.notify(f"{name} is already isolated: {self.key_of('net.heal', 'H')} heals every link",
                        severity="warning", timeout=4)
            return
        self.net_request(f"isolating {name}", NetRequest(NetAction.ISOLATE, (name,)))

    def action_heal_links(self) -> None:
        self.net_request("healing every link", NetRequest(NetAction.HEAL))

    def net_request(self, doing: str, request: NetRequest) -> None:
        """``request`` through the source, off the event loop: what it changed in the top bar (the panes' marks
        follow at once), a refusal (no proxies) there too and in a toast, a failure in a modal."""
        self.set_action(f"{doing} ...")

        def call() -> str:
            try:
                return self.source.net_request(request)
            except NotOffered as exc:
                self.call_from_thread(self.set_action, str(exc))
                raise

        self.in_thread(doing, call, refused="network fault refused")

    def do_node(self, name: str, action: NodeAction) -> None:
        self.set_action(f"{action} → {name}")
        self.in_thread(f"{action} {name}", lambda: self.source.node_action(name, action))

    def last_isr_of(self, name: str) -> list[str]:
        """Partitions whose only in-sync replica is this broker."""
        if self.snapshot is None or not name.startswith("broker-"):
            return []
        broker_id = int(name.removeprefix("broker-"))
        return [f"{p.topic}/{p.partition}" for p in self.snapshot.partitions if p.isr == (broker_id,)]

    # ---- run actions -----------------------------------------------------------------------------
    def action_start_run(self) -> None:
        self.set_action("starting the run ...")
        self.in_thread("start run", self.source.start_run, "run started", toast=True)

    def action_stop_run(self) -> None:
        self.set_action("stopping the run ...")
        self.in_thread("stop run", self.source.stop_run, "run stopped")

    def action_reset_lab(self) -> None:
        def reset(yes: bool | None) -> None:
            if yes:
                self.set_action("resetting the lab ...")
                self.in_thread("reset lab", self.source.reset, "lab reset to a clean state")

        exercise = self.run_frame.exercise
        kept = "your changes (e)" if exercise is None else \
            f"your changes (e), {'the hints you took and ' if exercise.fixable else ''}your progress"
        self.push_screen(ConfirmScreen("Reset the lab to a clean state?",
                                       "The run stops and the lab's cluster ends, its data deleted (topics, offsets, "
                                       f"groups): the next run starts a fresh one. Kept: {kept}, and the files of past "
                                       "runs."), reset)

    def action_send_control(self, word: str) -> None:
        self.in_thread(f"send {word}", lambda: self.source.send_control(word), f"sent {word!r} to the consumers")

    def action_edit_setting(self) -> None:
        """In a fix lab, `e` takes any change the exercise knows (settings, topics, brokers, live actions, taking
        one back); elsewhere a client setting for the next run."""
        exercise = self.run_frame.exercise
        if exercise is not None and exercise.fixable and ConsoleAction.CHECK_FIX in self.source.offers:
            prompt = ChangePrompt(CHANGE_PROMPT, lambda line: exercise_change(self.source, line), self.typed_lines)
        else:
            prompt = ChangePrompt(SETTING_PROMPT, lambda line: set_setting(self.source, line), self.typed_lines)
        self.push_screen(prompt, self.prompt_did)

    def prompt_did(self, said: str | None) -> None:
        """What a prompt's line did (None: closed without one): in the top bar and a toast, the panes polled."""
        if said:
            self.set_action(said)
            self.notify(said, timeout=6)
            for poller in self.pollers:
                poller.poll_now()

    def action_edit_topic(self) -> None:
        def apply(text: str | None) -> None:
            if not text:
                return
            try:
                topic, rf, min_isr = parse_topic_request(text)
            except ValueError as exc:
                self.notify(str(exc), severity="error")
                return
            self.in_thread(f"topic {topic}", lambda: self.source.alter_topic(topic, rf, min_isr),
                           f"topic {topic}: done")

        self.push_screen(InputScreen(Text("Create or alter a topic: NAME [rf=N] [min.isr=N]"),
                                     "test-topic rf=3 min.isr=2"), apply)

    def action_add_partitions(self) -> None:
        """`kafkalab topic alter NAME --partitions N` from a dialog: the topic grown now (Kafka cannot take
        partitions back, so it is never planned for the next runs)."""
        cluster = self.source.cluster_now()

        def apply(text: str | None) -> None:
            if not text:
                return
            try:
                topic, total = parse_partitions_request(text)
            except ValueError as exc:
                self.notify(str(exc), severity="error")
                return
            self.set_action(f"adding partitions to {topic} ...")
            self.in_thread(f"add partitions to {topic}", lambda: by_hand.add_partitions(cluster, topic, total),
                           toast=True)

        if why := self.no_cluster_action(cluster is None):
            self.notify(why, severity="warning", timeout=4)
            return
        topics = sorted({p.topic for p in self.snapshot.partitions}) if self.snapshot else []
        example = f"{topics[0] if topics else DEMO_TOPIC} 8"
        self.push_screen(InputScreen(Text("Add partitions: TOPIC N (the new total; Kafka cannot remove them)"),
                                     example), apply)

    def action_abort_transaction(self) -> None:
        """`kafkalab txn abort` from a list: the transactions open on the cluster, the one picked aborted after
        a confirmation."""
        cluster = self.source.cluster_now()
        if why := self.no_cluster_action(cluster is None):
            self.notify(why, severity="warning", timeout=4)
            return

        def confirm(chosen: OpenTransaction) -> None:
            def answer(yes: bool | None) -> None:
                if yes:
                    self.set_action(f"aborting the transaction on {chosen.topic}-{chosen.partition} ...")
                    self.in_thread("abort transaction", lambda: by_hand.abort_by_hand(cluster, chosen), toast=True)
                else:
                    self.set_action("abort cancelled")

            self.push_screen(ConfirmScreen(
                f"Abort the transaction of producer {chosen.producer_id} on {chosen.topic}-{chosen.partition}?",
                f"An abort marker at its end: read_committed consumers skip its records (open since offset "
                f"{chosen.start_offset}) and read on; its producer, if alive, fails its next send."), answer)

        def pick(found: list[OpenTransaction]) -> None:
            question = transaction_question(found, time.time())
            if question is None:
                said = "no open transaction on the cluster: nothing to abort"
                self.set_action(said)
                self.notify(said, severity="warning", timeout=4)
                return
            self.push_screen(ChoiceScreen(question),
                             lambda answer: confirm(found[int(answer)]) if answer and answer.isdigit()
                             else self.set_action("abort cancelled"))

        self.set_action("looking for open transactions ...")
        self.in_thread("find open transactions", lambda: by_hand.open_transactions_now(cluster), then=pick)

    def no_cluster_action(self, no_cluster: bool) -> str:
        """Why a key acting on the live cluster cannot now ('' when it can)."""
        if self.run_frame.check.running:
            return "a graded check is under way: wait for its grade, or stop it (x)"
        return "no cluster yet: a lab's cluster starts with its run (press g)" if no_cluster else ""

    # ---- views -----------------------------------------------------------------------------------
    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """The results, groups and records need more width than the clients: on a narrow screen their tab
        takes the whole row. A tab that scrolls takes the focus, so the arrow and page keys scroll it (at
        100x30 the chart lies below the report's table). (A tab activated as the console closes comes after
        its widgets went: nothing to widen then.)"""
        self.query("#main").set_class(event.pane.id == "tab-results", "-results")
        self.query("#main").set_class(event.pane.id in WIDE_TABS, "-wide")
        self.query("#main").set_class(self.before_first_run and event.pane.id == "tab-lab", "-task")
        if scroller := SCROLLING_TABS.get(event.pane.id or ""):
            for widget in self.query(scroller):
                widget.focus(scroll_visible=False)
        if event.pane.id == "tab-records":  # its lines take the keys until esc: nothing else to do there first
            self.query_one(RecordsPane).focus_line()

    def action_show_tab(self, name: str) -> None:
        """Presenter mode hides the side pane, except for the results: the room must see the report. Any other
        tab's key there takes the results away again (on a narrow screen they hide the partition table)."""
        self.query_one("#side", TabbedContent).active = f"tab-{name}"
        if self.presenter and name != "results":
            self.set_action(f"presenter mode shows the table; P leaves it for the {TAB_NAMES.get(name, name)} tab")

    def action_next_group(self) -> None:
        self.action_show_tab("groups")
        picked = self.query_one(GroupsPane).select_next()
        self.set_action(f"group {picked}" if picked else "no consumer group yet")

    def action_reset_group(self) -> None:
        def done(message: str | None) -> None:
            if message:
                self.set_action(message)
                for poller in self.pollers:
                    poller.poll_now()

        self.action_show_tab("groups")
        why_not = open_reset(self.query_one(GroupsPane), self.groups_feed, self.push_screen, done)
        if why_not:
            self.notify(why_not, severity="warning", timeout=3)

    def action_samples(self) -> None:
        self.push_screen(TextScreen("anomaly samples (partition, offset, message id)",
                                    self.query_one(ResultsPane).samples_text()))

    def action_toggle_presenter(self) -> None:
        self.set_presenter(not self.presenter)

    def set_presenter(self, on: bool) -> None:
        self.presenter = on
        self.screen.set_class(on, "-presenter")
        self.theme = "kafkalab-contrast" if on else "textual-dark"

    def action_save_svg(self) -> None:
        name = time.strftime("kafkalab-%Y%m%d-%H%M%S.svg")
        path = self.save_screenshot(name, str(self.screenshot_dir))
        self.notify(f"screenshot saved: {path}", timeout=5)

    def offered(self, binding: Binding) -> bool:
        _namespace, name, params = parse_action(binding.action)
        return self.check_action(name, params) is not False

    def help_rows(self) -> list[tuple[str, str, str]]:
        rows = []
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            if not self.offered(binding):
                continue
            if binding.id and binding.id.startswith(HELP_GROUPS):
                rows.append((self.get_key_display(binding) or key, binding.description, binding.id))
        return rows

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.help_rows()))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette offers the console's own actions in its own words, one quit and one help. Not Textual's:
        its Quit ended the console at once, past the question a live run asks, beside the console's own; its
        Keys, Maximize, Screenshot and Theme doubled or bypassed the console's keys (?, f12, P)."""
        seen = set()
        for _key, active in screen.active_bindings.items():
            b: Binding = active.binding
            if b.id and b.id not in seen and not b.id.startswith("broker.select") and self.offered(b):
                seen.add(b.id)
                said = f"{b.tooltip} · " if b.tooltip else ""
                yield SystemCommand(b.description, f"{said}key {self.get_key_display(b)} · {b.id}",
                                    lambda action=b.action: self.call_later(self.run_action, action))

    def action_help_quit(self) -> None:
        """ctrl+c, which Textual binds to this: say how to quit. Textual's own looks for its `quit` action, which
        the console replaced by its own (it asks while a run is live), so ctrl+c said nothing."""
        live = " (it asks first: a run is live)" if self.run_frame.live else ""
        self.notify(f"{self.key_of('app.quit', 'ctrl+q')} quits the console{live}", title="ctrl+c does not quit",
                    timeout=4)

    # ---- quit --------------------------------------------------------------------------------------
    def action_quit_console(self) -> None:
        if self.quitting:
            return
        if self.run_frame.live:
            self.push_screen(ConfirmScreen("A run is live. Stop it and quit?",
                                           "Every process the console started is ended."
                                           + (" The attached cluster keeps running."
                                              if self.source.after_quit else "")),
                             lambda yes: self.shut_down() if yes else None)
            return
        self.shut_down()

    def shut_down(self) -> None:
        """Stop polling, end every process the source started (off the event loop), then exit."""
        self.quitting = True
        for poller in self.pollers:
            poller.stop()
        self.set_action(self.source.closing)

        def work() -> None:
            try:
                self.groups_feed.close()
                self.source.close()
            finally:
                self.call_from_thread(self.exit)

        self.run_worker(work, name="shutdown", thread=True, exit_on_error=False)


def nothing_to_do(name: str, state: NodeState, action: NodeAction, start_key: str) -> str:
    """Why ``action`` does nothing to a node in ``state`` ('' when it acts), so a key with nothing to do says so:
    a kill of a killed broker, a stop of a stopped one, a pause of one that is down were silent."""
    word = STATE_WORDS.get(state, state.value)
    already = "already " if NODE_ACTION_LEAVES.get(action) == state else ""
    starts = f" ({start_key} starts it)" if not state.alive else ""
    if action in (NodeAction.KILL, NodeAction.STOP) and not state.alive:
        return f"{name} is {already}{word}: nothing to {action}{starts}"
    if action == NodeAction.STOP and state == NodeState.STOPPING:
        return f"{name} is already stopping"
    if action == NodeAction.PAUSE and state not in (NodeState.RUNNING, NodeState.STARTING):
        return f"{name} is {word}: nothing to pause{starts}"
    if action == NodeAction.START and state.alive and state != NodeState.STOPPING:
        return f"{name} is already {state.value}: nothing to start"
    return ""


class RunAction(StrEnum):
    """Keys that act on what a run brought (each value is the app's action name)."""

    SEND_CONTROL = ConsoleAction.SEND_CONTROL.value  # the consumers' control words, while they run
    SAMPLES = "samples"  # the report's anomaly samples, once a run ended (one before its analysis says so)


def run_offers(frame: RunFrame, action: RunAction) -> bool:
    """Whether the run on screen gives ``action`` something to act on: before any run the palette offered
    "Anomaly samples" (no report) and "Consumers: crash" (no consumer), and picking them did nothing useful."""
    if action == RunAction.SEND_CONTROL:
        return frame.live and bool(frame.consumers)
    return frame.report is not None


def exercise_offers(exercise: ExerciseView | None, action: ConsoleAction) -> bool:
    """Whether the exercise on screen gives ``action`` something to do (the source offers it at all)."""
    if exercise is None:
        return False
    if action == ConsoleAction.CHECK_FIX:
        return exercise.fixable
    if action == ConsoleAction.TAKE_HINT:
        return exercise.next_hint is not None
    if action == ConsoleAction.ANSWER_INCIDENT:
        return exercise.incident is not None and not exercise.incident.revealed
    if action == ConsoleAction.GIVE_UP:
        return exercise.fixable or not exercise.solved
    return True


def freeze_long_lived() -> None:
    """Exempt every object alive now from the garbage collector's full passes.

    Textual, the widgets, their styles and the cluster objects are ~100k objects that live as long as the
    console; a full pass walked them all, ~80 ms of CPU every few seconds (several times that in wall time
    on a busy machine): the slowest key presses. Frozen, a full pass walks only what came later (~20k
    objects, ~15 ms). No collection first: it would be one such pause, during the cluster's start.
    """
    gc.freeze()


def run_groups(frame: RunFrame) -> tuple[str, ...]:
    """The groups the run's consumers use, for the Groups tab to name one the brokers do not know."""
    return tuple(sorted({c.group for c in frame.consumers}))


def report_title(frame: RunFrame) -> str:
    """The end-of-run toast's title: "report ready" only when there is a report."""
    if frame.report is not None and frame.report.analysed:
        return "report ready"
    return "run stopped: no report" if frame.phase == Phase.STOPPED else "run failed: no report"


def run_ended(frame: RunFrame) -> str:
    """The top bar's word once a run is over (beside its phase, "run: done"): where its report is, or why
    there is none."""
    if said := check_word(frame.check):
        return said
    report = frame.report
    if report is not None and report.analysed:
        return "report in Results (v); g runs again"
    if frame.phase == Phase.STOPPED:
        return "run stopped: g runs again"
    if report is None:
        return f"run {frame.phase}: g starts the next run"
    return f"run failed, no report: {report.verdict}"


def fit_topbar(state: Text, news: Text, hint: Text, width: int, platform: Text | None = None) -> Text:
    """The top bar in ``width`` columns: the lab and the run's phase, then its news (what the run waits for,
    the last action's outcome) whole; the platform (mode and Kafka version), the node hint and the brand only
    where they fit (the hint goes first, then the brand, then the platform), the news cut (with an ellipsis)
    only when it alone is wider than the line."""
    brand = Text(" kafkalab ", style="bold black on yellow")
    plat = platform or Text()
    for parts in ((brand, state, plat, hint, news), (brand, state, plat, news), (state, plat, news), (state, news)):
        line = Text.assemble(*parts)
        if line.cell_len <= width:
            return line
    line.truncate(max(width, 1), overflow="ellipsis")
    return line


def parse_partitions_request(text: str) -> tuple[str, int]:
    """'test-topic 8' -> ('test-topic', 8): a topic and its new partition count."""
    words = text.split()
    if len(words) != 2 or not words[1].isdigit() or int(words[1]) < 1:
        raise ValueError(f"{text.strip()!r}: give the topic and its new partition count, e.g. test-topic 8")
    return words[0], int(words[1])


TRANSACTION_CHOICES = 9  # one a digit key


def transaction_question(found: list[OpenTransaction], now_s: float) -> Question | None:
    """The open transactions to pick one from, each on its digit (the first nine); None without one."""
    if not found:
        return None
    shown = found[:TRANSACTION_CHOICES]
    lines = [f"{i + 1}  {t.topic}-{t.partition}  producer {t.producer_id} (epoch {t.producer_epoch})  open since "
             f"offset {t.start_offset}, last written {max(0.0, now_s - t.last_timestamp / 1000):.0f} s ago"
             for i, t in enumerate(shown)]
    if len(found) > len(shown):
        lines.append(f"... and {len(found) - len(shown)} more: `kafkalab txn abort` names any of them")
    choices = tuple(Choice(str(i + 1), f"{t.topic}-{t.partition}", str(i)) for i, t in enumerate(shown))
    return Question(f"Abort which open transaction? ({len(found)} open)", "\n".join(lines),
                    (*choices, Choice("escape", "Cancel", "cancel")))


def parse_topic_request(text: str) -> tuple[str, int | None, int | None]:
    """'test-topic rf=3 min.isr=2' -> ('test-topic', 3, 2)."""
    words = text.split()
    if not words or "=" in words[0]:
        raise ValueError("start with the topic name, e.g. test-topic rf=3 min.isr=2")
    values: dict[str, int] = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if key not in ("rf", "min.isr") or not sep or not value.isdigit() or int(value) < 1:
            raise ValueError(f"{word!r}: give rf=N or min.isr=N with N >= 1")
        values[key] = int(value)
    return words[0], values.get("rf"), values.get("min.isr")
