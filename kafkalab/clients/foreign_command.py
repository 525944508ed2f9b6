"""A foreign client's command: the attendee's (or the course's) program given as a template, filled in per run.

``{bootstrap}``, ``{topic}``, ``{options}`` (the role's course options as ``-Dname=value`` words, as the course's
apps read them), ``{options_file}`` (the same as a properties file) and ``{run_dir}`` are substituted, each
shell-quoted; the same values are in the environment as ``KAFKALAB_BOOTSTRAP`` and so on. ``{{`` and ``}}`` are
literal braces. The command runs through ``/bin/sh -c``, so it may be a pipeline or ``cd x && mvn exec:java``.
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kafkalab.errors import KafkalabError

PLACES = ("bootstrap", "topic", "options", "options_file", "run_dir")
OPTIONS_FILE = "kafkalab.properties"


class CommandError(KafkalabError):
    """A command template that cannot be filled in."""


def check_template(template: str, what: str) -> str:
    """``template`` when every ``{name}`` in it is one kafkalab fills in; CommandError naming the first that is
    not (``what`` says where it was given: ``--producer-cmd``)."""
    if not template.strip():
        raise CommandError(f"{what} is empty: give the command that runs your client, e.g. "
                           f"'java {{options}} -jar my-producer.jar'")
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise CommandError(f"{what}: {exc} (write a literal brace as {{{{ or }}}})") from None
    for name in fields:
        if name not in PLACES:
            raise CommandError(f"{what}: {{{name}}} is not filled in by kafkalab: use "
                               + ", ".join(f"{{{p}}}" for p in PLACES))
    return template


@dataclass(frozen=True)
class RoleValues:
    """What a role's command is told: where the cluster is, its topic, its course options."""

    bootstrap: str
    topic: str
    options: Mapping[str, str]  # course option name -> value (the lab's, then the attendee's)
    run_dir: Path

    def defines(self) -> list[str]:
        return [f"-D{name}={value}" for name, value in self.options.items()]

    def write_options_file(self, work_dir: Path) -> Path:
        path = work_dir / OPTIONS_FILE
        lines = [f"{name}={value}" for name, value in self.options.items()]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def environment(self, options_file: Path) -> dict[str, str]:
        return {"KAFKALAB_BOOTSTRAP": self.bootstrap, "KAFKALAB_TOPIC": self.topic,
                "KAFKALAB_OPTIONS": " ".join(shlex.quote(d) for d in self.defines()),
                "KAFKALAB_OPTIONS_FILE": str(options_file), "KAFKALAB_RUN_DIR": str(self.run_dir)}


def fill(template: str, values: RoleValues, options_file: Path) -> str:
    """The shell command line: ``template`` with every place filled in, shell-quoted."""
    filled = {"bootstrap": shlex.quote(values.bootstrap), "topic": shlex.quote(values.topic),
              "options": " ".join(shlex.quote(d) for d in values.defines()),
              "options_file": shlex.quote(str(options_file)), "run_dir": shlex.quote(str(values.run_dir))}
    return template.format_map(filled)
