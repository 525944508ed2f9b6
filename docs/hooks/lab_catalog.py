"""The lab catalog of docs/labs.md and the client options of docs/lab-files.md, read from the sources.

labs/*.toml gives each lab's section (title, what it teaches, why it shows on every run, its modes and
Kafka version, its instructions); the ``Option(...)`` calls of kafkalab/clients/options.py give the table of
``producer.*`` and ``consumer.*`` options, read with ``ast`` (nothing of kafkalab is imported).
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODE_NAMES = {"zookeeper": "ZooKeeper", "kraft": "KRaft"}


@dataclass(frozen=True)
class LabInfo:
    number: int
    id: str
    title: str
    teaches: str
    why: str
    instructions: str
    modes: tuple[str, ...]
    kafka_versions: tuple[str, ...]  # the first is the lab's own
    brokers: int
    controllers: int
    combined: bool
    fix: dict[str, Any] | None = None  # the lab's [fix] table, when it is an exercise too
    incident: dict[str, Any] | None = None  # the lab's [incident] table, when it is told as a ticket

    def platforms(self) -> list[tuple[str, str]]:
        """(mode, version) pairs, as ClusterPlan.platforms: Kafka 4.x has no ZooKeeper mode."""
        return [(m, v) for v in self.kafka_versions for m in self.modes
                if not (m == "zookeeper" and int(v.split(".")[0]) >= 4)]

    def runs_on(self) -> str:
        """e.g. ``ZooKeeper 3.9.2 · KRaft 3.9.2, 4.4.0`` or ``KRaft (3 controllers) 4.4.0``; the first is the
        default."""
        parts = []
        for mode in self.modes:
            text = MODE_NAMES.get(mode, mode)
            if mode == "kraft" and (self.controllers > 1 or self.combined):
                text += f" ({self.controllers} {'combined ' if self.combined else ''}controllers)"
            parts.append(f"{text} {', '.join(v for m, v in self.platforms() if m == mode)}")
        return " · ".join(parts)

    def commands(self) -> list[str]:
        """The command that runs the lab on each of its platforms (a 4.x version implies KRaft: no --mode)."""
        own_mode, own_version = self.platforms()[0]
        out = []
        for mode, version in self.platforms():
            implied = version != own_version and int(version.split(".")[0]) >= 4
            flags = (f" --mode {mode}" if mode != own_mode and not implied else "") + (
                f" --kafka-version {version}" if version != own_version else "")
            out.append(f"`kafkalab run {self.id}{flags}`")
        return out


def known_kafkas(root: Path) -> tuple[str, ...]:
    """``KAFKA_VERSIONS`` of kafkalab/__init__.py: every Kafka kafkalab runs, the default first."""
    tree = ast.parse((root / "kafkalab" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KAFKA_VERSIONS"
                                                for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise ValueError("kafkalab/__init__.py sets no KAFKA_VERSIONS")


def lab_versions(cluster: dict[str, Any], modes: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
    """As the loader reads them: kafka_versions, the lab's own kafka_version first; by default every known
    Kafka that has one of the lab's modes."""
    own = cluster.get("kafka_version", "")
    default = [own] if own else [v for v in known if modes != ("zookeeper",) or int(v.split(".")[0]) < 4]
    versions = list(cluster.get("kafka_versions", default))
    return (own, *[v for v in versions if v != own]) if own else tuple(versions)


def read_labs(root: Path) -> tuple[list[LabInfo], list[str]]:
    labs: list[LabInfo] = []
    problems: list[str] = []
    try:
        known = known_kafkas(root)
    except (OSError, SyntaxError, ValueError) as exc:
        return [], [f"cannot read the Kafka versions: {exc}"]
    for number, path in enumerate(sorted((root / "labs").glob("*.toml")), start=1):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            lab, cluster = data["lab"], data.get("cluster", {})
            mode = cluster.get("mode", "")
            modes = tuple(cluster.get("modes", [mode or "zookeeper"]))
            modes = (mode, *[m for m in modes if m != mode]) if mode else modes
            labs.append(LabInfo(
                number, lab["id"], lab["title"], lab["teaches"], lab["why"], lab["instructions"], modes,
                lab_versions(cluster, modes, known), cluster.get("brokers", 3),
                cluster.get("controllers", 1), cluster.get("combined", False), data.get("fix"),
                data.get("incident")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"labs/{path.name}: cannot read it ({type(exc).__name__}: {exc})")
    if not labs:
        problems.append("no lab file found in labs/")
    return labs, problems


def _instructions(text: str) -> list[str]:
    """The lab's markdown instructions, indented into a collapsed block; headings become bold lines."""
    out = []
    for line in text.strip().splitlines():
        if m := re.match(r"#+\s+(.*)", line):
            line = f"**{m[1]}**"
        out.append(f"    {line}" if line.strip() else "")
    return out


def render_labs(root: Path) -> tuple[str, list[str]]:
    labs, problems = read_labs(root)
    out = ["| # | lab | title | runs on (first: default) |", "|---|---|---|---|"]
    out += [f"| {lab.number} | [`{lab.id}`](#{lab.id}) | {lab.title} | {lab.runs_on()} |" for lab in labs]
    out.append("")
    for lab in labs:
        out += [f"## {lab.id}", "", f"**{lab.number} · {lab.title}**", ""]
        out += [f"Runs on {lab.runs_on()}, {lab.brokers} brokers: {' or '.join(lab.commands())} "
                f"(`kafkalab console {lab.id}` takes the same options).", ""]
        if lab.incident:
            out += _incident_part(lab)
        else:
            out += [f"**Teaches:** {lab.teaches}.", "", f"**Why it shows on every run:** {lab.why}", ""]
            out += [f'??? note "Instructions (`kafkalab labs --show {lab.id}`)"', "", *_instructions(lab.instructions),
                    ""]
        if lab.fix:
            out += _fix_part(lab.fix)
    return "\n".join(out), problems


def _incident_part(lab: LabInfo) -> list[str]:
    """An incident as the attendee meets it: the ticket and the question; its cause, its cure, what it teaches
    and its walkthrough in a collapsed block marked as a spoiler (a lab file can always be read: this deters
    only)."""
    incident = lab.incident or {}
    out = ["**The ticket:**", "", *(f"> {line}" if line.strip() else ">"
                                    for line in str(incident.get("ticket", "")).strip().splitlines()), ""]
    out += [f"**{incident.get('question', 'What is the root cause?')}** "
            f"(`kafkalab labs --answer {lab.id} N`)", ""]
    out += [f"{i}. {choice}" for i, choice in enumerate(incident.get("choices", []), start=1)] + [""]
    cure = str(incident.get("cure", "")).strip().splitlines()
    spoiler = ["**The cause:**", "", *str(incident.get("explanation", "")).strip().splitlines(), "",
               *(["**The cure:**", "", *cure, ""] if cure else []), f"**Teaches:** {lab.teaches}.", "",
               f"**Why it shows on every run:** {lab.why}", "",
               *(line[4:] if line.startswith("    ") else line for line in _instructions(lab.instructions))]
    out += ['??? danger "Spoiler: the cause, the cure and the walkthrough (name the cause first)"', "",
            *(f"    {line}" if line.strip() else "" for line in spoiler), ""]
    return out


def _fix_part(fix: dict[str, Any]) -> list[str]:
    """A lab's fix exercise as the attendee gets it: the task, what may change, what is graded; never the
    solution (it is shown once solved or given up)."""
    expect = ", ".join(f"`{k} {v if str(v)[:1] in '<>=!' else '== ' + str(v)}`"
                       for k, v in fix.get("expect", {}).items())
    out = ["**Fix exercise.** " + " ".join(str(fix.get("task", "")).split()), ""]
    out += [f"You may change {', '.join(f'`{a}`' for a in fix.get('allow', []))}; graded over "
            f"{fix.get('runs', 2)} seeded runs, each of which must hold {expect}"
            + (f" (the lab's faults {', '.join(str(n) for n in fix['drop_faults'])}, which show the cure, "
               "are left out)" if fix.get("drop_faults") else "") + ".", ""]
    return out


def check_readme(root: Path) -> list[str]:
    """The README's lab table must name every lab of the catalog, each with the platforms it runs on."""
    labs, _ = read_labs(root)
    try:
        readme = (root / "README.md").read_text(encoding="utf-8")
    except OSError as exc:
        return [f"README.md: {exc}"]
    rows = {m[1]: m[0] for m in re.finditer(r"^\| \d+ \| \[`([a-z0-9-]+)`\].*$", readme, re.M)}
    return [f"README.md: the lab table lacks lab {lab.id} (labs/): add its row" if lab.id not in rows else
            f"README.md: lab {lab.id}'s row should say it runs on {lab.runs_on()}"
            for lab in labs if lab.id not in rows or f"| {lab.runs_on()} |" not in rows[lab.id]]


# ---- client options --------------------------------------------------------------------------------
def _literal(node: ast.expr | None) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def read_options(root: Path) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """(name, Kafka's name, default, help) of every ``producer.*`` and ``consumer.*`` option, in the source's
    order."""
    path = root / "kafkalab" / "clients" / "options.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError) as exc:
        return [], [f"{path.relative_to(root)}: cannot read it ({exc})"]
    rows = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Option", "_int")):
            continue
        args = [_literal(a) for a in node.args]
        if not args or not isinstance(args[0], str) or not args[0].startswith(("producer.", "consumer.")):
            continue
        helptext = args[3] if node.func.id == "Option" and len(args) > 3 else args[2] if len(args) > 2 else None
        kafka = next((_literal(k.value) for k in node.keywords if k.arg == "kafka"), None)
        rows.append((args[0], str(kafka or ""), "" if args[1] is None else str(args[1]), str(helptext or "")))
    rows.sort(key=lambda r: (not r[0].startswith("producer."),))  # stable: producer first, source order kept
    if not rows:
        return [], [f"{path.relative_to(root)}: no producer.*/consumer.* Option(...) found: the options table "
                    "of docs/lab-files.md would be empty"]
    return rows, []


def render_options(root: Path) -> tuple[str, list[str]]:
    rows, problems = read_options(root)
    out = ["| option | Kafka's name | default | meaning |", "|---|---|---|---|"]
    out += [f"| `{name}` | {f'`{kafka}`' if kafka else ''} | {f'`{default}`' if default else '(none)'} | "
            f"{text.replace('|', chr(92) + '|')} |" for name, kafka, default, text in rows]
    return "\n".join([*out, ""]), problems
