"""Every key of the console and of its replay, with an id and a description: the footer, the `?` screen, the
command palette and the user keymap all read these lists.

A user keymap lives in ``$XDG_CONFIG_HOME/kafkalab/keymap.toml`` (or ``KAFKALAB_KEYMAP``)::

    [keymap]
    broker.kill = "K"
    run.start = "f5"
    replay.pause = "z"
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from textual.binding import Binding

from kafkalab.cluster.spec import CONTROLLER_ID_BASE
from kafkalab.errors import KafkalabError

# the control words consumers obey, by key
CONTROL_KEYS = {"Q": "quit", "C": "crash", "W": "wait"}
# KRaft's dedicated controllers, by index (node 100 + index): their keys, shift and the digit on a US keyboard,
# as the key's name and as shown (the digits pick the brokers 1..9, and 0 ZooKeeper or the controllers in turn)
CONTROLLER_KEYS = {1: ("exclamation_mark", "!"), 2: ("at", "@"), 3: ("number_sign", "#")}
# the side tabs, by key: (tab, title)
TAB_KEYS = {"l": ("lab", "Lab"), "u": ("run", "Clients"), "v": ("results", "Results"),
            "o": ("groups", "Consumer groups"), "c": ("records", "Records")}
# a replay's speeds (each on its digit) and how far an arrow scrubs it
REPLAY_SPEEDS = (1, 2, 4)
SCRUB_S = 5

BINDINGS: list[Binding] = [
    Binding("question_mark", "help", "Keys", id="app.help", key_display="?",
            tooltip="every key that works here, with its id for the keymap"),
    Binding("ctrl+q", "quit_console", "Quit", id="app.quit", priority=True,
            tooltip="end every process the console started; asks first while a run is live"),
    *(Binding(str(n), f"select_node({n})",
              f"Pick {'ZooKeeper (KRaft: the controllers in turn)' if n == 0 else f'broker {n}'}",
              id=f"broker.select.{n}", show=False) for n in range(10)),
    *(Binding(key, f"select_node({CONTROLLER_ID_BASE + n})", f"Pick controller {CONTROLLER_ID_BASE + n}",
              id=f"broker.select.{CONTROLLER_ID_BASE + n}", key_display=shown, show=False)
      for n, (key, shown) in CONTROLLER_KEYS.items()),
    Binding("s", "node('stop')", "Stop", id="broker.stop"),
    Binding("k", "node('kill')", "Kill", id="broker.kill"),
    Binding("p", "node('pause_resume')", "Pause", id="broker.pause",
            tooltip="pause the picked node (SIGSTOP); on a paused node, resume it"),
    Binding("r", "node('start_restart')", "Restart", id="broker.start",
            tooltip="start the picked node when it is down, stop and start it when it is up"),
    Binding("g", "start_run", "Start run", id="run.start"),
    Binding("x", "stop_run", "Stop run", id="run.stop"),
    Binding("n", "reset_lab", "Reset lab", id="lab.reset", show=False),
    *(Binding(key, f"send_control('{word}')", f"Consumers: {word}", id=f"consumer.{word}", show=False)
      for key, word in CONTROL_KEYS.items()),
    Binding("f", "check_fix", "Check fix", id="fix.check"),
    Binding("h", "take_hint", "Hint", id="fix.hint"),
    Binding("d", "answer_incident", "Name the cause", id="incident.answer"),
    # last of the footer's keys: at 100 columns a fix lab's keys push them out first (the ? screen lists them)
    Binding("i", "isolate_node", "Isolate", id="net.isolate",
            tooltip="cut the picked node from every other node through the network-fault proxy (on unless "
                    "--no-net-proxies); its clients still reach it"),
    Binding("H", "heal_links", "Heal", id="net.heal", tooltip="lift every network fault in force"),
    Binding("G", "give_up", "Give up: show the solution", id="fix.give_up", show=False),
    Binding("e", "edit_setting", "Change a setting", id="run.setting", show=False),
    Binding("t", "edit_topic", "Create/alter topic", id="topic.alter", show=False),
    Binding("T", "add_partitions", "Add partitions", id="topic.partitions", show=False,
            tooltip="grow a topic to N partitions now, as `kafkalab topic alter NAME --partitions N`"),
    Binding("A", "abort_transaction", "Abort a transaction", id="txn.abort", show=False,
            tooltip="list the transactions open on the cluster and abort the one picked, as `kafkalab txn abort`"),
    *(Binding(key, f"show_tab('{tab}')", title, id=f"view.{tab}", show=False)
      for key, (tab, title) in TAB_KEYS.items()),
    Binding("a", "samples", "Anomaly samples", id="results.samples", show=False),
    Binding("right_square_bracket", "next_group", "Next group", id="group.next", key_display="]", show=False),
    Binding("O", "reset_group", "Reset group offsets", id="group.reset", show=False),
    Binding("P", "toggle_presenter", "Presenter mode", id="view.presenter", show=False),
    Binding("f12", "save_svg", "Screenshot (SVG)", id="app.screenshot", show=False),
]

# `kafkalab replay`'s own, beside the console's. Priority: the digits pick brokers in the live console, here they
# set the speed; the arrows and PgUp/PgDn would scroll the focused tab
REPLAY_BINDINGS: list[Binding] = [
    *(Binding(str(s), f"speed({s})", f"{s}x", id=f"replay.speed.{s}", priority=True) for s in REPLAY_SPEEDS),
    Binding("space", "pause", "Pause/Play", id="replay.pause", priority=True),
    Binding("left", f"seek({-SCRUB_S})", f"-{SCRUB_S}s", id="replay.back", priority=True),
    Binding("right", f"seek({SCRUB_S})", f"+{SCRUB_S}s", id="replay.forward", priority=True),
    Binding("pageup", "jump('previous')", "Prev event", id="replay.previous_event", key_display="PgUp",
            priority=True, tooltip="back to the fault, leader change or verdict before this second"),
    Binding("pagedown", "jump('next')", "Next event", id="replay.next_event", key_display="PgDn",
            priority=True, tooltip="on to the next fault, leader change or the verdict"),
    Binding("home", "jump('start')", "Start", id="replay.start", priority=True, show=False,
            tooltip="the recording's start (the cluster starting)"),
    Binding("end", "jump('end')", "End", id="replay.end", priority=True, show=False,
            tooltip="the run's end, its report in"),
]


def keymap_path() -> Path:
    if env := os.environ.get("KAFKALAB_KEYMAP"):
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(xdg) / "kafkalab" / "keymap.toml"


def load_keymap(path: Path | None = None) -> dict[str, str]:
    """The user's keymap (binding id -> keys); an unknown id or a bad file is an error naming it."""
    path = path or keymap_path()
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise KafkalabError(f"keymap {path} is not valid TOML ({exc}): fix or remove it") from None
    keymap = data.get("keymap", {})
    known = {b.id for b in (*BINDINGS, *REPLAY_BINDINGS) if b.id is not None}  # one keymap for both consoles
    for binding_id, keys in keymap.items():
        if binding_id not in known:
            raise KafkalabError(f"keymap {path}: unknown binding id {binding_id!r}; known: {', '.join(sorted(known))}")
        if not isinstance(keys, str) or not keys.strip():
            raise KafkalabError(f"keymap {path}: {binding_id} must be a key string such as \"K\" or \"f5\"")
    return dict(keymap)
