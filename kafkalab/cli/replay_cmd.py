"""`kafkalab replay RUN_DIR`: a finished run replayed in the console from its run dir, with no cluster."""

from __future__ import annotations

import argparse
from pathlib import Path

from kafkalab.errors import KafkalabError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("replay", help="replay a finished run in the console (no cluster): 1x/2x/4x, pause, scrub")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run's dir, e.g. kafkalab-runs/LAB-TIMESTAMP")
    p.add_argument("--speed", type=float, default=1.0, metavar="1|2|4",
                   help="replay speed (keys 1, 2, 4 change it; space pauses; arrows scrub 5 s; PgUp/PgDn jump "
                        "between events, Home/End to the start and end)")
    p.add_argument("--presenter", action="store_true", help="presenter mode (projector: fewer panes)")
    p.add_argument("--exit-at-end", action="store_true", help=argparse.SUPPRESS)  # `run --record` renders with it
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    if args.speed <= 0:
        raise KafkalabError(f"--speed {args.speed:g}: give a positive speed, e.g. 1, 2 or 4")
    if not args.run_dir.is_dir():
        raise KafkalabError(f"{args.run_dir} is not a directory: give a run's dir, e.g. kafkalab-runs/LAB-TIMESTAMP")
    from kafkalab.feeds.replay_source import ReplaySource
    from kafkalab.ui.bindings import load_keymap
    from kafkalab.ui.replay_app import ReplayConsole

    source = ReplaySource(args.run_dir, speed=args.speed)
    app = ReplayConsole(source, exit_at_end=args.exit_at_end, keymap=load_keymap(), presenter=args.presenter)
    app.run()
    return 0
