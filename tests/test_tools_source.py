"""Describing tools from untrusted source text, without running it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jupyter_percent_agent.tools import (
    Registry,
    Tool,
    ToolLoadError,
    describe_source,
    render_source_tools,
    render_tool,
)

TOOLBOX = Path(__file__).resolve().parent / "data" / "toolbox"


@pytest.mark.parametrize("module", ["weather", "text", "camera"])
def test_same_stubs_as_the_imported_module(module: str) -> None:
    stubs = describe_source((TOOLBOX / f"{module}.py").read_text(), module=module)
    registry = Registry.load(TOOLBOX, modules=[module], entry_points=False)
    assert list(stubs) == list(registry)
    assert stubs == {name: render_tool(tool) for name, tool in registry.items()}
    assert render_source_tools(stubs) == registry.describe()


def test_signature_forms_match_inspect() -> None:
    source = textwrap.dedent(
        '''
        def shape(a, b: int = 2, /, c=3, *rest: str, d: float, e="x", **extra) -> list[int]:
            """Shape.

            Args:
                a (bytes): A.
                b: B.
                c: C.
                rest: Rest.
                d: D.
                e: E.
                extra: Extra.
            """
            return []

        def star(x, *, y=1):
            """Star.

            Args:
                x: X.
                y (int): Y.
            """
        '''
    )
    namespace: dict = {}
    exec(compile(source, "<test>", "exec"), namespace)  # trusted here: to compare with inspect
    stubs = describe_source(source)
    for name in ("shape", "star"):
        assert stubs[name] == render_tool(Tool.from_function(namespace[name]))


def test_source_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = textwrap.dedent(
        f'''
        open({str(marker)!r}, "w").write("x")
        raise SystemExit(1)

        def ok() -> str:
            """Say ok."""
            return "ok"
        '''
    )
    assert list(describe_source(source, module="cell")) == ["ok"]
    assert not marker.exists()


def test_literal_dunder_all_selects_tools() -> None:
    source = '__all__ = ["b"]\n\ndef a():\n    pass\n\ndef b():\n    """B."""\n'
    assert list(describe_source(source)) == ["b"]


@pytest.mark.parametrize(
    ("source", "tool", "problem"),
    [
        ("def f(x):\n    return x\n", "f", "missing docstring (line 1)"),
        (
            'def f(x):\n    """F.\n\n    Args:\n        y: Y.\n    """\n',
            "f",
            "Args: documents 'y', which is not a parameter (line 1)",
        ),
        (
            '\n\ndef f(x, y):\n    """F."""\n',
            "f",
            "parameters 'x', 'y' not documented in Args: (line 3)",
        ),
        ("def f(:\n", None, "syntax error (line 1)"),
        ('__all__ = ["nope"]\n', None, "__all__ names 'nope', which is not a function"),
        ("__all__ = names()\n", None, "__all__ must be a literal list of names (line 1)"),
    ],
)
def test_bad_sources_are_refused_like_modules(source: str, tool: str | None, problem: str) -> None:
    with pytest.raises(ToolLoadError) as info:
        describe_source(source, module="cell-3")
    assert info.value.module == "cell-3"
    assert info.value.tool == tool
    assert problem in info.value.problem


def test_no_tools_renders_the_empty_note() -> None:
    assert render_source_tools({}) == Registry().describe()
