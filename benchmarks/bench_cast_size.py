"""How big a recording is and where its bytes go, before and after kafkalab compacted its casts.

The input is the recorded leader-failover run (tests/recorded/leader-failover, a real 5:50 run) replayed as
`kafkalab run LAB --record` renders it: `kafkalab replay RUN --exit-at-end` in a 160x48 pty at --speed (4 by
default, as `run --record`; 1.2 makes a cast of about 5 minutes). Its output is captured once and written both
ways from the same bytes: raw (every byte the console sent: kafkalab's casts before) and compacted (the screen
every 0.1 s at most, as the cells that changed: kafkalab's casts now), every compacted frame checked against the
raw stream's screen in a terminal emulator. Then the same render is recorded by kafkalab itself
(`record_headless`), as a user gets it.

    .venv/bin/python benchmarks/bench_cast_size.py [--speed 4]

Writes benchmarks/results/cast-size.json (one entry per speed): bytes, seconds of cast, bytes per 5 minutes, and
where the bytes go (SGR styles, cursor moves, other sequences, text, the JSON around them).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks and tests, run as a script

from benchmarks.benchutil import RESULTS, write_results
from kafkalab.cast import read_cast, record_headless
from kafkalab.cli.lab_cmds import RECORD_SIZE
from tests.cast_frames import capture, frames_unlike_raw, write_compact, write_raw

RUN_DIR = Path(__file__).resolve().parent.parent / "tests" / "recorded" / "leader-failover"
NAME = "cast-size"
FIVE_MINUTES_S = 300.0
KINDS = {  # what each part of a cast's output is, by its pattern
    "sgr": re.compile(r"\x1b\[[0-9;:]*m"),
    "cursor": re.compile(r"\x1b\[[0-9;]*[HfABCDEFGd]"),
    "other_sequences": re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]*[0-~]"),
}


def breakdown(cast: Path) -> dict[str, Any]:
    """The cast's size and where it goes: each kind's bytes as the file holds them (an ESC is six bytes in JSON)."""
    _header, events = read_cast(cast)
    text = "".join(data for _t, code, data in events if code == "o")
    seconds = events[-1][0] if events else 0.0
    size = cast.stat().st_size
    parts: dict[str, int] = {}
    for kind, pattern in KINDS.items():
        found = pattern.findall(text)
        text = pattern.sub("", text)
        parts[kind] = sum(len(json.dumps(s)) - 2 for s in found)
    parts["text"] = len(json.dumps(text, ensure_ascii=False).encode()) - 2
    parts["json_framing"] = size - sum(parts.values())
    return {"bytes": size, "cast_s": round(seconds, 1), "events": len(events),
            "bytes_per_5_min": round(size / seconds * FIVE_MINUTES_S) if seconds else None, "by_kind": parts}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=4.0, help="replay speed (default 4, as `run --record`)")
    args = parser.parse_args()
    cols, rows = RECORD_SIZE
    argv = [sys.executable, "-m", "kafkalab", "replay", str(RUN_DIR), "--speed", f"{args.speed:g}", "--exit-at-end"]
    with tempfile.TemporaryDirectory(prefix="kafkalab-cast-size-") as tmp:
        work = Path(tmp)
        output = capture(argv, cols, rows)
        raw = write_raw(output, work / "raw.cast", cols, rows)
        compacted = write_compact(output, work / "compact.cast", cols, rows)
        unlike = frames_unlike_raw(raw, work / "compact.cast")
        record_headless(argv, work / "recorded.cast", cols, rows)
        entry = {
            "input": f"kafkalab replay {RUN_DIR.name} --speed {args.speed:g} in a {cols}x{rows} pty",
            "raw": breakdown(raw),
            "compacted": {**breakdown(work / "compact.cast"), "frames_unlike_raw": len(unlike),
                          "fell_back_to_raw": compacted.raw},
            "recorded_by_kafkalab": breakdown(work / "recorded.cast"),
        }
    previous = RESULTS / f"{NAME}.json"
    renders = json.loads(previous.read_text()).get("renders", {}) if previous.is_file() else {}
    path = write_results(NAME, {"renders": {**renders, f"{args.speed:g}x": entry}})
    print(json.dumps(entry, indent=2))
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
