"""The package's shape, checked on its source: an AST import graph over every module (imports
inside functions included) has no cycle, no module imports another's private name, and the
arrows between the parts point one way, the format core at the bottom, front ends on top.
And the rules of docs/architecture.md: every public exception class derives from the error
base, front ends map no exception class themselves (they ask ``errors.report``), nothing
outside the format core writes cell or output metadata, no two public classes share a name."""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path

import pytest

from tests import paths

PACKAGE = "jupyter_percent_agent"
ROOT = paths.ROOT / PACKAGE

# Bottom to top: a part may import from its own layer and those below, never from above.
LAYERS: list[set[str]] = [
    {"envflags", "errors", "lazy", "litellm_setup", "masking", "outcome", "safe_start"},
    {"format"},
    {"trust", "tools"},
    {"mcptools", "acp"},
    {"sandbox", "codekernel"},
    {"attp", "ranking"},
    {"runtime"},
    {"tasks", "jupytext_format"},
    {"kernel"},
    {"contents", "mcpserve"},
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


# -- one error vocabulary ------------------------------------------------------------------

FRONT_ENDS = ("cli", "kernel", "contents")
ERROR_BASE = "PercentAgentError"


def _classes(root: Path) -> dict[str, list[tuple[str, list[str]]]]:
    """Every class of the package by name: (module, the names of its bases)."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for module, (path, _) in _modules(root).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else b.attr
                         for b in node.bases if isinstance(b, ast.Name | ast.Attribute)]
                found.setdefault(node.name, []).append((module, bases))
    return found


def _exception_classes(classes: dict[str, list[tuple[str, list[str]]]]) -> dict[str, bool]:
    """The package's exception classes by name: whether each derives from the error base."""
    builtin = {n for n in dir(builtins)
               if n.endswith(("Error", "Exception", "Interrupt", "Exit"))}  # warnings are not
    derives: dict[str, bool] = {ERROR_BASE: True}
    changed = True
    while changed:
        changed = False
        for name, defs in classes.items():
            if name in derives:
                continue
            for _, bases in defs:
                if any(b in derives or b in builtin for b in bases):
                    derives[name] = any(derives.get(b, False) for b in bases)
                    changed = True
    return derives


def test_every_public_exception_class_derives_from_the_error_base() -> None:
    derives = _exception_classes(_classes(ROOT))
    assert len(derives) > 20  # the walk found them
    assert sorted(n for n, ok in derives.items() if not ok and not n.startswith("_")) == []


def _mapped_in_front_ends(root: Path) -> list[str]:
    """Where a front end names one of the package's exception classes (other than the base)
    in an ``except`` or an ``isinstance``."""
    named = {n for n in _exception_classes(_classes(root))
             if n != ERROR_BASE and not n.startswith("_")}  # a module's own control flow
    found = []
    for module, (path, _) in _modules(root).items():
        if _part(module) not in FRONT_ENDS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[ast.expr] = []
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                targets = [node.type]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "isinstance" and len(node.args) == 2:
                targets = [node.args[1]]
            for target in targets:
                for sub in ast.walk(target):
                    name = sub.id if isinstance(sub, ast.Name) else \
                        sub.attr if isinstance(sub, ast.Attribute) else None
                    if name in named:
                        found.append(f"{module}:{node.lineno}: {name}")
    return found


def test_front_ends_map_no_exception_class_of_the_package_themselves() -> None:
    """The CLI, the kernel and the contents manager catch the error base (and built-in
    errors) and ask the one table (``errors.report``); none names one of the package's
    exception classes in an ``except`` or an ``isinstance``."""
    assert _mapped_in_front_ends(ROOT) == []


def test_the_error_rules_find_what_they_forbid(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("class PercentAgentError(Exception):\n    pass\n")
    (pkg / "format.py").write_text("class FormatError(PercentAgentError, ValueError):\n"
                                   "    pass\nclass Loose(ValueError):\n    pass\n")
    (pkg / "cli" / "__init__.py").write_text(
        "try:\n    pass\nexcept (OSError, fmt.FormatError):\n    pass\n")
    derives = _exception_classes(_classes(pkg))
    assert derives == {ERROR_BASE: True, "FormatError": True, "Loose": False}
    assert _mapped_in_front_ends(pkg) == [f"{PACKAGE}.cli:3: FormatError"]


def test_no_two_public_classes_share_a_name() -> None:
    shared = {name: [m for m, _ in defs] for name, defs in _classes(ROOT).items()
              if len(defs) > 1 and not name.startswith("_")}
    assert shared == {}


# -- one writer of cell and output metadata ------------------------------------------------

NOTEBOOK_NAMES = {"nb", "notebook", "content"}  # a notebook's own metadata is not a cell's


def _metadata_writes(root: Path) -> list[str]:
    """Where a module outside the format core writes the ``metadata`` of a cell or an
    output: ``x.setdefault("metadata", ...)``, or an assignment or ``del`` of
    ``x["metadata"]`` or of a key in it (``x`` not a notebook)."""

    def is_metadata(node: ast.AST) -> bool:
        return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and node.slice.value == "metadata"

    def base_name(node: ast.AST) -> str | None:
        while isinstance(node, ast.Subscript | ast.Attribute):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    found = []
    for module, (path, _) in _modules(root).items():
        if _part(module) == "format":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign | ast.Delete):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "setdefault" and node.args \
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == "metadata":
                found.append(f"{module}:{node.lineno}")
                continue
            for target in targets:
                hit = target if is_metadata(target) else getattr(target, "value", None)
                if hit is not None and is_metadata(hit) and base_name(hit) not in NOTEBOOK_NAMES:
                    found.append(f"{module}:{node.lineno}")
    return found


def test_nothing_outside_the_format_core_writes_cell_or_output_metadata() -> None:
    """Cells and outputs get their attributes through ``format.set_cell_attrs``,
    ``format.set_output_attrs`` and the constructors; ids through ``format.new_cell_id``,
    ``format.next_output_id`` and ``format.tool_call_id``."""
    assert _metadata_writes(ROOT) == []


def test_the_metadata_rule_finds_each_way_of_writing_it(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    (pkg / "runtime").mkdir(parents=True)
    (pkg / "format").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "format" / "__init__.py").write_text("cell.setdefault('metadata', {})['a'] = 1\n")
    (pkg / "runtime" / "__init__.py").write_text(
        "cell.setdefault('metadata', {})['a'] = 1\n"
        "out['metadata']['b'] = 2\n"
        "cell['metadata'] = {}\n"
        "del cell['metadata']['c']\n"
        "nb['metadata'] = {}\n"
        "x = cell['metadata']['d']\n")
    assert sorted(_metadata_writes(pkg)) == [f"{PACKAGE}.runtime:{n}" for n in (1, 2, 3, 4)]


# -- modules small enough to read whole -------------------------------------------------------

LINE_LIMIT = 500
# A module at the limit or over it needs a reason here; each entry names a module that exists
# and is at the limit, so the list never outlives its reasons.
LONG_ALLOWED: dict[str, str] = {}


def _line_counts(root: Path) -> dict[str, int]:
    return {m: len(path.read_text(encoding="utf-8").splitlines())
            for m, (path, _) in _modules(root).items()}


def test_no_module_is_at_the_line_limit_without_a_reason() -> None:
    long = {m: n for m, n in _line_counts(ROOT).items()
            if n >= LINE_LIMIT and m not in LONG_ALLOWED}
    assert long == {}


def test_every_module_allowed_to_be_long_exists_and_is_long() -> None:
    counts = _line_counts(ROOT)
    stale = {m: counts.get(m, "no such module") for m in LONG_ALLOWED
             if counts.get(m, 0) < LINE_LIMIT}
    assert stale == {}


def test_every_part_the_layers_name_exists() -> None:
    parts = {_part(m) for m in _modules(ROOT)} - {"", "__init__"}
    named = set().union(*LAYERS)
    assert sorted(named - parts) == []


# -- the format core's functions take a record, not a dozen loose values ----------------------

MAX_POSITIONAL = 6


def test_no_function_in_the_format_core_takes_more_than_six_positional_parameters() -> None:
    """What a rule reads travels in one record (format/record.py); a function that needs more
    than six values takes the rest by keyword, so a call says what each one is."""
    wide = []
    for path in sorted((ROOT / "format").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                args = node.args
                n = len(args.posonlyargs) + len(args.args) - (args.args[:1] != [] and
                                                              args.args[0].arg in {"self", "cls"})
                if n > MAX_POSITIONAL:
                    wide.append(f"{path.name}:{node.lineno} {node.name} ({n})")
    assert wide == []


# A method of another object replaced in place (``kernel.requestExecute = ...``,
# ``proto.onInputRequest = function ...``) or a prototype touched; DOM event handler
# properties (``reader.onload = ...``) are the DOM's public way and are not counted.
PATCH = re.compile(r"\.prototype\b|\b(?!this\b)[A-Za-z_]\w*\.(?!on[a-z]+\b)[A-Za-z_]\w*\s*=\s*"
                   r"(?:function\b|async\b|\([^)]*\)\s*(?::\s*[\w<>\[\]| ]+)?\s*=>)")


def _patches(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if PATCH.search(line)]


def test_the_labextension_patches_no_jupyterlab_object() -> None:
    sources = sorted((paths.ROOT / "labextension" / "src").glob("*.ts"))
    assert sources
    found = {p.name: _patches(p.read_text()) for p in sources if not p.name.endswith(".spec.ts")}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_patch_rule_finds_the_patches_the_extension_once_had() -> None:
    assert _patches("    kernel.requestExecute = (content, disposeOnDone, metadata) => {")
    assert _patches("  const proto = OutputArea.prototype as unknown as {")
    assert _patches("  proto.onInputRequest = function (")
    assert not _patches("    reader.onload = () => {")
    assert not _patches("    this.value = (a) => a;")


# -- a test module imports no other test module ------------------------------------------------

TEST_MODULE = re.compile(r"(^|\.)test_[^.]*$")


def _test_module_imports(tests: Path) -> list[str]:
    """Where a test module (``test_*.py`` under ``tests``) imports another test module:
    ``tests.unit.test_x``, ``tests.integration.test_x``, ``.test_x`` or ``import
    tests.unit.test_x``, at any depth (inside functions too). What tests share lives in
    ``jupyter_percent_agent/testing``, ``tests/helpers``, a conftest or ``tests/data``."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module or ''}.{a.name}" for a in node.names]
                if node.level and not node.module:
                    names = [a.name for a in node.names]
            else:
                continue
            if any(TEST_MODULE.search(name) for name in names if name):
                found.append(f"{path.relative_to(tests).as_posix()}:{node.lineno}")
    return found


def test_no_test_module_imports_another() -> None:
    """A test module is not a library: a helper or constant two modules need is defined once
    in a shared place, so a test file can be moved, split or deleted alone."""
    assert _test_module_imports(paths.ROOT / "tests") == []


def test_the_test_import_rule_finds_each_way_of_importing_a_test_module(tmp_path: Path) -> None:
    (tmp_path / "unit").mkdir()
    (tmp_path / "unit" / "test_a.py").write_text(
        "from tests.integration.test_kernel import start\n"
        "from .test_b import X\n"
        "from . import test_b\n"
        "import tests.unit.test_b\n"
        "def f():\n    from tests.unit.test_b import Y\n"
        "from tests.paths import TEST_DATA\n"
        "from tests.helpers.chat import cells\n"
        "from jupyter_percent_agent.testing.kernels import start\n"
        "from tests.integration.conftest import AcpKernel\n")
    assert _test_module_imports(tmp_path) == [f"unit/test_a.py:{n}" for n in (1, 2, 3, 4, 6)]
