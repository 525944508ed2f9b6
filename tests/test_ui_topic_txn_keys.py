"""The console's keys that do what a `kafkalab` command does, with Pilot on the fake feed: T adds partitions (as
`kafkalab topic alter --partitions`), A lists the open transactions and aborts the one picked (as `kafkalab txn
abort`). The Kafka side is the shared functions' (tests/test_add_partitions.py, tests/test_hanging_txn_abort.py):
here the admin they reach is a stand-in that answers as Kafka does."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkalab.admin.transactions import OpenTransaction
from kafkalab.errors import KafkalabError
from kafkalab.feeds import by_hand
from kafkalab.ui.app import parse_partitions_request, transaction_question
from kafkalab.ui.modals import ChoiceScreen, ConfirmScreen, ErrorScreen, InputScreen
from tests.test_add_partitions import MOVED, GrowingAdmin
from tests.test_ui_app import running, settle, sync, type_line
from tests.test_ui_feed import TOPIC, FakeSource

BOOTSTRAP = "127.0.0.1:19092"
OPEN = [OpenTransaction(TOPIC, 0, producer_id=7, producer_epoch=0, coordinator_epoch=1, start_offset=300,
                        last_timestamp=1_700_000_000_000),
        OpenTransaction(TOPIC, 3, producer_id=9, producer_epoch=2, coordinator_epoch=1, start_offset=41,
                        last_timestamp=1_700_000_000_000)]


class ClusterFeed(FakeSource):
    """The fake feed with a cluster to reach (a lab's before its first run has none)."""

    def __init__(self, cluster: bool = True) -> None:
        super().__init__()
        self.cluster = SimpleNamespace(bootstrap=BOOTSTRAP) if cluster else None

    def cluster_now(self) -> SimpleNamespace | None:  # type: ignore[override]
        return self.cluster


class Transactions:
    """The helper's answers: the transactions open, and the aborts asked for (the last one aborted)."""

    def __init__(self, open_now: list[OpenTransaction]) -> None:
        self.open_now = list(open_now)
        self.aborts: list[tuple[str, str, int | None, int | None]] = []

    def open_transactions(self, _dist: object, bootstrap: str) -> list[OpenTransaction]:
        assert bootstrap == BOOTSTRAP
        return list(self.open_now)

    def abort_transactions(self, _dist: object, bootstrap: str, topic: str, partition: int | None = None,
                           start_offset: int | None = None) -> list[OpenTransaction]:
        self.aborts.append((bootstrap, topic, partition, start_offset))
        gone = [t for t in self.open_now if (t.topic, t.partition, t.start_offset) == (topic, partition, start_offset)]
        if not gone:
            raise KafkalabError(f"no open transaction starting at offset {start_offset} on {topic}-{partition}: "
                                "nothing to abort (`kafkalab txn list` shows the transactions)")
        self.open_now = [t for t in self.open_now if t not in gone]
        return gone


@pytest.fixture
def txns(monkeypatch: pytest.MonkeyPatch) -> Transactions:
    fake = Transactions(OPEN)
    monkeypatch.setattr(by_hand, "helper_distribution", lambda: None)
    monkeypatch.setattr(by_hand, "open_transactions", fake.open_transactions)
    monkeypatch.setattr(by_hand, "abort_transactions", fake.abort_transactions)
    return fake


@pytest.fixture
def admin(monkeypatch: pytest.MonkeyPatch) -> GrowingAdmin:
    grown = GrowingAdmin(current=6)
    monkeypatch.setattr(by_hand, "Admin", lambda bootstrap, timeout_s: grown)
    return grown


def test_a_partitions_line_is_a_topic_and_a_count() -> None:
    assert parse_partitions_request(" test-topic  8 ") == ("test-topic", 8)
    for bad in ("test-topic", "test-topic eight", "test-topic 8 9", "8", "test-topic 0"):
        with pytest.raises(ValueError, match="give the topic and its new partition count"):
            parse_partitions_request(bad)


def test_the_open_transactions_are_offered_on_digits_with_their_age() -> None:
    question = transaction_question(OPEN, now_s=1_700_000_065.0)
    assert question is not None
    assert [(c.key, c.answer) for c in question.choices] == [("1", "0"), ("2", "1"), ("escape", "cancel")]
    assert "1  test-topic-0  producer 7 (epoch 0)  open since offset 300, last written 65 s ago" in question.detail
    many = transaction_question(OPEN * 6, now_s=1_700_000_000.0)
    assert many is not None and len(many.choices) == 10 and "... and 3 more" in many.detail
    assert transaction_question([], 0.0) is None


def test_add_partitions_key_grows_the_topic_and_refusals_stay_one_line(
        admin: GrowingAdmin) -> None:
    @sync
    async def scenario() -> None:
        async with running(ClusterFeed()) as (app, pilot):
            await pilot.press("T")
            await pilot.pause()
            assert isinstance(app.screen, InputScreen) and app.screen.placeholder == f"{TOPIC} 8"
            await type_line(pilot, f"{TOPIC} 8")
            await settle(pilot)
            assert admin.asked == [(TOPIC, 8)]
            said = f"{TOPIC}: 6 -> 8 partitions {MOVED}"
            assert app.last_action == said
            assert said in [n.message for n in app._notifications]

            await pilot.press("T")
            await type_line(pilot, f"{TOPIC} many")  # unreadable: said, nothing asked
            await settle(pilot)
            assert admin.asked == [(TOPIC, 8)] and not isinstance(app.screen, InputScreen)
            assert any("give the topic and its new partition count" in n.message for n in app._notifications)

            await pilot.press("T")
            await type_line(pilot, f"{TOPIC} 4")  # Kafka refuses: one line, the console goes on
            await settle(pilot)
            assert isinstance(app.screen, ErrorScreen)
            assert app.screen.title_text == f"add partitions to {TOPIC} failed"
            assert "\n" not in app.screen.message and "Kafka cannot remove partitions" in app.screen.message
            await pilot.press("escape")
            await pilot.press("2", "k")  # still alive: a node key acts
            await settle(pilot)
            assert ("broker-2", "kill") in app.source.actions  # type: ignore[attr-defined]

    scenario()


def test_abort_key_lists_the_open_transactions_and_aborts_the_one_picked_after_asking(txns: Transactions) -> None:
    @sync
    async def scenario() -> None:
        async with running(ClusterFeed()) as (app, pilot):
            await pilot.press("A")
            await settle(pilot)
            assert isinstance(app.screen, ChoiceScreen) and "2 open" in app.screen.question
            await pilot.press("2")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            assert app.screen.question == f"Abort the transaction of producer 9 on {TOPIC}-3?"
            await pilot.press("n")
            await settle(pilot)
            assert txns.aborts == [] and app.last_action == "abort cancelled"

            await pilot.press("A")
            await settle(pilot)
            await pilot.press("2")
            await pilot.pause()
            await pilot.press("y")
            await settle(pilot)
            assert txns.aborts == [(BOOTSTRAP, TOPIC, 3, 41)]
            said = (f"aborted the transaction of producer 9 (epoch 2) on {TOPIC}-3, open since offset 41: "
                    "read_committed consumers read past it now")
            assert app.last_action == said and said in [n.message for n in app._notifications]

            await pilot.press("A")
            await settle(pilot)
            await pilot.press("escape")  # the list left without a choice
            await settle(pilot)
            assert app.last_action == "abort cancelled" and len(txns.aborts) == 1

            txns.open_now = []
            await pilot.press("A")
            await settle(pilot)
            assert app.last_action == "no open transaction on the cluster: nothing to abort"
            assert not isinstance(app.screen, ChoiceScreen)

    scenario()


def test_without_a_cluster_the_keys_say_so_and_ask_nothing(txns: Transactions, admin: GrowingAdmin) -> None:
    @sync
    async def scenario() -> None:
        async with running(ClusterFeed(cluster=False)) as (app, pilot):
            for key in ("T", "A"):
                await pilot.press(key)
                await settle(pilot)
                assert not isinstance(app.screen, InputScreen | ChoiceScreen)
            assert [n.message for n in app._notifications].count(
                "no cluster yet: a lab's cluster starts with its run (press g)") >= 1
            assert txns.aborts == [] and admin.asked == []

    scenario()
