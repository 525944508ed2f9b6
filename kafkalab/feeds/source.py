"""The console's contract with what it shows: :class:`Source`, every capability declared in one place.

The app never touches Kafka, processes or Spark itself: a source does, in thread workers, and hands back
frozen frames (:mod:`kafkalab.feeds.frames`) the panes render. A source says what it offers
(:class:`ConsoleAction`); the console neither shows nor runs the rest, and each default here refuses in words.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from kafkalab.admin import ClusterSnapshot
from kafkalab.cluster import NodeAction
from kafkalab.cluster.netwiring import NetAction, NetRequest
from kafkalab.cluster.view import NetControls
from kafkalab.feeds.frames import NodesFrame, RunFrame
from kafkalab.labs.graded_check import CheckStatus

CLOSING = "stopping every process the console started ..."  # what the console says while it closes
SNAPSHOT_WAIT_S = 0.5  # end offsets not given by then show their last known value; the controller '?'
NO_NET_PROXIES = ("this cluster has no network-fault proxies: start the console with --net-proxies (the default, "
                  "left out by --no-net-proxies) to isolate a node and heal its links")


class ConsoleAction(StrEnum):
    """What a person may ask of a source from the console; each value is the app's action name."""

    NODE = "node"  # stop, kill, pause, resume, start, restart a node
    START_RUN = "start_run"
    STOP_RUN = "stop_run"
    RESET_LAB = "reset_lab"
    SEND_CONTROL = "send_control"
    EDIT_SETTING = "edit_setting"
    EDIT_TOPIC = "edit_topic"
    RESET_GROUP = "reset_group"  # move a consumer group's committed offsets
    # network faults through the cluster's proxies (--net-proxies): offered by a source with a cluster, refused in
    # words (:attr:`Source.net_why_not`) while its cluster has no proxies
    ISOLATE_NODE = "isolate_node"  # the picked node cut from every other node, its clients kept
    HEAL_LINKS = "heal_links"  # every network fault lifted
    # a lab's break-fix exercise ([fix]) and incident ([incident]): offered only by a lab that has one
    TAKE_HINT = "take_hint"
    CHECK_FIX = "check_fix"  # the graded check: the attendee's changes, run once per seed under the same faults
    GIVE_UP = "give_up"  # the cause and the reference solution shown, the solution run graded
    ANSWER_INCIDENT = "answer_incident"


# the actions a lab's [fix] / [incident] adds, in the order the console lists them
EXERCISE_ACTIONS = (ConsoleAction.TAKE_HINT, ConsoleAction.CHECK_FIX, ConsoleAction.GIVE_UP,
                    ConsoleAction.ANSWER_INCIDENT)


@dataclass(frozen=True)
class Choice:
    key: str
    label: str
    answer: str


@dataclass(frozen=True)
class Question:
    """Asked in a modal before the source boots; the answer goes to :meth:`Source.choose`."""

    title: str
    detail: str
    choices: tuple[Choice, ...]


class HasBootstrap(Protocol):
    """A cluster as the group and records feeds need it: where its brokers answer."""

    @property
    def bootstrap(self) -> str: ...


class NotOffered(NotImplementedError):
    """The source cannot do this (a replay has no cluster, a bare cluster no lab): a warning, not a failure."""


class Source(ABC):
    """The console's view of a cluster and its runs; every method may block and is called from a thread worker."""

    title: str = "kafkalab"
    label: str = "no lab"  # the top bar's name for it where a lab's id would be
    platform: str = ""  # the mode and Kafka its cluster runs ("KRaft · Kafka 4.4.0"), for the top bar
    offers: frozenset[ConsoleAction] = frozenset()
    reports: bool = True  # its runs are analysed: Results shows a report (else says why there is none)
    why_not: str = "this console cannot do that"  # what a refused action says
    net_why_not: str = NO_NET_PROXIES  # what a refused network fault says: how to get the proxies

    @property
    def closing(self) -> str:
        """What the console says while it closes."""
        return CLOSING

    @property
    def after_quit(self) -> str:
        """What still runs once the console is gone and how to stop it ('' when nothing does)."""
        return ""

    def question(self) -> Question | None:
        """A question to answer before :meth:`boot` (None: nothing to ask)."""
        return None

    def choose(self, answer: str) -> None:
        """Carry out the answer to :meth:`question`."""
        raise NotOffered("nothing was asked")

    def cluster_now(self) -> HasBootstrap | None:
        """The cluster the source drives now (a lab's changes with each run), None while it has none."""
        return None

    @abstractmethod
    def boot(self, progress: Callable[[str], None]) -> None: ...

    @abstractmethod
    def nodes(self) -> NodesFrame: ...

    @abstractmethod
    def snapshot(self) -> ClusterSnapshot: ...

    @abstractmethod
    def run(self) -> RunFrame: ...

    @abstractmethod
    def close(self) -> None: ...

    def node_action(self, node: str, action: NodeAction) -> None:
        raise NotOffered(self.why_not)

    def net_request(self, request: NetRequest) -> str:
        """Apply a network fault (isolate, heal, ...) through the cluster's proxy; says what it changed. Refused
        (:attr:`net_why_not`) by a source whose cluster has no proxies."""
        raise NotOffered(self.net_why_not)

    def start_run(self) -> str | None:
        raise NotOffered(self.why_not)

    def stop_run(self) -> None:
        raise NotOffered(self.why_not)

    def reset(self) -> None:
        raise NotOffered(self.why_not)

    def send_control(self, word: str) -> None:
        raise NotOffered(self.why_not)

    def change_setting(self, name: str, value: str) -> None:
        raise NotOffered(self.why_not)

    def choose_players(self, text: str) -> str:
        """Who plays the lab's clients from the next run (``clients java``, ``producer-cmd CMD``...); says what."""
        raise NotOffered(self.why_not)

    def alter_topic(self, topic: str, replication_factor: int | None, min_isr: int | None) -> str:
        raise NotOffered(self.why_not)

    def reassign_topic(self, topic: str, replication_factor: int) -> str:
        raise NotOffered(self.why_not)

    # ---- a lab's break-fix exercise (offered with CHECK_FIX / ANSWER_INCIDENT) ---------------------------
    def add_change(self, text: str) -> str:
        """One change as the console's prompt takes it (``producer.acks=all``, ``topic T rf=3``,
        ``broker NAME=VALUE``, ``action WHEN -> DO topic T ...``), kept for the next runs, or ``-NAME`` taking a
        kept one back; says what it did."""
        raise NotOffered(self.why_not)

    def take_hint(self) -> str:
        """The next hint's text, counted in the attendee's progress."""
        raise NotOffered(self.why_not)

    def answer_incident(self, choice: int) -> bool:
        """Whether ``choice`` (0-based) names the incident's cause; counted either way."""
        raise NotOffered(self.why_not)

    def check_fix(self) -> CheckStatus:
        """Run the graded check to its end (off the event loop): the exercise's status follows it."""
        raise NotOffered(self.why_not)

    def give_up(self) -> str:
        """Record giving up; returns the cause and the solution in words."""
        raise NotOffered(self.why_not)

    def check_solution(self) -> CheckStatus:
        """Run the reference solution graded (after giving up) to its end, as :meth:`check_fix` runs a fix."""
        raise NotOffered(self.why_not)


def apply_net(net: NetControls | None, request: NetRequest, why_not: str = NO_NET_PROXIES) -> str:
    """``request`` applied through a cluster's proxy (``net``); what it changed, in a line. A cluster without
    proxies (``net`` None) refuses in words that say how to get them."""
    if net is None:
        raise NotOffered(why_not)
    said = net.handle(request)
    if request.action is NetAction.HEAL:
        healed = said.get("healed", [])
        return (f"healed every link ({len(healed)} rule{'s' if len(healed) != 1 else ''} lifted)" if healed
                else "nothing to heal: no network fault was in force")
    applied = said.get("applied", [])
    named = " ".join(request.words)
    if request.action is NetAction.ISOLATE:
        return f"{named} isolated: {len(applied)} links cut (its clients still reach it)"
    return f"{request.action.value} {named}: {'; '.join(applied)}"
