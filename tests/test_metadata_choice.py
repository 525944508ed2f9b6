"""Which broker's metadata a snapshot shows, on the views three brokers gave while broker 2 (leader of test-topic/0
and the controller) was isolated (recorded on a 3.9.2 ZooKeeper-mode cluster): never the cut-off broker's."""

from __future__ import annotations

from kafkalab.admin.broker_wire import BrokerMetadata, PartitionMetadata
from kafkalab.admin.metadata_source import choose

ADDRESSES = {1: "127.0.0.1:21846", 2: "127.0.0.1:21209", 3: "127.0.0.1:25448"}


def view(broker: int, controller: int, alive: tuple[int, ...], leader: int, epoch: int) -> BrokerMetadata:
    partition = PartitionMetadata(0, leader, epoch, (2, 3, 1), alive)
    return BrokerMetadata(ADDRESSES[broker], {b: ADDRESSES[b] for b in alive}, controller, {"test-topic": (partition,)})


ZOMBIE = view(2, 2, (1, 2, 3), leader=2, epoch=0)  # its cache as it was cut off: itself controller and leader
MOVED = [view(1, 3, (1, 3), leader=3, epoch=1), view(3, 3, (1, 3), leader=3, epoch=1)]


def test_the_controller_s_view_is_taken_and_the_cut_off_broker_is_named_not_shown() -> None:
    chosen = choose([MOVED[0], ZOMBIE, MOVED[1]])
    assert (chosen.answered_by, chosen.disowned) == (3, (2,))
    assert chosen.view.topics["test-topic"][0].leader == 3 and sorted(chosen.view.brokers) == [1, 3]


def test_with_one_live_broker_left_the_zombie_is_still_outvoted() -> None:
    chosen = choose([ZOMBIE, MOVED[1]])  # broker 1 killed meanwhile
    assert (chosen.answered_by, chosen.disowned) == (3, (2,))


def test_before_its_session_expires_every_broker_still_counts_it_and_its_controller_view_is_taken() -> None:
    chosen = choose([view(b, 2, (1, 2, 3), leader=2, epoch=0) for b in (1, 2, 3)])
    assert (chosen.answered_by, chosen.disowned) == (2, ())


def test_as_the_controller_s_update_spreads_the_newest_view_is_taken() -> None:
    not_yet = view(1, 2, (1, 2, 3), leader=2, epoch=0)  # broker 1 has not heard of the election yet
    chosen = choose([not_yet, ZOMBIE, MOVED[1]])
    assert chosen.answered_by == 3 and chosen.view.topics["test-topic"][0].leader == 3


def test_a_broker_is_known_by_its_port_when_it_advertises_another_host_name() -> None:
    named = [BrokerMetadata(v.address, {b: a.replace("127.0.0.1", "localhost") for b, a in v.brokers.items()},
                            v.controller, v.topics) for v in (*MOVED, ZOMBIE)]
    chosen = choose(named)
    assert (chosen.answered_by, chosen.disowned) == (3, (2,))
