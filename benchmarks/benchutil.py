"""Shared benchmark plumbing: medians, machine facts, JSON results in benchmarks/results/."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import psutil

RESULTS = Path(__file__).resolve().parent / "results"


def summary(samples: list[float]) -> dict[str, Any]:
    """Median, min, max and the samples (rounded), the shape every benchmark reports."""
    return {
        "median": round(statistics.median(samples), 3) if samples else None,
        "min": round(min(samples), 3) if samples else None,
        "max": round(max(samples), 3) if samples else None,
        "runs": len(samples),
        "samples": [round(s, 3) for s in samples],
    }


def write_results(name: str, results: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {
        "benchmark": name,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
                    "python": platform.python_version(), "platform": platform.platform()},
        **results,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path
