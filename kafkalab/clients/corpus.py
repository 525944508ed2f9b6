"""The record values: lines of text from assets/corpus.txt, drawn at random (seedable)."""

from __future__ import annotations

import random
from functools import cache

from kafkalab.paths import assets_dir


@cache
def corpus_lines() -> tuple[str, ...]:
    text = (assets_dir() / "corpus.txt").read_text(encoding="utf-8")
    return tuple(line for line in text.splitlines() if line.strip())


class ValuePicker:
    """Draws corpus lines; the same seed gives the same sequence."""

    def __init__(self, seed: int | None = None) -> None:
        self._lines = corpus_lines()
        self._encoded = tuple(line.encode("utf-8") for line in self._lines)
        self._random = random.Random(seed)

    def next_bytes(self) -> bytes:
        return self._encoded[int(self._random.random() * len(self._encoded))]

    def average_size(self) -> int:
        return sum(map(len, self._encoded)) // len(self._encoded)
