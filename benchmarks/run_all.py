"""Every benchmark in turn (`make bench`), each with modest settings, stopping at the first that fails.

    .venv/bin/python benchmarks/run_all.py                    # all of benchmarks/bench_*.py, in name order
    .venv/bin/python benchmarks/run_all.py --only cluster,labs
    .venv/bin/python benchmarks/run_all.py --dry-run          # the commands, not run

Each writes its JSON to benchmarks/results/<name>.json (see benchutil.write_results). The settings below
are smaller than each benchmark's own defaults, so the whole set fits in a sitting; run one benchmark
alone for the full measurement. A benchmark not listed runs with its own defaults.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
MODEST: dict[str, list[str]] = {
    "analysis": ["--sizes", "500000", "--runs", "3", "--cold-runs", "2"],
    "clients": ["--records", "200000", "--runs", "3"],
    "cluster": ["--runs", "3", "--default-runs", "1"],
    "console": ["--records", "200000", "--samples", "10", "--runs", "1"],
    "docker": ["--runs", "2"],
    "labs": ["--runs", "1"],
}
# benchmarks that need a wrapper: the docker one gets an engine (started for it when none is reachable)
WRAPPERS: dict[str, list[str]] = {"docker": ["bash", str(ROOT / "scripts" / "with-docker-engine.sh")]}


def benchmarks() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))


def command(name: str) -> list[str]:
    return [*WRAPPERS.get(name, []), sys.executable, str(HERE / f"bench_{name}.py"), *MODEST.get(name, [])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated names (e.g. cluster,labs); default: all")
    parser.add_argument("--dry-run", action="store_true", help="print the commands without running them")
    args = parser.parse_args(argv)
    names = benchmarks()
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            print(f"run_all: error: no benchmark {unknown[0]!r}: choose from {', '.join(names)}", file=sys.stderr)
            return 2
        names = wanted
    for i, name in enumerate(names, start=1):
        cmd = command(name)
        print(f"[{i}/{len(names)}] {name}: {' '.join(cmd)}", flush=True)
        if args.dry_run:
            continue
        started = time.monotonic()
        code = subprocess.run(cmd, cwd=ROOT, check=False).returncode
        took = time.monotonic() - started
        if code != 0:
            print(f"run_all: {name} failed (exit {code}) after {took:.0f}s; the benchmarks after it were not run",
                  file=sys.stderr)
            return code
        print(f"[{i}/{len(names)}] {name} done in {took:.0f}s", flush=True)
    if not args.dry_run:
        print(f"results: {RESULTS}/ ({', '.join(f'{n}.json' for n in names)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
