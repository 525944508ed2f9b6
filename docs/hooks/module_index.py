"""The module listing of docs/architecture.md: every package and module under kafkalab/, read from disk.

Each module's line is the summary of its docstring, read with ``ast`` (nothing of kafkalab is imported).
A module without a docstring is reported as a problem, which the hook logs as a warning: ``mkdocs build
--strict`` then fails, so the listing can never silently lose a line.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = {"__pycache__"}
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")  # :class:`~kafkalab.x.Name` -> `Name`
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


@dataclass
class Package:
    """One directory of the source tree: its own docstring (``__init__.py``), modules and other files."""

    path: str  # e.g. "kafkalab/admin"
    summary: str | None = None
    has_init: bool = False
    modules: list[tuple[str, str | None]] = field(default_factory=list)  # (file name, summary)
    other_files: list[str] = field(default_factory=list)


def summary(docstring: str | None) -> str | None:
    """The docstring's first sentence on one line, with Sphinx roles and double backticks made plain.

    A docstring's first line often wraps mid-phrase, so the first sentence of its first paragraph is used.
    """
    if not docstring or not docstring.strip():
        return None
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    paragraph = _ROLE.sub(lambda m: f"`{m[1].rsplit('.', 1)[-1]}`", paragraph).replace("``", "`")
    return _SENTENCE_END.split(paragraph, maxsplit=1)[0]


def docstring_of(path: Path) -> tuple[str | None, str | None]:
    """(summary, problem): the module's summary, or why there is none."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        return None, f"cannot read its docstring: {exc}"
    text = summary(ast.get_docstring(tree))
    return text, None if text else "has no module docstring"


def scan(root: Path, package: str = "kafkalab") -> tuple[list[Package], list[str]]:
    """Every package under ``root/package`` (sorted, parents first) and the problems found on the way."""
    problems: list[str] = []
    packages: list[Package] = []
    base = root / package
    if not base.is_dir():
        return [], [f"{package}/ not found under {root}"]
    dirs = sorted(
        (d for d in [base, *base.rglob("*")] if d.is_dir() and not SKIP_DIRS & set(d.relative_to(root).parts)),
        key=lambda d: d.relative_to(root).parts,
    )
    for directory in dirs:
        rel = directory.relative_to(root).as_posix()
        pkg = Package(rel)
        for file in sorted(p for p in directory.iterdir() if p.is_file()):
            if file.suffix != ".py":
                if not file.name.endswith((".pyc", ".pyo")):
                    pkg.other_files.append(file.name)
                continue
            text, problem = docstring_of(file)
            if problem:
                problems.append(f"{rel}/{file.name} {problem}: add one, its first sentence is listed in "
                                "docs/architecture.md")
            if file.name == "__init__.py":
                pkg.has_init, pkg.summary = True, text
            else:
                pkg.modules.append((file.name, text))
        if pkg.has_init or pkg.modules or pkg.other_files:
            packages.append(pkg)
    return packages, problems


def _cell(text: str | None) -> str:
    return "*(no docstring)*" if text is None else text.replace("|", "\\|")


def render(root: Path) -> tuple[str, list[str]]:
    """Markdown for the marker: a section per package, a table row per module."""
    packages, problems = scan(root)
    out: list[str] = []
    for pkg in packages:
        dotted = pkg.path.replace("/", ".")
        out += [f"### `{pkg.path}/`", ""]
        if pkg.has_init:
            out += [f"`{dotted}`: {_cell(pkg.summary)}", ""]
        else:
            out += [f"`{dotted}`: a directory without `__init__.py`.", ""]
        if pkg.modules:
            out += ["| module | what it owns |", "|---|---|"]
            out += [f"| `{pkg.path}/{name}` | {_cell(text)} |" for name, text in pkg.modules]
            out.append("")
        if pkg.other_files:
            out += ["Other files: " + ", ".join(f"`{name}`" for name in pkg.other_files) + ".", ""]
    return "\n".join(out), problems
