"""--producer-cmd, --consumer-cmd and --clients: who plays a lab's producer and consumers (`run`, `fix`)."""

from __future__ import annotations

import argparse
from enum import StrEnum

from kafkalab.clients.foreign import check_runnable
from kafkalab.clients.foreign_command import PLACES
from kafkalab.errors import KafkalabError
from kafkalab.feeds.players import java_templates
from kafkalab.labs.model import Lab

PLACES_TEXT = ", ".join(f"{{{p}}}" for p in PLACES)


class ClientKind(StrEnum):
    """Whose clients play the roles no command is given for."""

    PYTHON = "python"  # kafkalab's own, on librdkafka
    JAVA = "java"  # kafkalab's own Java clients, on kafka-clients (built by `kafkalab fetch`)


def add_client_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--producer-cmd", metavar="CMD", default=None,
                        help=f"run CMD as the lab's producer (any program; {PLACES_TEXT} are filled in, e.g. "
                             "\"java {options} -jar producer.jar\"); it writes payload.log in its directory")
    parser.add_argument("--consumer-cmd", metavar="CMD", default=None,
                        help="run CMD as each of the lab's consumers (the same places); ended by a quit record")
    parser.add_argument("--clients", choices=[k.value for k in ClientKind], default=ClientKind.PYTHON.value,
                        help="kafkalab's own clients: python (librdkafka, the default) or java (kafka-clients), "
                             "for the roles no --producer-cmd/--consumer-cmd is given for")


def with_clients(lab: Lab, args: argparse.Namespace) -> Lab:
    """``lab`` with its roles played as the command line says; KafkalabError (one line) for a command that cannot
    be run, before anything starts."""
    producer, consumer = getattr(args, "producer_cmd", None), getattr(args, "consumer_cmd", None)
    if ClientKind(getattr(args, "clients", ClientKind.PYTHON)) is ClientKind.JAVA:
        java_producer, java_consumer = java_templates(lab)
        producer = producer or java_producer
        consumer = consumer or java_consumer
    for template, what in ((producer, "--producer-cmd"), (consumer, "--consumer-cmd")):
        if template is not None:
            check_runnable(template, what)
    if consumer is not None and not lab.consumers:
        raise KafkalabError(f"--consumer-cmd: lab {lab.id} has no consumer to play: drop it")
    return lab.with_commands(producer, consumer)


def client_argv(args: argparse.Namespace) -> list[str]:
    """The choices again, for a child kafkalab process (nothing for the defaults)."""
    argv: list[str] = []
    for flag, value in (("--producer-cmd", getattr(args, "producer_cmd", None)),
                        ("--consumer-cmd", getattr(args, "consumer_cmd", None))):
        if value is not None:
            argv += [flag, value]
    if getattr(args, "clients", ClientKind.PYTHON) != ClientKind.PYTHON:
        argv += ["--clients", str(args.clients)]
    return argv
