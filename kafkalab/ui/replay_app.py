"""`kafkalab replay RUN_DIR`: the console on a finished run, with keys for speed, pause and scrubbing."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from kafkalab.feeds.replay_source import SPEEDS, ReplaySource
from kafkalab.ui.app import LabConsole
from kafkalab.ui.controllers import MetadataPanes
from kafkalab.ui.partitions import PartitionTable

SCRUB_S = 5.0
REPLAY_POLL_S = 0.25
LINGER_S = 3.0  # with exit_at_end: the results stay on screen this long before the app quits


class ReplayConsole(LabConsole):
    # priority: the digits pick brokers in the live console, here they set the speed
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(str(int(s)), f"speed({s})", f"{int(s)}x", id=f"replay.speed.{int(s)}", priority=True)
          for s in SPEEDS),
        Binding("space", "pause", "Pause/Play", id="replay.pause", priority=True),
        Binding("left", "seek(-5)", f"-{SCRUB_S:.0f}s", id="replay.back", priority=True),
        Binding("right", "seek(5)", f"+{SCRUB_S:.0f}s", id="replay.forward", priority=True),
    ]

    def __init__(self, source: ReplaySource, *, exit_at_end: bool = False, poll_s: float = REPLAY_POLL_S,
                 keymap: dict[str, str] | None = None, presenter: bool = False) -> None:
        """``exit_at_end``: quit a few seconds after the run's end is shown (to render a recording)."""
        super().__init__(source, source.broker_ids, boot=False, poll_s=poll_s, keymap=keymap, presenter=presenter,
                         metadata=MetadataPanes.for_nodes(source.node_names, source.voters))
        self.replay = source
        self.exit_at_end = exit_at_end

    picks_nodes = False  # the digits set the speed here

    def on_mount(self) -> None:
        super().on_mount()
        self.screen.add_class("-replay")  # no node buttons: nothing to act on
        self.query_one(PartitionTable).hide_offsets()
        self.show_position()
        self.set_interval(0.25, self.show_position)

    def show_position(self) -> None:
        """Where the replay is; its keys are in the footer."""
        if not self.query("#topbar"):  # the app is closing: its widgets are gone
            return
        clock = self.replay.clock
        length = minutes(clock.end - clock.start)
        if clock.at_end:
            self.set_action(f"replay at the end ({length}): ← scrubs back")
        else:
            state = "paused" if clock.paused else f"{clock.speed:g}x"
            self.set_action(f"replay {state} · {minutes(clock.now() - clock.start)} of {length}")
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
        self.refresh_now()

    def refresh_now(self) -> None:
        self.show_position()
        for poller in self.pollers:
            poller.poll_now()


def minutes(seconds: float) -> str:
    """'1:05' for 65.4 s: the replay's place from the recording's start (its cluster starts before the run's
    second 0, which read as a negative time)."""
    whole = max(0, int(seconds))
    return f"{whole // 60}:{whole % 60:02d}"
