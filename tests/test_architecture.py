"""The package's shape, checked on its source: an AST import graph over every module (imports
inside functions included) has no cycle, no module imports another's private name, and the
arrows between the parts point one way, the format core at the bottom, front ends on top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "jupyter_percent_agent"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Bottom to top: a part may import from its own layer and those below, never from above.
LAYERS: list[set[str]] = [
    {"envflags", "litellm_setup", "safe_start"},
    {"format"},
    {"trust", "tools"},
    {"sandbox"},
    {"attp", "ranking"},
    {"runtime"},
    {"tasks", "jupytext_format"},
    {"kernel"},
    {"contents"},
    {"cli", "_hook", "testing"},
]


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _graph(root: Path) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Each module's imports of the package's modules, and the private names imported from
    another module (``_name``, not ``__dunder__``)."""
    modules = _modules(root)
    edges: dict[str, set[str]] = {name: set() for name in modules}
    private = []
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges[name] |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                target = node.module or ""
                if node.level:
                    base = name.split(".")[: None if is_package else -1]
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                if not target.startswith(PACKAGE):
                    continue
                for alias in node.names:
                    if f"{target}.{alias.name}" in modules:
                        edges[name].add(f"{target}.{alias.name}")
                        continue
                    edges[name].add(target)
                    if alias.name.startswith("_") and not alias.name.startswith("__") \
                            and target != name:
                        private.append((name, target, alias.name))
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or not (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            group.append(v)
            if len(group) > 1 or v in edges[v]:
                groups.append(sorted(group))

    for v in edges:
        if v not in index:
            visit(v)
    return groups


def _part(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    return _graph(ROOT)


def test_the_package_has_no_import_cycle(graph) -> None:
    edges, _ = graph
    assert len(edges) > 50  # the walk found the package
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_the_cycles_the_redesign_removed(tmp_path: Path) -> None:
    """The two cycles of the runtime before its redesign (cells -> session -> loop -> session,
    models <-> warm, the second through an import inside a function) are found."""
    pkg = tmp_path / PACKAGE / "runtime"
    pkg.mkdir(parents=True)
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "session.py").write_text("def f():\n    from . import cells, loop\n")
    (pkg / "cells.py").write_text("from .session import _next_n\n")
    (pkg / "loop.py").write_text("from jupyter_percent_agent.runtime.session import _add\n")
    (pkg / "models.py").write_text("def g():\n    from . import warm\n")
    (pkg / "warm.py").write_text("from jupyter_percent_agent.runtime import models\n")
    edges, private = _graph(tmp_path / PACKAGE)
    assert sorted(_cycles(edges)) == [
        [f"{PACKAGE}.runtime.cells", f"{PACKAGE}.runtime.loop", f"{PACKAGE}.runtime.session"],
        [f"{PACKAGE}.runtime.models", f"{PACKAGE}.runtime.warm"]]
    assert {p[2] for p in private} == {"_next_n", "_add"}


def test_no_private_name_is_imported_across_modules(graph) -> None:
    _, private = graph
    assert private == []


def test_the_parts_depend_downwards_only(graph) -> None:
    edges, _ = graph
    rank = {part: n for n, layer in enumerate(LAYERS) for part in layer}
    parts = {_part(m) for m in edges} - {"", "__init__"}
    assert parts <= set(rank), f"a part with no layer: {sorted(parts - set(rank))}"
    upward = sorted(f"{m} -> {t}" for m, targets in edges.items() for t in targets
                    if _part(m) and _part(t) and rank[_part(t)] > rank[_part(m)])
    assert upward == []
