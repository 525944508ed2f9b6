"""Every lesson on every platform it declares, in one table: the labs benchmark's sittings merged.

    .venv/bin/python benchmarks/course_matrix.py [--from labs-catalog,labs-platforms-net]

The catalog benchmark ran each lab on its own platform and the platform series ran the others, in files of
their own (by default every labs-*.json is read); this writes benchmarks/results/labs-platforms-course.json
with one entry per lab and declared platform: the runs of its current lab file (the file with the most of
them), or ``runs: 0`` where none is measured yet, so the docs show what is still to run. Nothing is run here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.benchutil import COURSE_TABLE, RESULTS, lab_hash, on_platforms, result_key, write_results
from kafkalab.labs import catalog, load_lab

NAME = COURSE_TABLE


def measured(sources: list[str]) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Each result key's entries in the given results files, with the file they came from."""
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for source in sources:
        for key, entry in json.loads((RESULTS / f"{source}.json").read_text())["labs"].items():
            out.setdefault(key, []).append((source, entry))
    return out


def matrix(sources: list[str]) -> dict[str, dict[str, Any]]:
    found = measured(sources)
    labs: dict[str, dict[str, Any]] = {}
    for lab in on_platforms([load_lab(p) for p in catalog()], "all"):
        key, sha = result_key(lab), lab_hash(lab)
        # named from the lab itself: the older sittings' files lack the id, mode and version
        named = {"title": lab.title, "lab_id": lab.id, "mode": lab.cluster.mode,
                 "kafka_version": lab.cluster.kafka_version, "lab_sha": sha}
        current = [(src, e) for src, e in found.get(key, []) if e.get("lab_sha") == sha]
        if current:
            source, entry = max(current, key=lambda pair: pair[1]["runs"])
            labs[key] = {**entry, **named, "source": source}
        else:
            labs[key] = {**named, "runs": 0, "lesson_shown": 0, "failures": []}
    return labs


def java_played(name: str) -> bool:
    """A sitting whose clients were kafkalab's Java ones (``--clients java``): the same lessons by another client,
    which the course's table (kafkalab's own clients) must not take for its runs."""
    return name.startswith("labs-platforms-java")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="sources", default="",
                        help="results files to merge (names in benchmarks/results/, comma-separated; default: "
                             "every labs-*.json but the Java clients' fidelity runs)")
    args = parser.parse_args()
    sources = (args.sources.split(",") if args.sources
               else sorted(p.stem for p in RESULTS.glob("labs-*.json") if p.stem != NAME and not java_played(p.stem)))
    if missing := [s for s in sources if not (RESULTS / f"{s}.json").is_file()]:
        parser.error(f"--from: no benchmarks/results/{missing[0]}.json (run benchmarks/bench_labs.py --name ...)")
    labs = matrix(sources)
    path = write_results(NAME, {"every_declared_platform": True, "sources": sources, "labs": labs})
    done = sum(1 for e in labs.values() if e["runs"] >= 10 and e["lesson_shown"] == e["runs"])
    print(f"{len(labs)} lesson x platform pairs, {done} with 10 of 10 shown: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
