"""How the Records tab and `kafkalab tail` show a record's key: the lab producers' 4-byte int keys read as ints
(they showed as a replacement character), a key typed by hand as its text."""

from __future__ import annotations

import pytest

from kafkalab.clients.records import Record


@pytest.mark.parametrize(("key", "shown"), [
    ((7).to_bytes(4, "big"), "7"), ((-1).to_bytes(4, "big", signed=True), "-1"), (b"\x00\x00\x01\x00", "256"),
    (b"abcd", "abcd"), (b"alpha", "alpha"), (b"", ""), (None, ""),
])
def test_a_key_reads_as_the_int_its_producer_wrote_or_as_text(key: bytes | None, shown: str) -> None:
    assert Record("t", 0, 0, key, b"v", None).key_text == shown
