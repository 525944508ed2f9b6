"""The producer pane says why records failed, in words ("412 failed: delivery timeout"), and how long a send has
been blocked on the full local buffer; the child's stats report carries both to it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from kafkalab.clients.error_words import failure_words
from kafkalab.clients.producer import Producer
from kafkalab.clients.stats import ClientState, ProducerStats
from kafkalab.ui.line import Line
from kafkalab.ui.producer import ProducerPane, counts_parts, failures_line

RUNNING = ProducerStats(name="producer", state=ClientState.RUNNING, attempted=5000, acked=4000, failed={},
                        unknown=0, in_flight=1000, rate=900.0, total=20000)


@pytest.mark.parametrize(("name", "words"), [
    ("_MSG_TIMED_OUT", "delivery timeout"),
    ("NOT_ENOUGH_REPLICAS", "not enough in-sync replicas"),
    ("ABORTED", "transaction aborted"),
    ("INVALID_RECORD", "invalid record"),  # not listed: read out of its letters
    ("_SOMETHING_NEW", "something new"),
])
def test_a_failed_sends_error_name_in_words(name: str, words: str) -> None:
    assert failure_words(name) == words


def test_failed_records_are_counted_by_reason_in_words_the_most_first() -> None:
    stats = replace(RUNNING, failed={"NOT_ENOUGH_REPLICAS": 3, "_MSG_TIMED_OUT": 412}, unknown=2)
    assert " ".join(failures_line(stats).plain.split()) == (
        "412 failed: delivery timeout 3 failed: not enough in-sync replicas unknown 2")


def test_a_blocked_send_says_for_how_long_and_why() -> None:
    blocked = replace(RUNNING, state=ClientState.BLOCKED, blocked_s=3.24)
    assert [p.plain for p in counts_parts(blocked)][:2] == [" BLOCKED ", "send() blocked 3.2 s: buffer full"]
    assert not any("blocked" in p.plain for p in counts_parts(RUNNING))


def test_the_producer_keeps_the_blocked_time_only_while_blocked(tmp_path: Path) -> None:
    """The child reports how long its send has waited; a child that ended while blocked leaves that figure in its
    last report (the parent sets the end state over it): the pane must not say it then."""
    producer = Producer({}, tmp_path, "t", bootstrap="127.0.0.1:1")  # never started: its last report is set below
    producer._stats = {"state": ClientState.BLOCKED, "attempted": 10, "blocked_s": 2.5}
    assert producer.stats().blocked_s == 2.5
    producer._stats = {"state": ClientState.CRASHED, "attempted": 10, "blocked_s": 2.5}
    assert producer.stats().blocked_s == 0.0


def test_the_pane_follows_the_failures_and_the_block_live() -> None:
    class PaneApp(App[None]):
        def compose(self) -> ComposeResult:
            yield ProducerPane()

    timed_out = replace(RUNNING, failed={"_MSG_TIMED_OUT": 412})
    frames = [RUNNING, replace(timed_out, state=ClientState.BLOCKED, blocked_s=3.2), timed_out]

    async def run() -> list[tuple[str, str]]:
        seen = []
        async with PaneApp().run_test(size=(100, 14)) as pilot:
            for stats in frames:
                pilot.app.query_one(ProducerPane).show(stats, {}, [])
                await pilot.pause()
                seen.append(tuple(" ".join(str(pilot.app.query_one(f"#producer-{line}", Line).render()).split())
                                  for line in ("counts", "failures")))
        return seen  # type: ignore[return-value]

    (counts0, failures0), (counts1, failures1), (counts2, failures2) = asyncio.run(run())
    assert failures0 == "no failures" and "blocked" not in counts0
    assert counts1.startswith("BLOCKED send() blocked 3.2 s: buffer full 4,000/20,000 acked")
    assert failures1 == failures2 == "412 failed: delivery timeout"
    assert "blocked" not in counts2
