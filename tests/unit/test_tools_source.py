"""Describing tools from untrusted source text, without running it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from jupyter_percent_agent.tools import (
    Registry,
    Tool,
    ToolLoadError,
    describe_defined_tool,
    describe_source,
    render_source_tools,
    render_tool,
)
from tests.paths import TEST_DATA

TOOLBOX = TEST_DATA / "toolbox"


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


# ---- [tool] cells: one tool, its description and parameters from the cell

SEED_SOURCE = '''def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city} 25°C 晴朗"
'''


def test_the_seed_tool_cell_is_described_as_written() -> None:
    info = describe_defined_tool("weather", SEED_SOURCE, description="获取天气信息")
    assert (info.name, info.function, info.line) == ("weather", "get_weather", 1)
    assert str(info.signature) == "(city: str) -> str"
    assert info.stub == (
        "def weather(city: str) -> str:\n"
        '    """\n'
        "    获取天气信息\n"
        "\n"
        "    获取指定城市的天气信息\n"
        '    """\n'
        "    pass\n"
    )
    assert render_source_tools({"weather": info.stub}) == Registry().describe([info.stub])


def test_parameters_give_the_arguments_their_descriptions_and_types() -> None:
    source = "def convert(value, unit='c', *, digits: int = 1):\n    return value\n"
    schema = {
        "type": "object",
        "properties": {
            "value": {"type": ["number", "null"], "description": "The  temperature."},
            "unit": {"type": "string", "enum": ["c", "f"], "description": "c or f"},
        },
        "required": ["value"],
    }
    info = describe_defined_tool("convert", source, description="Convert.", parameters=schema)
    assert info.stub == (
        "def convert(value: float | None, unit: str = 'c', *, digits: int = 1):\n"
        '    """\n'
        "    Convert.\n"
        "\n"
        "    Args:\n"
        "        value: The temperature.\n"
        "        unit: c or f\n"
        '    """\n'
        "    pass\n"
    )
    assert [p.kind.name for p in info.signature.parameters.values()] == [
        "POSITIONAL_OR_KEYWORD", "POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY"]  # fmt: skip


def test_a_docstring_alone_describes_the_tool_and_its_args_section_is_kept() -> None:
    source = textwrap.dedent(
        '''
        def helper(x):
            return x

        def area(w: float, h: float) -> float:
            """Area of a rectangle.

            Args:
                w: width
                h: height
            """
            return helper(w) * h
        '''
    )
    info = describe_defined_tool("area", source)
    assert info.function == "area"
    assert info.stub.startswith("def area(w: float, h: float) -> float:\n")
    assert "    Args:\n        w: width\n        h: height\n" in info.stub
    picked = describe_defined_tool("size", source, description="Size.", function="helper")
    assert picked.stub.startswith("def size(x):\n")


@pytest.mark.parametrize(
    ("source", "kwargs", "problem"),
    [
        ("def a():\n    pass\ndef b():\n    pass\n", {},
         "defines 2 functions (a, b): name one like the tool, or say which one with function="),
        ("x = 1\n", {}, "defines no function"),
        (SEED_SOURCE, {"function": "nope"}, "defines no function 'nope'"),
        ("\nasync def t():\n    pass\n", {}, "t is an async def, which the sandbox does not run"),
        ("def t():\n    yield 1\n", {}, "t yields: a [tool] function returns its result (line 1)"),
        ("def t(x):\n    return x\n", {"description": ""}, "no description: give the cell"),
        ('def t(x):\n    """T.\n\n    Args:\n        y: Y.\n    """\n', {},
         "Args: documents 'y', which is not a parameter (line 1)"),
        ('def t(x, y):\n    """T.\n\n    Args:\n        x: X.\n    """\n', {},
         "parameter 'y' not documented in Args: (line 1)"),
        ('def t(x):\n    """Args:\n        x: X.\n    """\n', {}, "missing summary line"),
        (SEED_SOURCE, {"parameters": {"type": "array"}}, 'must have "type": "object"'),
        (SEED_SOURCE, {"parameters": {"properties": {"town": {}}}},
         "parameters describes 'town', which get_weather does not take (line 1)"),
        (SEED_SOURCE, {"parameters": {"properties": {"city": {"type": "text"}}}},
         "argument 'city' has type 'text'"),
        (SEED_SOURCE, {"parameters": {"required": ["city"]}}, '"required" names \'city\''),
        ("def t(:\n", {}, "syntax error (line 1)"),
        ("x = " + "-" * 100_000 + "1\n", {}, "too deeply nested"),
        ("def t(x=a" + ".b" * 900 + "):\n    return x\n", {}, "too deeply nested"),
        ("def t(x: a" + ".b" * 900 + "):\n    return x\n", {}, "too deeply nested"),
        ("x = 1\0\n", {}, "null bytes"),
    ],
)  # fmt: skip
def test_a_broken_tool_cell_is_refused_naming_the_tool_and_line(
    source: str, kwargs: dict, problem: str
) -> None:
    kwargs.setdefault("description", "A tool.")
    with pytest.raises(ToolLoadError) as info:
        describe_defined_tool("t", source, **kwargs)
    assert info.value.tool == "t"
    assert problem in info.value.problem
    assert str(info.value).startswith("tool 't': ")


def test_tool_cell_source_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f'open({str(marker)!r}, "w").write("x")\n\ndef t():\n    """T."""\n'
    assert describe_defined_tool("t", source).function == "t"
    assert not marker.exists()


@pytest.mark.parametrize(
    "source",
    ["x = " + "(" * 50 + "-" * 100_000 + "1" + ")" * 50,
     'def f(x=a' + ".b" * 900 + '):\n    """F.\n\n    Args:\n        x: X.\n    """\n'],
)  # fmt: skip
def test_a_deeply_nested_module_source_is_a_load_error_not_a_crash(source: str) -> None:
    with pytest.raises(ToolLoadError, match="too deeply nested"):
        describe_source(source)
