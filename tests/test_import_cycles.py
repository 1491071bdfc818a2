"""No import cycle in feeslab, with the imports under ``TYPE_CHECKING`` counted.

``lint-imports`` runs with ``exclude_type_checking_imports = true`` (pyproject.toml), so its
acyclic-siblings contract cannot see a cycle one side of which is an annotation's import; yet
such a cycle still ties two modules together (neither can be read, typed or moved alone). This
builds the import graph with grimp (import-linter's graph library) with those imports included
and finds the cycles between siblings, at every depth, as the contract does: the children of
each package, each with all it holds.

The cycles known at the time this test was written are listed in ``KNOWN``, each an expected
failure that turns red (strict) once it is gone, so its entry is removed then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import grimp
import pytest

# the known cycles (being rewritten in issue 37): remove an entry once its cycle is broken
KNOWN: tuple[frozenset[str], ...] = (
    frozenset({"feeslab.cluster", "feeslab.datasets"}),
)


def _strongly_connected(nodes: Iterable[str], edges: Mapping[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of more than one node (the cycles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return found


def _sibling_cycles(graph: grimp.ImportGraph) -> dict[frozenset[str], list[str]]:
    """Each cycle between the children of one package -> the imports that close it."""
    imports = [(importer, imported) for importer in graph.modules
               for imported in graph.find_modules_directly_imported_by(importer)]  # fmt: skip
    cycles: dict[frozenset[str], list[str]] = {}
    for package in sorted(graph.modules):
        children = graph.find_children(package)
        if len(children) < 2:
            continue

        def child(module: str, package: str = package) -> str | None:
            if not module.startswith(package + "."):
                return None
            return f"{package}.{module[len(package) + 1:].split('.')[0]}"

        edges: dict[str, set[str]] = {}
        for importer, imported in imports:
            a, b = child(importer), child(imported)
            if a is not None and b is not None and a != b:
                edges.setdefault(a, set()).add(b)
        for component in _strongly_connected(children, edges):
            cycles[frozenset(component)] = sorted(
                f"{importer} -> {imported}" for importer, imported in imports
                if child(importer) in component and child(imported) in component
                and child(importer) != child(imported)
            )  # fmt: skip
    return cycles


@pytest.fixture(scope="module")
def cycles() -> dict[frozenset[str], list[str]]:
    graph = grimp.build_graph("feeslab", exclude_type_checking_imports=False)
    return _sibling_cycles(graph)


def test_the_finder_sees_a_cycle_closed_by_a_type_checking_import() -> None:
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.c.inner"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c.inner")
    graph.add_import(importer="pkg.c.inner", imported="pkg.a")  # e.g. under TYPE_CHECKING
    found = _sibling_cycles(graph)
    assert set(found) == {frozenset({"pkg.a", "pkg.b", "pkg.c"})}


def test_no_import_cycle_but_the_known(cycles: dict[frozenset[str], list[str]]) -> None:
    new = {", ".join(sorted(c)): closing for c, closing in cycles.items() if c not in KNOWN}
    assert new == {}


@pytest.mark.xfail(strict=True, reason="a known cycle, being rewritten: delete it from KNOWN")
@pytest.mark.parametrize("known", KNOWN, ids=lambda c: " <-> ".join(sorted(c)))
def test_known_cycle_is_gone(cycles: dict[frozenset[str], list[str]],
                             known: frozenset[str]) -> None:  # fmt: skip
    assert not any(known <= cycle for cycle in cycles)
