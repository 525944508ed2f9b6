"""The Groups tab names a group the run's consumers use that the brokers do not know (consumer-receives-nothing:
the consumer never got a coordinator, so no group exists; an empty tab read as if no consumer had run)."""

from __future__ import annotations

from kafkalab.feeds.groups_feed import GroupsFrame
from kafkalab.ui.groups import unknown_groups


def test_an_unknown_group_of_the_run_is_named_with_what_to_ask() -> None:
    said = unknown_groups(GroupsFrame(), ("test-app",)).plain
    assert "test-app" in said and "kafkalab group describe test-app" in said
    assert unknown_groups(GroupsFrame(), ()).plain == ""
