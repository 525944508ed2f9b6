"""Who plays a lab's clients, chosen at the console's prompt: kafkalab's Python clients, its Java clients, or a
command of the attendee's (the same choices as `--clients` and `--producer-cmd`/`--consumer-cmd`).

    clients java | clients python | producer-cmd CMD | consumer-cmd CMD | producer-cmd - (kafkalab's own again)
"""

from __future__ import annotations

from dataclasses import replace

from kafkalab.clients.foreign import check_runnable
from kafkalab.clients.foreign_command import check_template
from kafkalab.errors import KafkalabError
from kafkalab.labs.model import Lab

WORDS = ("clients", "producer-cmd", "consumer-cmd")
OWN = "-"  # producer-cmd - : kafkalab's own client plays the role again


def is_player_line(text: str) -> bool:
    return text.strip().split(" ", 1)[0] in WORDS


def java_templates(lab: Lab) -> tuple[str, str]:
    """kafkalab's Java clients' commands for the Kafka release ``lab`` runs on; KafkalabError (one line) for a lab
    they cannot play, before anything starts (its producer's command would exit at once, and the run wait out
    faults that can then never fire)."""
    from kafkalab.analysis.job import SEQUENCE_CLASSES
    from kafkalab.clients.java_client import java_command_templates
    from kafkalab.labs.run_deps import lab_distribution

    if lab.producer.config.transaction_id is not None:
        raise KafkalabError(f"lab {lab.id}'s producer is transactional and kafkalab's Java producer sends no "
                            "transactions yet: play it with clients python, or with your own command")
    if lab.processor is not None:  # its resends logged as sends: by content, a copy written twice reads as one
        raise KafkalabError(f"lab {lab.id}'s processor passes on its input's message ids, and kafkalab's Java "
                            "producer writes none, so its output's duplicates cannot be told: play it with "
                            "clients python")
    if lab.producer.config.tombstones:
        raise KafkalabError(f"lab {lab.id}'s producer deletes keys (producer.tombstones), which kafkalab's Java "
                            "producer does not: play it with clients python")
    if untold := sorted(lab.judged_metrics & set(SEQUENCE_CLASSES)):  # its row could only read "not observed"
        raise KafkalabError(f"lab {lab.id} is judged on {' and '.join(untold)}, which needs each record's place in "
                            "its producer's order, and kafkalab's Java clients write the course's log format, which "
                            "has none: play it with clients python")
    return java_command_templates(lab_distribution(lab.cluster.kafka_version))


def played(lab: Lab, text: str) -> tuple[Lab, str]:
    """``lab`` with its roles played as the line says, and what that is in words; KafkalabError (one line) for a
    line it cannot read or a command that cannot run."""
    word, _, rest = text.strip().partition(" ")
    rest = rest.strip()
    if word == "clients":
        if rest == "python":
            return _roles(lab, None, None), ("kafkalab's Python clients play the producer and consumers from the "
                                             "next run")
        if rest == "java":
            producer, consumer = java_templates(lab)
            return _roles(lab, producer, consumer), ("kafkalab's Java clients play the producer and consumers from "
                                                     "the next run")
        raise KafkalabError(f"clients {rest}: write clients java or clients python")
    role = word.removesuffix("-cmd")
    if not rest:
        raise KafkalabError(f"{word}: give the command that runs your {role} (e.g. {word} java {{options}} -jar "
                            f"{role}.jar), or {word} - for kafkalab's own")
    if rest == OWN:
        return _roles(lab, *((None, _consumer(lab)) if role == "producer" else (_producer(lab), None))), \
            f"kafkalab's own {role} plays it from the next run"
    check_runnable(check_template(rest, word), word)
    if role == "consumer" and not lab.consumers:
        raise KafkalabError(f"lab {lab.id} has no consumer for {word} to play")
    new = _roles(lab, rest, _consumer(lab)) if role == "producer" else _roles(lab, _producer(lab), rest)
    return new, f"your command plays the {role} from the next run: {rest}"


def _producer(lab: Lab) -> str | None:
    return lab.producer.command


def _consumer(lab: Lab) -> str | None:
    return next((c.command for c in lab.consumers if c.command), None)


def _roles(lab: Lab, producer: str | None, consumer: str | None) -> Lab:
    return replace(lab, producer=replace(lab.producer, command=producer),
                   consumers=tuple(replace(c, command=consumer) for c in lab.consumers))
