"""`kafkalab replay RUN_DIR`: the console on a finished run, with keys for speed, pause and scrubbing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import TabbedContent

from kafkalab.feeds.frames import RunFrame
from kafkalab.feeds.replay_source import ReplayClock, ReplaySource, Stop
from kafkalab.ui import bindings
from kafkalab.ui.app import LabConsole
from kafkalab.ui.chart import legend_entry
from kafkalab.ui.controllers import MetadataPanes
from kafkalab.ui.partitions import PartitionTable
from kafkalab.ui.results import ResultsPane

REPLAY_POLL_S = 0.25
LINGER_S = 3.0  # with exit_at_end: the results stay on screen this long before the app quits
FRAME_POLLS = ("nodes", "admin", "run")  # the pollers reading the recording at the clock's second
CLUSTER_TABS = ("groups", "records")  # tabs that ask a live cluster


class ReplayConsole(LabConsole):
    BINDINGS: ClassVar[list[BindingType]] = [*bindings.REPLAY_BINDINGS]

    def __init__(self, source: ReplaySource, *, exit_at_end: bool = False, poll_s: float = REPLAY_POLL_S,
                 keymap: dict[str, str] | None = None, presenter: bool = False) -> None:
        """``exit_at_end``: quit a few seconds after the run's end is shown (to render a recording)."""
        super().__init__(source, source.broker_ids, boot=False, poll_s=poll_s, keymap=keymap, presenter=presenter,
                         metadata=MetadataPanes.for_nodes(source.node_names, source.voters))
        self.replay = source
        self.exit_at_end = exit_at_end
        self.jumping = False  # a jump's second is being shown: what differs from the second left is no news
        for poller in self.pollers:
            if poller.name in FRAME_POLLS:
                poller.fetch = stamped(poller.fetch, source.clock)
                poller.apply = unless_left(poller.apply, source.clock)

    picks_nodes = False  # the digits set the speed here

    def on_mount(self) -> None:
        super().on_mount()
        self.screen.add_class("-replay")  # no node buttons: nothing to act on
        self.query_one(PartitionTable).hide_offsets()
        results = self.query_one(ResultsPane)  # before the end, the verdict kept is this run's, not a last run's
        results.under_way = "the replay has not reached the run's end: its report appears here then"
        results.earlier_verdict = f"the replayed run's verdict ({self.replay.recorded.run_dir.name})"
        side = self.query_one("#side", TabbedContent)
        for tab in CLUSTER_TABS:  # they ask the cluster, which a replay has not: no records to send it
            side.hide_tab(f"tab-{tab}")
        self.screen_change_signal.subscribe(self, self.hold_behind_modals)
        self.show_instant()  # the first second at once, not empty panes until the first polls
        self.show_position()
        self.set_interval(0.25, self.show_position)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if (action == "show_tab" and parameters and parameters[0] in CLUSTER_TABS) or action == "next_group":
            return False
        return super().check_action(action, parameters)

    def hold_behind_modals(self, _screen: Screen[Any]) -> None:
        """While a question, the help or the palette is up, the replay waits (it played on behind them, its
        toasts over their buttons)."""
        self.replay.clock.hold(len(self.screen_stack) > 1)
        self.show_position()

    def show_position(self) -> None:
        """Where the replay is; its keys are in the footer."""
        if not self.query("#topbar"):  # the app is closing: its widgets are gone
            return
        clock = self.replay.clock
        length = minutes(clock.end)
        if clock.at_end:
            position = f"replay at the end ({length}): ← scrubs back"
        else:  # the run's clock, as the chart's marks (@28s), Results and the events in the top bar say it
            state = "paused" if clock.paused or clock.held else f"{clock.speed:g}x"
            at = clock.now()
            place = f"{minutes(at)} of {length}" if at >= 0 else f"{minutes(-at)} before the run"
            position = f"replay {state} · {place}"
        stop = self.replay.stop_here()
        if stop is not None:  # where PgUp/PgDn landed, beside the place: the news may be what the run waited for
            position += f" · event {stop + 1} of {len(self.replay.stops)}"
        if position != self.position:  # beside the phase: what the recorded run waited for took the news' place
            self.position = position
            self.update_topbar()
        if self.exit_at_end and clock.at_end and self.run_frame.report is not None and not self.quitting:
            self.quitting = True
            self.set_timer(LINGER_S, self.exit)

    def action_speed(self, speed: float) -> None:
        self.replay.clock.set_speed(speed)
        self.refresh_now()

    def action_pause(self) -> None:
        self.replay.clock.toggle_pause()
        self.refresh_now()

    def action_seek(self, delta_s: float) -> None:
        self.replay.clock.seek(delta_s)
        self.show_instant()
        self.show_position()

    def action_jump(self, where: str) -> None:
        """To the recording's start or end, or the previous or next stop: its events said in the top bar."""
        clock = self.replay.clock
        if where in ("start", "end"):
            clock.seek_to(clock.start if where == "start" else clock.end)
            said = f"the recording's {where}"
        else:
            stop = self.replay.next_stop() if where == "next" else self.replay.previous_stop()
            if stop is None:  # a toast: what the replayed run waited for may hold the top bar's news
                self.notify(f"no {'later' if where == 'next' else 'earlier'} event: Home and End go to the "
                            "recording's start and end")
                return
            clock.seek_to(stop.at)
            said = stop_words(stop)
        self.show_instant()
        self.show_position()
        self.set_action(said)

    def show_instant(self) -> None:
        """After a jump every pane shows the new second whole, as a console opened at it would (a frame of the
        second left, polled before the jump, is dropped): no toast, no cell marked as changed, since nothing
        happened between the two seconds; the change toasts compare with this second from now on."""
        instant = self.replay.instant()
        side = self.query_one("#side", TabbedContent)
        had_report = self.run_frame.report is not None
        self.jumping = True
        try:
            with self.batch_update():
                self.apply_nodes(instant.nodes)
                for snapshot in instant.snapshots:
                    self.apply_snapshot(snapshot)
                self.apply_run(instant.run)
                if had_report and instant.run.report is None and side.active == "tab-results":
                    self.action_show_tab("run")  # the report brought Results up; before it, the run's clients
                self.set_action(instant.run.message if instant.run.live else ended(instant.run))  # not the left's
        finally:
            self.jumping = False

    def apply_run(self, frame: RunFrame) -> None:
        was_live = self.run_frame.live
        super().apply_run(frame)
        if was_live and not frame.live:  # a replay starts no next run: not the live console's "g runs again"
            self.set_action(ended(frame))

    def notify(self, message: str, **options: Any) -> None:
        """No toast while a jump is shown (see :meth:`show_instant`)."""
        if not self.jumping:
            super().notify(message, **options)

    def action_quit_console(self) -> None:
        """A replay runs nothing: it quits without the live run's question (the recorded run is live)."""
        if not self.quitting:
            self.shut_down()

    def refresh_now(self) -> None:
        self.show_position()
        for poller in self.pollers:
            poller.poll_now()


def ended(frame: RunFrame) -> str:
    """The top bar's news once the replayed run is over."""
    if frame.report is not None and frame.report.analysed:
        return "the run's end: its report is in Results (v)"
    return f"the run's end ({frame.phase}): no report, Results (v) says why"


def stop_words(stop: Stop) -> str:
    """'@56s 3 leader changes', as the chart's legend names the marks there; the last stop, the verdict."""
    return legend_entry("", list(stop.markers)).strip() if stop.markers else "the verdict: its report is in Results"


def stamped(fetch: Callable[[], object], clock: ReplayClock) -> Callable[[], tuple[int, object]]:
    """``fetch`` with the jumps made before it read the clock."""
    return lambda: (clock.jumps, fetch())


def unless_left(apply: Callable[[Any], None], clock: ReplayClock) -> Callable[[tuple[int, Any]], None]:
    """``apply`` of a stamped frame, unless a jump came after it was read: it is of a second the replay left
    (shown now, it would stand for the new second, and the frame after it would toast its "changes")."""
    def apply_current(frame: tuple[int, Any]) -> None:
        jumps, value = frame
        if jumps == clock.jumps:
            apply(value)

    return apply_current


def minutes(seconds: float) -> str:
    """'1:05' for 65.4 s (the recording's cluster starts before the run's second 0: that is said in words)."""
    whole = max(0, int(seconds))
    return f"{whole // 60}:{whole % 60:02d}"
