"""Consumer groups, `tail` and `type` on a real cluster, through the real `kafkalab` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition

from kafkalab.admin import Admin
from kafkalab.cluster import Cluster
from tests.helpers import process_gone, wait_until
from tests.test_cli_cluster import assert_one_line_error

KAFKALAB = os.environ.get("KAFKALAB", str(Path(sys.executable).with_name("kafkalab")))

pytestmark = pytest.mark.cluster


def kafkalab(cluster: Cluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KAFKALAB, *args, "--bootstrap", cluster.bootstrap], input=stdin, capture_output=True,
                          text=True, timeout=120)


def produce(cluster: Cluster, topic: str, count: int, partition: int | None = None, prefix: str = "v") -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(count):
        kwargs = {} if partition is None else {"partition": partition}
        producer.produce(topic, key=f"k{i}", value=f"{prefix}{i}", **kwargs)
    assert producer.flush(30) == 0


def plain_consumer(cluster: Cluster, group: str) -> Consumer:
    """A consumer as a person's own app would make it: nothing of kafkalab's."""
    return Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": "plain-app",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})


def committed(admin: Admin, group: str) -> dict[int, int]:
    """The group's committed offsets per partition, read back with the admin API."""
    result = admin.client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(10)
    return {tp.partition: tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def commit(cluster: Cluster, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit ``offsets`` for ``group`` as a member that then leaves, so the group is Empty."""
    consumer = plain_consumer(cluster, group)
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    consumer.close()


@pytest.fixture
def active_member(cluster: Cluster) -> Iterator[Callable[[str, str], Consumer]]:
    consumers: list[Consumer] = []

    def join(group: str, topic: str) -> Consumer:
        consumer = plain_consumer(cluster, group)
        consumer.subscribe([topic])
        consumers.append(consumer)
        wait_until(lambda: consumer.poll(0.2) is not None or consumer.assignment(), 60, what=f"{group} assigned")
        return consumer

    yield join
    for consumer in consumers:
        consumer.close()


def test_describe_lag_is_log_end_minus_committed(cluster: Cluster, admin: Admin,
                                                 topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=3)
    produce(cluster, topic, 60)
    group = f"{topic}-g"
    consumer = plain_consumer(cluster, group)
    consumer.subscribe([topic])
    read = 0
    deadline = time.monotonic() + 60
    while read < 25 and time.monotonic() < deadline:  # a partial consume
        read += sum(1 for m in consumer.consume(25 - read, 1.0) if not m.error())
    consumer.commit(asynchronous=False)
    consumer.close()
    ends = admin.end_offsets([(topic, p) for p in range(3)])
    held = committed(admin, group)
    assert 0 < sum(held.values()) < sum(ends.values())

    data = json.loads(kafkalab(cluster, "group", "describe", group, "--json").stdout)
    assert data["state"] == "Empty" and data["coordinator"]
    rows = {row["partition"]: row for row in data["partitions"]}
    for p in held:
        assert rows[p]["current_offset"] == held[p]
        assert rows[p]["log_end_offset"] == ends[(topic, p)]
        assert rows[p]["lag"] == ends[(topic, p)] - held[p]
    text = kafkalab(cluster, "group", "describe", group).stdout
    facts = facts_of(text)
    assert f"GROUP {group}" in facts and "STATE Empty" in facts and "COORDINATOR" in facts
    assert "ASSIGNMENT-STRATEGY" in facts
    headings, table = table_of(text, f"topic {topic}")
    assert sorted(headings) == sorted(["PARTITION", "CURRENT", "LOG-END", "LAG", "MEMBER", "HOST", "CLIENT-ID",
                                       "OFFSET", "OFFSET"])  # CURRENT OFFSET, LOG-END OFFSET: each on two lines
    for p in held:  # partition, committed, log end, lag; no member: '-' for each of its cells
        assert table[str(p)] == [str(held[p]), str(ends[(topic, p)]), str(ends[(topic, p)] - held[p]), "-", "-",
                                 "-"]


def facts_of(text: str) -> str:
    """The group's facts: the lines above the first blank one."""
    return " ".join(text.split("\n\n")[0].split())


def table_of(text: str, title: str) -> tuple[list[str], dict[str, list[str]]]:
    """The table under ``title``: its heading words, line by line (a heading may wrap), and its rows' cells by
    first cell."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == title) + 1
    rule = next(i for i in range(start, len(lines)) if lines[i].startswith("─"))
    end = next((i for i in range(rule, len(lines)) if not lines[i].strip()), len(lines))
    headings = [word for line in lines[start:rule] for word in line.split()]
    return headings, {line.split()[0]: line.split()[1:] for line in lines[rule + 1:end]}


def member_cells(text: str, short: str) -> list[str]:
    """The cells of a member's rows in `--members` (its first cell ``short``, the MEMBER column), read across the
    tables its columns were split into."""
    return [cell for line in text.splitlines() if line.split()[:1] == [short] for cell in line.split()[1:]]


def test_reset_moves_committed_offsets(cluster: Cluster, admin: Admin, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=2)
    produce(cluster, topic, 10, partition=0, prefix="old")
    produce(cluster, topic, 10, partition=1, prefix="old")
    time.sleep(1.1)
    between = datetime.now().astimezone().isoformat(timespec="milliseconds")
    time.sleep(1.1)
    produce(cluster, topic, 5, partition=0, prefix="new")
    group = f"{topic}-g"
    commit(cluster, group, topic, {0: 15, 1: 10})

    dry = kafkalab(cluster, "group", "reset", group, "--topic", topic, "--to-earliest", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[0].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert committed(admin, group) == {0: 15, 1: 10}, "a dry run commits nothing"

    assert kafkalab(cluster, "group", "reset", group, "--topic", topic, "--to-earliest", "--execute").returncode == 0
    assert committed(admin, group) == {0: 0, 1: 0}

    out = kafkalab(cluster, "group", "reset", group, "--topic", f"{topic}:1", "--to-offset", "7", "--execute")
    assert out.returncode == 0 and out.stdout.splitlines()[1].split() == [group, topic, "1", "7"]
    assert committed(admin, group) == {0: 0, 1: 7}

    out = kafkalab(cluster, "group", "reset", group, "--topic", topic, "--to-datetime", between, "--execute")
    assert out.returncode == 0, out.stderr
    assert committed(admin, group) == {0: 10, 1: 10}, "the first record after the time, else the log end"

    out = kafkalab(cluster, "group", "reset", group, "--topic", f"{topic}:0", "--shift-by", "-4", "--execute")
    assert out.returncode == 0 and committed(admin, group) == {0: 6, 1: 10}


def test_reset_refused_while_a_member_is_active(cluster: Cluster, admin: Admin, topic_factory: Callable[..., str],
                                               active_member: Callable[[str, str], Consumer]) -> None:
    topic = topic_factory(partitions=2)
    produce(cluster, topic, 10)
    group = f"{topic}-g"
    commit(cluster, group, topic, {0: 1, 1: 1})
    active_member(group, topic)
    result = kafkalab(cluster, "group", "reset", group, "--topic", topic, "--to-latest", "--execute")
    assert_one_line_error(result, group, "inactive", "stop its consumers")
    assert committed(admin, group) == {0: 1, 1: 1}


def test_a_plain_consumers_group_is_listed_and_described(cluster: Cluster, topic_factory: Callable[..., str],
                                                         active_member: Callable[[str, str], Consumer]) -> None:
    topic = topic_factory(partitions=3)
    group = f"{topic}-plain"
    active_member(group, topic)
    listed = kafkalab(cluster, "group", "list")
    assert listed.returncode == 0 and [group, "Stable"] in [line.split() for line in listed.stdout.splitlines()]
    members = kafkalab(cluster, "group", "describe", group, "--members").stdout
    facts = facts_of(members)
    assert f"GROUP {group}" in facts and "STATE Stable" in facts and "ASSIGNMENT-STRATEGY range" in facts
    data = json.loads(kafkalab(cluster, "group", "describe", group, "--json").stdout)
    assert {p["partition"] for p in data["partitions"]} == {0, 1, 2}
    assert {p["client_id"] for p in data["partitions"]} == {"plain-app"}
    (member_id,) = {p["consumer_id"] for p in data["partitions"]}
    short = member_id.split("-")[2]  # plain-app-<UUID>: MEMBER is the UUID's first 8 characters
    assert member_cells(members, short)[0] == member_id, members  # the id whole
    assert member_cells(members, short)[2:] == ["plain-app", "3", f"{topic}:0,1,2"], members


def test_tail_prints_a_partition_in_offset_order(cluster: Cluster, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=3)
    produce(cluster, topic, 40, partition=1)
    produce(cluster, topic, 5, partition=2, prefix="other")
    out = kafkalab(cluster, "tail", topic, "--partition", "1", "--from-beginning", "--exit", "--format", "%p %o %k %s")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"1 {i} k{i} v{i}" for i in range(40)]


def test_tail_leaves_cleanly_on_ctrl_c(cluster: Cluster, admin: Admin, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=1)
    produce(cluster, topic, 3)
    group = f"{topic}-tail"
    proc = subprocess.Popen([KAFKALAB, "tail", topic, "--group", group, "--from-beginning", "--bootstrap",
                             cluster.bootstrap], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline().strip() for _ in range(3)]  # type: ignore[union-attr]
        assert lines == ["v0", "v1", "v2"]
    finally:
        proc.send_signal(2)
        proc.wait(30)
    assert proc.returncode == 0
    assert committed(admin, group) == {0: 3}
    state = json.loads(kafkalab(cluster, "group", "describe", group, "--json").stdout)["state"]
    assert state == "Empty", "Ctrl-C leaves the group"


def test_type_sends_each_line_and_prints_its_offset(cluster: Cluster, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(partitions=3)
    out = kafkalab(cluster, "type", topic, "--key-sep", ":", "-D", "producer.acks=all",
                   stdin="alpha:one\nbeta:two\nalpha:three\n")
    assert out.returncode == 0, out.stderr
    landed = []
    for line, sent in zip(out.stdout.splitlines(), ["alpha:one", "beta:two", "alpha:three"], strict=True):
        text, outcome = line.split("\t")
        words = outcome.split()
        assert text == sent and words[0] == "partition" and words[2] == "offset"
        landed.append((int(words[1]), int(words[3])))
    assert landed[0][0] == landed[2][0] and landed[2][1] == landed[0][1] + 1, "one key, one partition, in order"
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"{topic}-check"})
    try:
        for (partition, offset), sent in zip(landed, ["alpha:one", "beta:two", "alpha:three"], strict=True):
            reader.assign([TopicPartition(topic, partition, offset)])
            msg = wait_until(lambda: reader.poll(0.5), 30, what="the typed record")
            assert f"{msg.key().decode()}:{msg.value().decode()}" == sent
    finally:
        reader.close()


@pytest.mark.parametrize("args, words", [
    (["group", "describe", "no-such-group"], ["no-such-group", "does not exist"]),
    (["group", "delete", "no-such-group"], ["no-such-group", "does not exist"]),
    (["group", "reset", "g", "--topic", "TOPIC", "--to-datetime", "yesterday"], ["--to-datetime", "ISO"]),
    (["group", "reset", "g", "--topic", "TOPIC:5", "--to-latest"], ["no partition 5", "0..1"]),
    (["tail", "TOPIC", "--partition", "9"], ["no partition 9"]),
    (["tail", "no-such-topic"], ["no-such-topic", "does not exist"]),
    (["type", "TOPIC", "-D", "producer.acks=7"], ["producer.acks=7"]),
])
def test_bad_input_is_one_line_and_exit_2(cluster: Cluster, topic_factory: Callable[..., str], args: list[str],
                                          words: list[str]) -> None:
    topic = topic_factory(partitions=2, replication_factor=1)
    result = kafkalab(cluster, *[a.replace("TOPIC", topic) for a in args], stdin="")
    assert_one_line_error(result, *words)


def test_group_list_of_a_cluster_nobody_answers_for_is_one_line_not_an_empty_list() -> None:
    from kafkalab.cluster.ports import free_port

    port = free_port()
    result = subprocess.run([sys.executable, "-m", "kafkalab", "group", "list", "--bootstrap", f"127.0.0.1:{port}"],
                            capture_output=True, text=True, timeout=60)
    assert_one_line_error(result, "cannot list consumer groups", f"127.0.0.1:{port}", "cluster up")


def test_the_group_helper_dying_mid_answer_costs_that_answer_not_the_console(cluster: Cluster,
                                                                             tmp_path: Path) -> None:
    """librdkafka aborts or segfaults its process when a group's coordinator moves under an admin request; the
    console's group view asks in a helper process, so such a crash is one error and the next poll answers."""
    import signal
    import threading

    from kafkalab.admin.group_helper import GroupHelper
    from kafkalab.cluster.ports import free_port
    from kafkalab.errors import KafkalabError

    helper = GroupHelper(tmp_path / "helper.log")
    try:
        failure: list[BaseException] = []

        def ask_nobody() -> None:  # nothing listens there: the helper waits, then is killed mid-request
            try:
                helper.describe_all(f"127.0.0.1:{free_port()}", "nobody", 2.0, 5.0)
            except BaseException as exc:
                failure.append(exc)

        asking = threading.Thread(target=ask_nobody)
        asking.start()
        wait_until(lambda: helper.pid is not None, 10, what="the helper started")
        time.sleep(1.0)
        crashed = helper.pid
        assert crashed is not None
        os.kill(crashed, signal.SIGSEGV)  # as librdkafka's crash ends it
        asking.join(30)
        assert len(failure) == 1 and isinstance(failure[0], KafkalabError), failure
        assert "SIGSEGV" in str(failure[0]) and str(tmp_path / "helper.log") in str(failure[0])
        groups = helper.describe_all(cluster.bootstrap, cluster, 2.0, 5.0)  # a new helper answers
        assert isinstance(groups, tuple) and helper.pid not in (None, crashed)
    finally:
        helper.close()
    assert helper.pid is None and process_gone(crashed)


def test_a_helper_whose_pipe_closes_before_it_is_reaped_is_named_by_its_signal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel closes a dying process's pipes before its exit code can be read: the helper's end must wait
    for it, not call a crashed helper one that "gave no answer in time" (a CI run saw exactly that)."""
    from kafkalab.admin import group_helper
    from kafkalab.errors import KafkalabError

    dies_slowly = ("import os, signal, sys, time; sys.stdin.buffer.read(1); os.close(1); time.sleep(0.5); "
                   "os.kill(os.getpid(), signal.SIGSEGV)")
    monkeypatch.setattr(group_helper, "HELPER_COMMAND", (sys.executable, "-c", dies_slowly))
    helper = group_helper.GroupHelper(tmp_path / "helper.log")
    try:
        with pytest.raises(KafkalabError, match="died of SIGSEGV"):
            helper.describe_all("127.0.0.1:1", "nobody", 1.0, 1.0)
    finally:
        helper.close()
    assert helper.pid is None


def test_the_helper_asks_through_a_new_client_after_a_coordinator_gave_no_answer() -> None:
    """A long-lived admin client said NOT_COORDINATOR for good once a killed coordinator was back (the Groups tab
    read `Unknown` while `kafkalab group describe` answered): an unanswered group costs the client."""
    from kafkalab.admin.group_helper import Answerer
    from kafkalab.admin.groups import GroupDescription, GroupListing

    class Client:
        def __init__(self, answers: bool) -> None:
            self.answers = answers

        def listed_with_gone(self, wait_s: float) -> list[GroupListing]:
            return [GroupListing("app", "Empty", False)]

        def describe(self, group: str, wait_s: float) -> GroupDescription:
            if self.answers:
                return GroupDescription(group, "Empty")
            return GroupDescription(group, "Unknown", reachable=False, error="NOT_COORDINATOR")

    made: list[Client] = []

    def make(bootstrap: str, timeout_s: float, log: object) -> Client:
        made.append(Client(answers=len(made) != 0))  # the first client is the stuck one
        return made[-1]

    answerer = Answerer(make)  # type: ignore[arg-type]
    ok, stuck = answerer.answer("127.0.0.1:1", 1, 1.0, 1.0)
    assert ok and [d.state for d in stuck] == ["Unknown"]  # type: ignore[attr-defined]
    ok, fresh = answerer.answer("127.0.0.1:1", 1, 1.0, 1.0)
    assert ok and [d.state for d in fresh] == ["Empty"] and len(made) == 2  # type: ignore[attr-defined]
    answerer.answer("127.0.0.1:1", 1, 1.0, 1.0)
    assert len(made) == 2, "a client that answers is kept"
