"""The Google-style docstring parser."""

from __future__ import annotations

import pytest

from jupyter_percent_agent.tools import DocstringError, parse_docstring

SEED_STYLE = """
    Search the web and return a list of results.

    Uses the configured search engine; results are ranked.

    Args:
        query: The search string.
        max_results (int): How many results at most,
            5 by default.

    Returns:
        list[dict]: The results, each with:
            - title: str - the title
            - url: str - the address

    Raises:
        ValueError: when query is empty

    Example:
        >>> results = search_web("python asyncio", max_results=3)
        >>> print(results[0]["title"])
        'Async IO in Python'
    """


def test_full_docstring_parses_every_section() -> None:
    doc = parse_docstring(SEED_STYLE)
    assert doc.summary == "Search the web and return a list of results."
    assert doc.description == "Uses the configured search engine; results are ranked."
    assert list(doc.args) == ["query", "max_results"]
    assert doc.args["query"].type is None
    assert doc.args["query"].description == "The search string."
    assert doc.args["max_results"].type == "int"
    assert doc.args["max_results"].description == "How many results at most, 5 by default."
    assert doc.returns.startswith("list[dict]: The results, each with:")
    assert "    - title: str - the title" in doc.returns
    assert doc.raises == "ValueError: when query is empty"
    assert (
        doc.example.splitlines()[0] == '>>> results = search_web("python asyncio", max_results=3)'
    )


def test_summary_may_span_lines_and_sections_are_optional() -> None:
    doc = parse_docstring("Get the drone\nlive address.")
    assert doc.summary == "Get the drone live address."
    assert doc.args == {} and doc.returns == "" and doc.example == ""


def test_jarvis_docstring_with_typed_args() -> None:
    doc = parse_docstring(
        """
        获取无人机直播链接

        Args:
            device_type (str): 设备类型
        """
    )
    assert doc.summary == "获取无人机直播链接"
    assert doc.args["device_type"].type == "str"
    assert doc.args["device_type"].description == "设备类型"


def test_star_args_are_named_without_stars() -> None:
    doc = parse_docstring("Join.\n\nArgs:\n    *parts: The parts.\n    **options (dict): Options.")
    assert list(doc.args) == ["parts", "options"]


@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        (None, "missing docstring", None),
        ("   \n  ", "missing docstring", None),
        ("Args:\n    x: The x.", "missing summary", 1),
        ("Do it.\n\nArgs:\n    x The x.", "is not 'name (type): description'", 4),
        ("Do it.\n\nArgs:\n    x: The x.\n    x: Again.", "documented twice", 5),
        ("Do it.\n\nArgs:\n    x:\n", "has no description", 4),
        ("Do it.\n\nReturns:\n", "empty Returns: section", 3),
        ("Do it.\n\nArgs:\n    x: The x.\nArgs:\n    y: The y.", "duplicate Args: section", 5),
        ("Do it.\n\nArgs:\n    x: The x.\nloose text", "unindented text 'loose text'", 5),
        ("Do it.\n\nArgs:\n        more\n    x: The x.", "starts with a continuation", 4),
    ],
)
def test_malformed_docstrings_say_what_and_where(
    text: str | None, problem: str, line: int | None
) -> None:
    with pytest.raises(DocstringError) as info:
        parse_docstring(text)
    assert problem in str(info.value)
    assert info.value.line == line
