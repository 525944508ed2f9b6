"""Foreign clients (issue 45): a lab's producer and consumers played by any command.

The commands under test are shell scripts around `kafkalab type` and `kafkalab tail` (tests/foreign_clients/):
they know nothing of kafkalab's message ids and write the course's payload logs, as the course's Java apps do.
The real-cluster runs go through the real `kafkalab run` command, each on a cluster of its own (free ports).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalab.clients.foreign import ForeignConsumer, PayloadCount, check_runnable
from kafkalab.clients.foreign_command import CommandError, RoleValues, check_template, fill
from kafkalab.clients.options import ConsumerConfig
from kafkalab.clients.stats import ClientEvent, ClientState
from kafkalab.labs.loader import load_lab
from kafkalab.labs.metrics import foreign_blind

SCRIPTS = Path(__file__).resolve().parent / "foreign_clients"
PRODUCER = f"sh {SCRIPTS / 'type_producer.sh'}"
CONSUMER = f"sh {SCRIPTS / 'tail_consumer.sh'}"
LABS = Path(__file__).resolve().parents[1] / "labs"


def kafkalab(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run([sys.executable, "-m", "kafkalab", *argv], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


# ---- the command and its places -------------------------------------------------------------------------------
def test_places_are_filled_shell_quoted_and_in_the_environment(tmp_path: Path) -> None:
    values = RoleValues("127.0.0.1:9092", "test topic", {"producer.acks": "1", "producer.topic": "a b"}, tmp_path)
    options_file = values.write_options_file(tmp_path)
    line = fill("run --b {bootstrap} -t {topic} {options} -f {options_file} {{literal}}", values, options_file)
    assert line == (f"run --b 127.0.0.1:9092 -t 'test topic' -Dproducer.acks=1 '-Dproducer.topic=a b' "
                    f"-f {options_file} {{literal}}")
    assert options_file.read_text() == "producer.acks=1\nproducer.topic=a b\n"
    env = values.environment(options_file)
    assert env["KAFKALAB_BOOTSTRAP"] == "127.0.0.1:9092" and env["KAFKALAB_OPTIONS_FILE"] == str(options_file)


@pytest.mark.parametrize(("template", "says"), [
    ("java {option} -jar p.jar", "{option} is not filled in by kafkalab: use {bootstrap}"),
    ("   ", "is empty: give the command that runs your client"),
    ("java {options -jar", "write a literal brace as {{ or }}"),
])
def test_a_template_kafkalab_cannot_fill_is_refused_in_one_line(template: str, says: str) -> None:
    with pytest.raises(CommandError, match=re.escape(says)):
        check_template(template, "--producer-cmd")


def test_a_program_that_is_not_there_is_known_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="javaa: no such command on PATH"):
        check_runnable("javaa {options} -jar p.jar", "--producer-cmd")
    with pytest.raises(CommandError, match="is not an executable file"):
        check_runnable(f"{tmp_path}/nothing.sh", "--consumer-cmd")
    check_runnable("cd somewhere && ./mvnw exec:java", "--producer-cmd")  # a shell construct: the shell's to judge
    check_runnable("FOO=1 sh -c true", "--producer-cmd")


def test_kafkalab_run_refuses_a_missing_program_with_exit_2_before_anything_starts(tmp_path: Path) -> None:
    done = kafkalab("run", "setup-check", "--headless", "--runs-dir", str(tmp_path), "--producer-cmd",
                    "no-such-producer {options}", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    said = (done.stdout + done.stderr).strip().splitlines()
    assert said == ["kafkalab: error: --producer-cmd: no-such-producer: no such command on PATH: check the "
                    "spelling, or give its full path"], said
    assert not list(tmp_path.iterdir())  # no run dir: nothing started


def test_a_lab_file_names_its_roles_commands_and_what_they_hide(tmp_path: Path) -> None:
    text = (LABS / "01-setup-check.toml").read_text()
    text = text.replace("[[consumer]]\nlocal_id = 1", '[[consumer]]\nlocal_id = 1\ncommand = "my-consumer {options}"')
    text = text.replace("[expect]", "[expect]\n\"consumer.1.assign_wait_s\" = \"< 10\"")
    path = tmp_path / "setup-check.toml"
    path.write_text(text)
    lab = load_lab(path)
    assert lab.commands == {"consumer-1": "my-consumer {options}"}
    assert foreign_blind(lab) == ["consumer.1.assign_wait_s"]
    assert foreign_blind(lab, reporting={"consumer-1"}) == []  # its reported rebalances time the wait
    path.write_text(text.replace("my-consumer {options}", "my-consumer {opts}"))
    with pytest.raises(Exception, match=r"consumer\[1\]\.command.*\{opts\} is not filled in"):
        load_lab(path)


# ---- the process: its logs counted, its end ---------------------------------------------------------------------
def test_payload_lines_are_counted_as_they_grow_control_records_and_half_lines_left_out(tmp_path: Path) -> None:
    count = PayloadCount(tmp_path)
    log = tmp_path / "payload-1.log"
    log.write_text('t,0,1,a "quoted", value\nt,1,,quit\nt,2,3,b')
    assert count.refresh() == 1  # the quit record is a control word; "b" is not whole yet
    with log.open("a") as fh:
        fh.write("\nt,3,4,c\n")
    assert count.refresh() == 3
    count.skip_existing()  # a consumer started again counts only what it writes
    with log.open("a") as fh:
        fh.write("t,0,5,d\n")
    assert count.refresh() == 4


def test_a_consumer_that_ignores_its_stop_is_killed_after_its_grace_and_the_timeline_says_so(tmp_path: Path) -> None:
    events: list[ClientEvent] = []
    consumer = ForeignConsumer(ConsumerConfig.of({"consumer.local-id": "1"}),
                               "trap '' TERM; echo started; while :; do sleep 0.1; done",
                               RoleValues("127.0.0.1:1", "t", {}, tmp_path), events.append)
    consumer.start()
    try:
        deadline = time.monotonic() + 10
        while "started" not in consumer.output and time.monotonic() < deadline:
            time.sleep(0.05)
        consumer.terminate(grace_s=0.5)
        assert consumer.join(10)
    finally:
        consumer.crash()
    assert consumer.stats().state == ClientState.FINISHED  # stopped as asked: not a failure of its own
    said = r"consumer-1 did not end within [0-9.]+s of SIGTERM: killed"
    assert any(re.search(said, e.detail) for e in events), events
    assert (tmp_path / "consumer-1" / "output.log").read_text().startswith("started")


def test_a_command_that_exits_at_once_fails_with_its_last_line(tmp_path: Path) -> None:
    consumer = ForeignConsumer(ConsumerConfig.of({"consumer.local-id": "2"}), "echo 'no such jar: x.jar' >&2; exit 3",
                               RoleValues("127.0.0.1:1", "t", {}, tmp_path), None)
    consumer.start()
    assert consumer.join(10)
    stats = consumer.stats()
    assert stats.state == ClientState.FAILED and stats.foreign
    assert stats.error is not None and "exited at once with status 3: no such jar: x.jar" in stats.error


def test_a_producer_that_reports_its_failures_is_observed_and_its_report_lines_stay_out_of_its_pane(
        tmp_path: Path) -> None:
    from kafkalab.clients.foreign import REPORT_PREFIX, ForeignProducer
    from kafkalab.clients.options import ProducerConfig

    # a template's braces are places: a literal one is doubled
    script = ("echo '" + REPORT_PREFIX + '{{"attempted": 5, "failed": {{"NOT_ENOUGH_REPLICAS": 3}}}}' + "'; "
              "printf 't,0,1,a\\nt,1,2,b\\n' > payload.log; echo done")
    told: list[ClientEvent] = []
    producer = ForeignProducer(ProducerConfig.of({}), script, RoleValues("127.0.0.1:1", "t", {}, tmp_path))
    producer.start()
    assert producer.join(10)
    stats = producer.stats()
    assert (stats.attempted, stats.acked, dict(stats.failed), stats.reports) == (5, 2, {"NOT_ENOUGH_REPLICAS": 3}, True)
    assert stats.output == ("done",)
    consumer = ForeignConsumer(ConsumerConfig.of({"consumer.local-id": "3"}),
                               "echo '" + REPORT_PREFIX + '{{"event": "assigned", "detail": "now [0, 2]", '
                               '"partitions": [0, 2]}}' + "'", RoleValues("127.0.0.1:1", "t", {}, tmp_path),
                               told.append)
    consumer.start()
    assert consumer.join(10) and consumer.stats().reports
    assert [(e.kind, e.partitions) for e in told if e.kind == "assigned"] == [("assigned", (0, 2))]
    lab = load_lab(LABS / "06-min-isr-rf2.toml").with_commands(producer="sh -c true")
    assert "producer.failed.NOT_ENOUGH_REPLICAS" in foreign_blind(lab)
    assert "producer.failed.NOT_ENOUGH_REPLICAS" not in foreign_blind(lab, reporting={"producer"})


def test_a_reporting_consumers_partitions_are_its_own_not_a_dead_members_held_in_its_group(tmp_path: Path) -> None:
    """no-commits with kafkalab's Java consumers: the plain group's dead member still held every partition, and
    they passed for its replacement's: `assigned consumer 3` fired at once, 45 s before it had any."""
    from kafkalab.clients.foreign import REPORT_PREFIX, GroupFacts

    def report(event: str, parts: str) -> str:
        return "echo '" + REPORT_PREFIX + '{{"event": "' + event + '", "partitions": [' + parts + "]}}'; "

    dead_members = GroupFacts("Stable", (0, 1, 2), {}, {})
    waiting = ForeignConsumer(ConsumerConfig.of({"consumer.local-id": "3"}), report("revoked", "") + "sleep 30",
                              RoleValues("127.0.0.1:1", "t", {}, tmp_path))
    waiting.observe_group(dead_members)
    waiting.start()
    try:
        deadline = time.monotonic() + 10
        while not waiting.stats().reports and time.monotonic() < deadline:
            time.sleep(0.05)
        assert waiting.stats().assignment == ()  # it reports its rebalances: none gave it a partition yet
    finally:
        waiting.crash()
        waiting.join(10)
    moving = ForeignConsumer(ConsumerConfig.of({"consumer.local-id": "4"}),
                             report("assigned", "0,1") + report("assigned", "2") + report("revoked", "0")
                             + "sleep 30", RoleValues("127.0.0.1:1", "t", {}, tmp_path / "4"))
    silent = ForeignConsumer(ConsumerConfig.of({"consumer.local-id": "5"}), "sleep 30",
                             RoleValues("127.0.0.1:1", "t", {}, tmp_path / "5"))
    for c in (moving, silent):
        c.observe_group(dead_members)
        c.start()
    try:
        deadline = time.monotonic() + 10
        while moving.stats().assignment != (1, 2) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert moving.stats().assignment == (1, 2)  # assigned 0, 1, then 2; 0 revoked
        assert silent.stats().assignment == (0, 1, 2)  # one that reports nothing: its group's, as documented
    finally:
        for c in (moving, silent):
            c.crash()
            c.join(10)


def test_java_clients_refuse_a_lab_they_cannot_play_before_anything_starts(tmp_path: Path) -> None:
    """hanging-transaction with --clients java: the Java producer exited at once (it sends no transactions), and the
    run waited 90 s for faults that could then never fire, then judged nothing."""
    done = kafkalab("run", "hanging-transaction", "--headless", "--clients", "java", "--runs-dir", str(tmp_path),
                    timeout=60)
    assert done.returncode == 2
    assert "producer is transactional and kafkalab's Java producer sends no transactions yet" in done.stderr
    assert not list(tmp_path.iterdir())  # no run was started
    piped = kafkalab("run", "exactly-once-pipeline", "--headless", "--clients", "java", "--runs-dir", str(tmp_path),
                     timeout=60)  # graded so, the processor's duplicates passed as none: a row judged on nothing
    assert piped.returncode == 2 and "its output's duplicates cannot be told" in piped.stderr
    assert not list(tmp_path.iterdir())
    grown = kafkalab("fix", "partition-growth", "--clients", "java", "--runs-dir", str(tmp_path),
                     timeout=60)  # graded PASS on key_reordered == 0, where its logs could not tell it
    assert grown.returncode == 2 and "judged on key_reordered" in grown.stderr
    deleting = kafkalab("run", "deleted-value-kept", "--headless", "--clients", "java", "--runs-dir", str(tmp_path),
                        timeout=60)  # the Java producer exited at once, and the run waited out its faults
    assert deleting.returncode == 2 and "deletes keys (producer.tombstones)" in deleting.stderr
    assert not list(tmp_path.iterdir())


def test_kafkalabs_java_consumer_reports_before_any_rebalance(tmp_path: Path) -> None:
    """no-commits with Java consumers: consumer 3 never got a partition, so it never reported a rebalance and was
    taken for a consumer that reports nothing; its wait read "not observed" and the graded check NOT GRADED,
    where it was never assigned. The Java consumer now says at its start that it reports (no cluster here)."""
    from kafkalab.clients.java_client import java_command_templates
    from kafkalab.labs.run_deps import lab_distribution

    _, template = java_command_templates(lab_distribution())
    alone = ForeignConsumer(ConsumerConfig.of({"consumer.local-id": "3"}), template,
                            RoleValues("127.0.0.1:1", "t", {}, tmp_path))
    alone.start()
    try:
        deadline = time.monotonic() + 60
        while not alone.stats().reports and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alone.stats().reports, alone.output
        assert alone.stats().assignment == ()  # it reports, and no rebalance gave it a partition
    finally:
        alone.crash()
        alone.join(10)


def test_a_role_that_wrote_no_payload_log_is_said_before_the_analysis(tmp_path: Path) -> None:
    from kafkalab.clients.foreign import no_log_said

    (tmp_path / "producer").mkdir()
    said = no_log_said("producer", tmp_path)
    assert said is not None and said.startswith(f"producer (your command) wrote no payload log in {tmp_path}/producer")
    assert "per acknowledged record" in said
    (tmp_path / "producer" / "payload-1.log").write_text("")
    assert no_log_said("producer", tmp_path) is None


# ---- on a real cluster -------------------------------------------------------------------------------------------
@pytest.mark.cluster
def test_a_lab_run_with_a_foreign_producer_and_consumer_is_analysed_from_their_course_logs(tmp_path: Path) -> None:
    done = kafkalab("run", "setup-check", "--headless", "--free-ports", "--runs-dir", str(tmp_path),
                    "--json", str(tmp_path / "out.json"), "--producer-cmd", PRODUCER, "--consumer-cmd", CONSUMER)
    run_dir = next(tmp_path.glob("setup-check-*"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "played by your command: producer, consumer-1" in done.stdout
    producer_log = (run_dir / "producer" / "payload.log").read_text().splitlines()
    assert len(producer_log) == 100 and producer_log[0].endswith(', "with" a comma')
    assert len((run_dir / "consumer-1" / "payload.log").read_text().splitlines()) == 100
    assert "tail consumer: quit" in (run_dir / "consumer-1" / "output.log").read_text()  # ended by a quit record
    report = json.loads((run_dir / "report.json").read_text())
    assert report["lost"] == 0 and report["totals"]["acknowledged"] == 100 and report["totals"]["typed"] == 0
    result = json.loads((tmp_path / "out.json").read_text())  # one run: its result alone
    assert result["outcome"] == "passed"


HELD_S = 4  # the hold's length: an admin call at 1 s into it, the heal 3 s later


def held_lab(tmp_path: Path) -> Path:
    """setup-check with 200 records, the foreign producer's links to every broker held for HELD_S at 20 %."""
    text = (LABS / "01-setup-check.toml").read_text()
    text = text.replace('"producer.num-records-per-roll" = 100', '"producer.num-records-per-roll" = 200')
    text = text.replace("[expect]\nacknowledged = 100\ndistinct_consumed = 100", f"""[[fault]]
at = "progress 20%"
do = "hold"
on = "producer"
to = "brokers 1,2,3"

[[fault]]
at = "after 1s"
do = "alter-config"
on = "topic test-topic"
configs = {{ "retention.ms" = "3600000" }}

[[fault]]
at = "after {HELD_S - 1}s"
do = "heal"
on = "producer"

[expect]
acknowledged = 200
distinct_consumed = 200""")
    path = tmp_path / "lab" / "setup-check.toml"
    path.parent.mkdir()
    path.write_text(text)
    return path


@pytest.mark.cluster
def test_a_foreign_producer_under_a_shell_is_held_by_the_network_fault_and_the_admin_path_is_not(
        tmp_path: Path) -> None:
    """The producer is `sh` running `kafkalab type`: registered by the shell's pid, the proxy holds its child's
    connections; kafkalab's own (the cluster watch, the audit) go around the proxy and carry on."""
    done = kafkalab("run", str(held_lab(tmp_path)), "--headless", "--free-ports", "--runs-dir", str(tmp_path),
                    "--producer-cmd", PRODUCER, "--consumer-cmd", CONSUMER)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = next(tmp_path.glob("setup-check-*"))
    acked_at = [int(m.group(1)) for line in (run_dir / "producer" / "output.log").read_text().splitlines()
                if (m := re.fullmatch(r"acked \S+ at (\d+)", line))]
    assert len(acked_at) == 200
    longest_gap_ms = max(b - a for a, b in itertools.pairwise(acked_at))
    assert longest_gap_ms >= (HELD_S - 1) * 1000, longest_gap_ms  # nothing acknowledged while held
    timeline = json.loads((run_dir / "timeline.json").read_text())
    faults = [e["detail"] for e in timeline["events"] if e["kind"] == "fault"]
    assert faults[0].startswith("hold producer -> broker-1"), faults
    assert "retention.ms" in faults[1] and faults[2].startswith("heal producer"), faults  # the admin call went through
    result = json.loads((run_dir / "result.json").read_text())
    assert [f["state"] for f in result["faults"]] == ["fired"] * 3, result["faults"]


# ---- the console's choice: who plays the clients ------------------------------------------------------------------
def test_the_prompt_chooses_who_plays_the_clients_and_takes_it_back() -> None:
    from kafkalab.feeds.players import is_player_line, played

    lab = load_lab(LABS / "01-setup-check.toml")
    assert is_player_line("producer-cmd sh -c true") and not is_player_line("producer.acks=all")
    mine, said = played(lab, "consumer-cmd sh -c 'my consumer {options}'")
    assert mine.commands == {"consumer-1": "sh -c 'my consumer {options}'"}
    assert said == "your command plays the consumer from the next run: sh -c 'my consumer {options}'"
    both, _ = played(mine, "producer-cmd sh -c true")
    assert set(both.commands) == {"producer", "consumer-1"}
    back, said = played(both, "consumer-cmd -")
    assert back.commands == {"producer": "sh -c true"} and said == "kafkalab's own consumer plays it from the next run"
    assert played(back, "clients python")[0].commands == {}
    with pytest.raises(Exception, match="write clients java or clients python"):
        played(lab, "clients rust")
    with pytest.raises(Exception, match="no-such-thing: no such command on PATH"):
        played(lab, "producer-cmd no-such-thing {options}")


@pytest.mark.cluster
def test_a_lab_run_with_kafkalabs_java_clients(tmp_path: Path) -> None:
    """--clients java: kafkalab's own Java producer and consumer play the roles; their course-format logs analysed,
    the consumer ended by quit, the producer's report read."""
    done = kafkalab("run", "setup-check", "--headless", "--free-ports", "--runs-dir", str(tmp_path),
                    "--clients", "java")
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = next(tmp_path.glob("setup-check-*"))
    assert "records matched by topic, partition, key and value" in " ".join(done.stdout.split())
    assert (run_dir / "consumer-1" / "payload-1.log").exists() and (run_dir / "producer" / "payload.log").exists()
    result = json.loads((run_dir / "result.json").read_text())
    assert result["metrics"]["producer.attempted"] == 100  # reported by the Java producer, not only counted
