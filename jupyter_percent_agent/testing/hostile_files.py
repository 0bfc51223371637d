"""Message files built to make a reader slow or hungry, at any size: the inputs of the format
core's growth tests (tests/test_format_growth.py) and of ``python -m benchmarks hostile``.

Each maker takes a size in bytes (about: a file is whole lines, so it may be a few bytes off)
and returns the text of a message file of that size whose one feature grows with it: a
thousand unclosed fences, one huge attribute value, a hundred thousand cells, a long reply.
:data:`HOSTILE` names them with the file name each is read under (``.msg.md`` or ``.msg.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

__all__ = ["HOSTILE", "Hostile"]

_HEAD: Final = "# %% User [^a]\n\n[^a]: [code]\n\n"


def _repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


def unclosed_fences(size: int) -> str:
    """A ``[code]`` body of fence lines none of which is ever closed (each ``` with an info
    string, which only a bare ``` closes)."""
    return _repeat("```python\n", size, _HEAD)


def unclosed_tilde_fences(size: int) -> str:
    """A message body of tilde fences, all opening lines (an info string: only a bare
    fence closes one)."""
    return _repeat("~~~~ x\n", size, "# %% User\n\n")


def fences_after_cells(size: int) -> str:
    """Cells, then a last one whose body is unclosed fence lines (the scan before it holds)."""
    cells = "".join(f"# %% Q{i}\n\nhello {i}\n\n" for i in range(50))
    return _repeat("```python\n", size, cells + "# %% Last\n\n")


def huge_attribute(size: int) -> str:
    """One double-quoted attribute value of ``size`` bytes, words and escapes in it."""
    return _repeat(r"word \"q\" ", size, '# %% User [^a]\n\n[^a]: [markdown] big="',
                   '"\n\nhi\n')


def huge_literal_attribute(size: int) -> str:
    """One single-quoted (literal) attribute value of ``size`` bytes."""
    return _repeat("word ", size, "# %% User [^a]\n\n[^a]: [markdown] big='", "'\n\nhi\n")


def huge_json_attribute(size: int) -> str:
    """One JSON array attribute value of ``size`` bytes (strings in it)."""
    return _repeat('"ab",', size, "# %% User [^a]\n\n[^a]: [markdown] big=[", '"x"]\n\nhi\n')


def many_attributes(size: int) -> str:
    """One footnote holding ever new ``key=value`` pairs."""
    n = size // 12
    return ("# %% User [^a]\n\n[^a]: [markdown] "
            + " ".join(f"k{i:07d}=1" for i in range(n)) + "\n\nhi\n")


def continuation_lines(size: int) -> str:
    """A footnote continued over many lines."""
    return _repeat("  k=1\n", size, "# %% User [^a]\n\n[^a]: [markdown] a=1\n", "\nhi\n")


def blank_title(size: int) -> str:
    """A heading whose title is a long run of blanks before one character."""
    return "# %% " + " " * size + "x\n\nhi\n"


def reference_title(size: int) -> str:
    """A heading whose title repeats an unclosed footnote reference ``[^a``."""
    return "# %% " + "[^a" * (size // 3) + "\n\nhi\n"


def bracket_title(size: int) -> str:
    """A heading whose title is words each opening a bracket (``[`` after a blank: each a
    candidate for metadata on the heading)."""
    return "# %% " + " [x" * (size // 3) + "\n\nhi\n"


def escaped_headings(size: int) -> str:
    """A body of heading-like lines, each escaped with a backslash."""
    return _repeat("\\# %% not a cell\n", size, "# %% User\n\n")


def many_cells(size: int) -> str:
    """Cells one after the other (100,000 in 3.5 MB): a question, a reply under it."""
    unit = ("# %% Q [^m{0}]\n\n[^m{0}]: agent=\"a\"\n\nhi {0}\n\n"
            "## %%% [^m{0}.1]\n\n[^m{0}.1]: [output]\n\nok\n\n")
    n = max(1, size // len(unit.format(10000)))
    return "".join(unit.format(i) for i in range(n))


def long_reply(size: int) -> str:
    """One reply of ``size`` bytes of Markdown lines."""
    return _repeat("A line of the reply, with **bold** and `code` in it.\n", size,
                   "# %% Q [^m]\n\n[^m]: agent=\"a\"\n\nhi\n\n"
                   "## %%% [^m.1]\n\n[^m.1]: [output]\n\n")


def long_streams(size: int) -> str:
    """One code output of ``size`` bytes of ``stdout>``/``stderr>`` lines."""
    return _repeat("stdout> out\nstderr> err\n", size,
                   "# %% Q [^m]\n\n[^m]: [code]\n\n```python\nprint(1)\n```\n\n"
                   "## %%% [^m.1]\n\n[^m.1]: [python]\n\n")


def script_code_marks(size: int) -> str:
    """A script message file whose comment lines repeat ``[code]`` many times on one line."""
    return "# %% User [^a]\n\n# [^a]: [markdown]\n\n# " + "[code]" * (size // 6) + "\n"


def script_unclosed_fences(size: int) -> str:
    """A script message file whose commented body is unclosed fence lines."""
    return _repeat("# ```python\n", size, "# %% User\n\n")


def script_huge_attribute(size: int) -> str:
    """A script message file with one huge attribute value."""
    return _repeat(r"word \"q\" ", size, '# %% User [^a]\n\n# [^a]: [markdown] big="',
                   '"\n\n# hi\n')


class Hostile(NamedTuple):
    """One hostile input: its maker (size in bytes -> text) and the file name to read it as."""

    make: Callable[[int], str]
    path: str


HOSTILE: Final[dict[str, Hostile]] = {
    "unclosed fences": Hostile(unclosed_fences, "a.msg.md"),
    "unclosed tilde fences": Hostile(unclosed_tilde_fences, "a.msg.md"),
    "fences after cells": Hostile(fences_after_cells, "a.msg.md"),
    "huge attribute": Hostile(huge_attribute, "a.msg.md"),
    "huge literal attribute": Hostile(huge_literal_attribute, "a.msg.md"),
    "huge JSON attribute": Hostile(huge_json_attribute, "a.msg.md"),
    "many attributes": Hostile(many_attributes, "a.msg.md"),
    "continuation lines": Hostile(continuation_lines, "a.msg.md"),
    "blank title": Hostile(blank_title, "a.msg.md"),
    "reference title": Hostile(reference_title, "a.msg.md"),
    "bracket title": Hostile(bracket_title, "a.msg.md"),
    "escaped headings": Hostile(escaped_headings, "a.msg.md"),
    "many cells": Hostile(many_cells, "a.msg.md"),
    "long reply": Hostile(long_reply, "a.msg.md"),
    "long streams": Hostile(long_streams, "a.msg.md"),
    "script: [code] marks": Hostile(script_code_marks, "a.msg.py"),
    "script: unclosed fences": Hostile(script_unclosed_fences, "a.msg.py"),
    "script: huge attribute": Hostile(script_huge_attribute, "a.msg.py"),
}
