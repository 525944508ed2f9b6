"""No import cycles among kafkalab's modules, counting imports at module level, inside functions and under
``if TYPE_CHECKING:`` (grimp sees all three). import-linter's layers contract (``lint-imports``, configured in
pyproject.toml) catches a cycle across layers, not one inside a package: this test catches both."""

from __future__ import annotations

from dataclasses import dataclass

import grimp


@dataclass(frozen=True)
class Tangle:
    """Modules that import each other (a strongly connected component), and one shortest cycle through the
    first of them: the modules in import order, the first again at the end."""

    modules: tuple[str, ...]
    cycle: tuple[str, ...]


def import_cycles(graph: grimp.ImportGraph) -> list[Tangle]:
    cycles: list[Tangle] = []
    seen: set[str] = set()
    for module in sorted(graph.modules):
        if module in seen:
            continue
        component = graph.find_upstream_modules(module) & graph.find_downstream_modules(module)
        if not component:
            continue
        seen |= component | {module}
        chains = [graph.find_shortest_chain(importer=module, imported=back)
                  for back in graph.find_modules_that_directly_import(module) if back in component]
        cycle = (*min((c for c in chains if c is not None), key=len), module)
        cycles.append(Tangle(tuple(sorted(component | {module})), cycle))
    return cycles


def describe(graph: grimp.ImportGraph, tangle: Tangle) -> str:
    """The modules, then one cycle among them, one import a line with where it is written."""
    lines = [f"{len(tangle.modules)} modules import each other: {', '.join(tangle.modules)}; for one:"]
    for importer, imported in zip(tangle.cycle, tangle.cycle[1:], strict=False):
        where = "; ".join(f"line {d['line_number']}: {d['line_contents']}"
                          for d in graph.get_import_details(importer=importer, imported=imported))
        lines.append(f"  {importer} -> {imported}  ({where})")
    return "\n".join(lines)


def test_kafkalab_has_no_import_cycles() -> None:
    graph = grimp.build_graph("kafkalab", cache_dir=None)
    assert "kafkalab.labs.run" in graph.modules  # the package itself was read, not an empty graph
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n\n".join(describe(graph, c) for c in cycles)


def test_a_cycle_through_three_modules_is_found_and_named_in_order() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"), ("p.e", "p.a")]:
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents=f"import {imported}")
    [tangle] = import_cycles(graph)
    assert tangle == Tangle(("p.a", "p.b", "p.c"), ("p.a", "p.b", "p.c", "p.a"))
    assert "p.c -> p.a  (line 1: import p.a)" in describe(graph, tangle)
