"""The asciicast v2 format (what `asciinema play` and asciinema.org read).

A header line ``{"version": 2, "width", "height", "timestamp", "env", "title"}``, then one event a line:
``[seconds since the start, "o", text]`` for output, ``[t, "r", "COLSxROWS"]`` for a resize. Times increase.
"""

from __future__ import annotations

import codecs
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

Event = tuple[float, str, str]
ALT_SCREEN_OFF = "\x1b[?1049l"  # a full-screen app quitting: the terminal shows what was there before


class CastWriter:
    """Writes a cast as it happens; bytes split inside a UTF-8 character are held until it is whole."""

    def __init__(self, path: Path, width: int, height: int, *, env: dict[str, str] | None = None,
                 title: str = "", clock: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(path)
        self._clock = clock
        self._started = clock()
        self._last_t = -1.0
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 (closed by close)
        header: dict[str, Any] = {"version": 2, "width": width, "height": height, "timestamp": int(time.time()),
                                  "env": env or {}}
        if title:
            header["title"] = title
        self._fh.write(json.dumps(header) + "\n")

    def _event(self, kind: str, data: str) -> None:
        t = round(self._clock() - self._started, 6)
        t = max(t, round(self._last_t + 1e-6, 6))  # strictly increasing, even within one clock tick
        self._last_t = t
        self._fh.write(json.dumps([t, kind, data], ensure_ascii=False) + "\n")

    def output(self, data: bytes) -> None:
        self.output_text(self._decoder.decode(data))

    def output_text(self, text: str) -> None:
        """Output already decoded (a :class:`~kafkalab.cast.compact.CompactCast`'s frame)."""
        if text:
            self._event("o", text)

    def resize(self, width: int, height: int) -> None:
        self._event("r", f"{width}x{height}")

    def close(self) -> None:
        if not self._fh.closed:
            tail = self._decoder.decode(b"", final=True)
            if tail:
                self._event("o", tail)
            self._fh.close()


def read_cast(path: Path) -> tuple[dict[str, Any], list[Event]]:
    """A cast's header and events; a line that is not valid asciicast v2 is an error naming it."""
    with open(path, encoding="utf-8") as fh:
        header = json.loads(fh.readline())
        if not isinstance(header, dict) or header.get("version") != 2:
            raise ValueError(f"{path}: the first line is not an asciicast v2 header")
        events: list[Event] = []
        for number, line in enumerate(fh, start=2):
            event = json.loads(line)
            if not (isinstance(event, list) and len(event) == 3 and isinstance(event[0], int | float)
                    and isinstance(event[1], str) and isinstance(event[2], str)):
                raise ValueError(f"{path}:{number}: not a [time, code, data] event")
            events.append((float(event[0]), event[1], event[2]))
    return header, events


def end_on_last_frame(path: Path, skip_lead: bool = False) -> None:
    """Cut what the app sent as it quit (leaving the alternate screen and after), so a player ends on the
    app's last frame rather than a blank terminal; ``skip_lead`` starts the cast at the first output."""
    header, events = read_cast(path)
    kept: list[Event] = []
    for t, code, data in events:
        if code == "o" and ALT_SCREEN_OFF in data:
            head = data[:data.index(ALT_SCREEN_OFF)]
            if head:
                kept.append((t, code, head))
            break
        kept.append((t, code, data))
    lead = kept[0][0] if skip_lead and kept else 0.0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header) + "\n")
        for t, code, data in kept:
            fh.write(json.dumps([round(t - lead, 6), code, data], ensure_ascii=False) + "\n")
    tmp.replace(path)
