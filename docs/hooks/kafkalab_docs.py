"""mkdocs hooks: the pages' generated parts, rendered from the sources at every build.

A marker alone on its line is replaced:

- ``<!-- modules -->``: every package and module under kafkalab/ with its docstring's summary
  (:mod:`module_index`); a module without a docstring is a warning;
- ``<!-- bench: NAME -->``: the tables of ``benchmarks/results/NAME.json`` (:mod:`bench_tables`); a marker
  naming a missing file, a results file no renderer knows and a results file no page shows are warnings;
- ``<!-- labs -->``: the lab catalog from labs/*.toml; ``<!-- options -->``: the client options from
  kafkalab/clients/options.py (:mod:`lab_catalog`).

Warnings go to the ``mkdocs`` logger, so ``mkdocs build --strict`` fails on any of them.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import bench_tables
import lab_catalog
import module_index

log = logging.getLogger("mkdocs.hooks.kafkalab_docs")

_MARKER = re.compile(r"^<!--\s*(modules|labs|options|bench:\s*(?P<bench>[A-Za-z0-9_.-]+))\s*-->[ \t]*$", re.MULTILINE)
_state: dict[str, Any] = {"root": Path.cwd(), "placed": set(), "seen": set()}


def _root() -> Path:
    root: Path = _state["root"]
    return root


def on_config(config: Any) -> Any:
    """The repository root is where mkdocs.yml lives; each build starts with nothing placed."""
    _state["root"] = Path(config.config_file_path).resolve().parent
    _state["placed"] = set()
    _state["seen"] = set()
    return config


def _warn(page: str, problems: list[str]) -> None:
    for problem in problems:
        log.warning("%s: %s", page, problem)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    where = page.file.src_uri

    def replace(match: re.Match[str]) -> str:
        kind = match[1].split(":")[0]
        root = _root()
        if kind == "modules":
            text, problems = module_index.render(root)
        elif kind == "labs":
            text, problems = lab_catalog.render_labs(root)
        elif kind == "options":
            text, problems = lab_catalog.render_options(root)
        else:
            name = match["bench"]
            _state["placed"].add(name)
            text, problems = bench_tables.render(root / "benchmarks" / "results", name)
        _state["seen"].add(kind)
        _warn(where, problems)
        return text

    return _MARKER.sub(replace, markdown)


def on_post_build(config: Any) -> None:
    """What no page showed: a results file without its marker, a generated listing whose marker is gone."""
    root = _root()
    results = root / "benchmarks" / "results"
    for problem in bench_tables.unknown(results):
        log.warning("%s", problem)
    for name in bench_tables.results(results):
        if bench_tables.renderer_for(name) and name not in _state["placed"]:
            log.warning("benchmarks/results/%s.json is shown on no page: add <!-- bench: %s --> to "
                        "docs/benchmarks.md beside its interpretation", name, name)
    for kind, page in (("modules", "architecture.md"), ("labs", "labs.md"), ("options", "lab-files.md")):
        if kind not in _state["seen"]:
            log.warning("no page has the <!-- %s --> marker (expected in docs/%s)", kind, page)
    for problem in lab_catalog.check_readme(root):
        log.warning("%s", problem)
