"""Recordings: asciicast v2 files written by kafkalab (header, then [t, "o", data] with t increasing),
played into a terminal emulator (pyte) to read the screen a viewer would see at the end."""

from __future__ import annotations

import io
import itertools
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyte
import pytest
from rich.console import Console

from kafkalab.cast import CastWriter, read_cast, record_headless
from kafkalab.cast.asciicast import end_on_last_frame
from kafkalab.cli.lab_cmds import RECORD_SIZE, render_recording
from tests.cast_frames import KITTY_KEYBOARD, capture, frames_unlike_raw, write_compact, write_raw
from tests.test_replay import RUN_DIR
from tests.test_ui_e2e import KAFKALAB, Tmux


def screens(cast: Path) -> Iterator[list[str]]:
    """The screen after each event, in a terminal of the cast's size (resized by its "r" events)."""
    header, events = read_cast(cast)
    screen = pyte.Screen(header["width"], header["height"])
    stream = pyte.Stream(screen)
    for _t, code, data in events:
        if code == "o":
            stream.feed(KITTY_KEYBOARD.sub("", data))
        elif code == "r":
            cols, rows = map(int, data.split("x"))
            screen.resize(rows, cols)
        yield list(screen.display)


def final_screen(cast: Path) -> list[str]:
    return list(screens(cast))[-1]


def assert_asciicast_v2(cast: Path, size: tuple[int, int]) -> list[tuple[float, str, str]]:
    lines = cast.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["version"] == 2 and (header["width"], header["height"]) == size
    assert isinstance(header["timestamp"], int) and "TERM" in header["env"]
    events = [json.loads(line) for line in lines[1:]]
    assert events and all(len(e) == 3 and e[1] in ("o", "r") and isinstance(e[2], str) for e in events)
    assert all(a[0] < b[0] for a, b in itertools.pairwise(events)), "times must increase"
    return [tuple(e) for e in events]


def test_writer_keeps_times_increasing_and_characters_whole(tmp_path: Path) -> None:
    ticks = iter([0.0, 1.0, 1.0, 1.0, 2.5])
    cast = CastWriter(tmp_path / "a.cast", 80, 24, env={"TERM": "xterm-256color"}, clock=lambda: next(ticks))
    word = "→ leader".encode()
    cast.output(word[:2])  # inside the arrow's three bytes: held back
    cast.output(word[2:])
    cast.output(b"\x1b[1;1Hx")
    cast.resize(100, 30)
    cast.close()
    events = assert_asciicast_v2(tmp_path / "a.cast", (80, 24))
    assert [e[2] for e in events] == ["→ leader", "\x1b[1;1Hx", "100x30"]


def test_a_cast_ends_on_the_apps_last_frame(tmp_path: Path) -> None:
    path = tmp_path / "b.cast"
    ticks = iter([0.0, 3.0, 4.0, 5.0])
    cast = CastWriter(path, 20, 2, env={"TERM": "xterm"}, clock=lambda: next(ticks))
    cast.output(b"\x1b[?1049hresults")
    cast.output(b"!\x1b[?1049l\x1b[?25h")
    cast.output(b"shell prompt")
    cast.close()
    end_on_last_frame(path, skip_lead=True)
    events = assert_asciicast_v2(path, (20, 2))
    assert [e[2] for e in events] == ["\x1b[?1049hresults", "!"] and events[0][0] == 0.0
    assert final_screen(path)[0].startswith("results!")


def test_run_record_renders_the_replay_into_a_cast_with_title_and_verdict(tmp_path: Path) -> None:
    """What `kafkalab run LAB --record` does after its run, on a recorded run (16x to keep the test short)."""
    cast = tmp_path / "run.cast"
    out = io.StringIO()
    render_recording(Console(file=out, width=200), RUN_DIR, cast, speed=16)
    assert "recording written" in out.getvalue()
    assert_asciicast_v2(cast, RECORD_SIZE)
    screen = final_screen(cast)
    assert any(" kafkalab " in line and "leader-failover" in line for line in screen[:2]), screen[:2]
    verdict = json.loads((RUN_DIR / "report.json").read_text())["verdict"]
    text = " ".join(" ".join(screen).split())
    assert verdict[:40] in text, "\n".join(screen)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux: the recorded console runs in a real terminal")
def test_console_record_in_a_terminal_writes_keys_captions_and_resizes(tmp_path: Path) -> None:
    """`kafkalab console LAB --record --show-keys` in tmux (no run started, so no cluster and no JVM): the
    cast has the terminal's size, the console's frames, the key captions, and a resize as an "r" event."""
    tmux = Tmux(f"kafkalab-cast-{os.getpid()}")
    cast = tmp_path / "console.cast"
    command = (f"cd {tmp_path} && {KAFKALAB} console leader-failover --no-spark-warmup --runs-dir {tmp_path / 'runs'} "
               f"--record {cast} --show-keys; sleep 30")
    tmux.run("new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "36", command)
    try:
        tmux.wait_for(lambda s: "run: idle" in s, 120, "the console")
        tmux.run("send-keys", "-t", tmux.session, "l")
        tmux.run("send-keys", "-t", tmux.session, "v")
        time.sleep(3.0)  # the captions show for 2 s: the cast has them, a look at the screen may miss them
        tmux.run("resize-window", "-t", tmux.session, "-x", "100", "-y", "30")
        tmux.wait_for(lambda s: len(s.splitlines()) <= 30 and "run: idle" in s, 60, "the resized console")
        tmux.run("send-keys", "-t", tmux.session, "C-q")
        tmux.wait_for(lambda s: "recording written" in s, 60, "the recording's end")
    finally:
        tmux.run("kill-server", check=False)
    events = assert_asciicast_v2(cast, (120, 36))
    assert ("r", "100x30") in [(code, data) for _t, code, data in events]
    shown = [screen for screen in screens(cast) if any("⌨  l  v" in line for line in screen)]
    assert shown, "the key captions are not in the recording"
    assert "leader-failover" in shown[-1][0]


REPAINT_SCRIPT = """
import sys, time
def screen(mark):
    rows = []
    for y in range(24):
        cells = "".join(f"\\x1b[0m\\x1b[38;2;{y * 9};{x * 3};200;48;2;20;20;{x}m{chr(65 + (x + y) % 26)}"
                        for x in range(80))
        rows.append(f"\\x1b[{y + 1};1H" + cells)
    return "".join(rows) + f"\\x1b[0m\\x1b[1;1H{mark}"
out = sys.stdout
out.write("\\x1b[?1049h\\x1b[?25l")
for _ in range(50):  # the same screen again and again, as a full repaint does
    out.write(screen("A")); out.flush(); time.sleep(0.01)
out.write(screen("Z")); out.flush(); time.sleep(0.3)
out.write("\\x1b[?1049l\\x1b[?25h")
"""


def test_a_cast_keeps_what_the_terminal_showed_not_every_repaint(tmp_path: Path) -> None:
    """A 5-minute cast of the console took 7.6 MB: every repaint went in whole, each cell from an SGR reset. A
    screen drawn 51 times, once with one cell changed, now costs about one screen's worth."""
    cast = tmp_path / "repaint.cast"
    assert record_headless([sys.executable, "-c", REPAINT_SCRIPT], cast, 80, 24) == 0
    one_screen = 80 * 24 * len("\\u001b[0m\\u001b[38;2;99;99;200;48;2;20;20;99mA")
    assert cast.stat().st_size < 2 * one_screen, cast.stat().st_size
    screen = final_screen(cast)
    assert screen[0][:4] == "ZBCD" and screen[23][-2:] == "XY", screen


def test_the_compacted_cast_of_a_replay_shows_each_frame_as_the_terminal_did(tmp_path: Path) -> None:
    """The console's own output (the recorded run's replay, 16x), written raw and compacted from the same bytes:
    every compacted frame is the screen the raw stream showed at that instant, in a fraction of the bytes."""
    cols, rows = RECORD_SIZE
    output = capture([sys.executable, "-m", "kafkalab", "replay", str(RUN_DIR), "--speed", "16", "--exit-at-end"],
                     cols, rows)
    raw = write_raw(output, tmp_path / "raw.cast", cols, rows)
    compact = write_compact(output, tmp_path / "compact.cast", cols, rows)
    assert not compact.raw, "the screen met a sequence it does not model"
    assert frames_unlike_raw(raw, tmp_path / "compact.cast") == []
    assert (tmp_path / "compact.cast").stat().st_size * 8 < raw.stat().st_size


@pytest.mark.parametrize("text", [
    "漢字 wide, e\u0301 combined, \x1b[1;31mbold red\x1b[22m not bold\x1b[0m\r\n\x1b[44m\x1b[2Kblue line\x1b[0m",
    "\x1b[?7l" + "x" * 85 + "\x1b[?7h\r\n" + "y" * 85,  # autowrap off (Textual's way), then on
    "\x1b[1;1Habc\x1b[2;3r\x1b[3;1H\n\n\nscrolled in a region",  # a scroll region: not modelled, written as it came
])
def test_a_compacted_cast_shows_what_the_terminal_showed(tmp_path: Path, text: str) -> None:
    output = [(i * 0.04, chunk.encode()) for i, chunk in enumerate(text[j:j + 7] for j in range(0, len(text), 7))]
    raw = write_raw(output, tmp_path / "raw.cast", 40, 6)
    compact = write_compact(output, tmp_path / "compact.cast", 40, 6)
    assert compact.raw == ("\x1b[2;3r" in text)
    assert frames_unlike_raw(raw, tmp_path / "compact.cast") == []
