"""Cell selections as typed on the command line."""

from __future__ import annotations

import pytest

from jupyter_percent_agent.runtime.ranges import SelectionError, parse_selection


@pytest.mark.parametrize(("text", "path", "indices"), [
    ("[1..3]", None, [1, 2, 3]),
    ("[2]", None, [2]),
    ("3", None, [3]),
    ("2..4", None, [2, 3, 4]),
    ("[2,4..5]", None, [2, 4, 5]),
    ("[-2..]", None, [5, 6]),
    ("[4..n]", None, [4, 5, 6]),
    ("[5..9]", None, [5, 6]),
    ("OTHER/[1..n]", "OTHER", [1, 2, 3, 4, 5, 6]),
    ("a/b.msg.md/item/[2]", "a/b.msg.md", [2]),
    ("other.msg.md", "other.msg.md", [1, 2, 3, 4, 5, 6]),
])
def test_parse(text: str, path: str | None, indices: list[int]) -> None:
    sel = parse_selection(text)
    assert sel.path == path
    assert sel.indices(6) == indices


@pytest.mark.parametrize("text", ["", "[x..3]", "[1..y]", "[]"])
def test_bad(text: str) -> None:
    with pytest.raises(SelectionError):
        parse_selection(text)
