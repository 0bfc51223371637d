"""YAML from a file is untrusted: ``format.load_yaml`` refuses anchors, aliases, deep nesting and
absurd sizes with one line naming the line, for the core, ``tce chat`` and the contents server.

The alias bomb (``tests/data/format/yaml/alias_bomb.msg.md``, under 500 bytes) names 9^9
strings; before ``load_yaml`` it made ``tce chat`` die of a MemoryError and the Jupyter server
answer 500 after 45 s, answering no one else meanwhile.
"""

from __future__ import annotations

import time

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import FormatError, load_yaml
from tests.paths import TEST_DATA

DATA = TEST_DATA / "format" / "yaml"
BOMB = DATA / "alias_bomb.msg.md"
BOMB_IN_AGENTS = DATA / "alias_bomb_agents.msg.md"


# --------------------------------------------------------------------------- load_yaml


def test_plain_yaml_loads_as_safe_load_does() -> None:
    text = "agents:\n  planner:\n    models: [gpt-4o]\n    temperature: 0.2\nwhen: 2025-05-30\n"
    import yaml

    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml("") is None


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("a: &x 1\nb: *x\n", 1, "defines the YAML anchor &x"),
        ("a: 1\nb:\n  - *x\n", 3, "uses the YAML alias *x"),
        ("a: 1\nb: &big [1, 2]\n", 2, "anchor &big"),
        ("a: " + "[" * 200 + "]" * 200 + "\n", 1, "nests deeper than 64 levels"),
        ("a: 1\n  b: 2\n", 2, "is not valid YAML: mapping values are not allowed"),
        ("a: 2024-13-45\n", 1, "month must be in 1..12"),
        ("a: 1\nb: " + "9" * 5000 + "\n", 2, "digits"),
        ("a: 1\nb: 0x" + "f" * 5000 + "\n", 2, "digits"),  # 0x, 0o, 0b convert at any size
        ("a: 0b" + "1" * 20000 + "\n", 1, "digits"),
        ("a: !!python/object/apply:os.system [ls]\n", 1, "could not determine a constructor"),
    ],
)
def test_refused_yaml_is_one_line_naming_the_file_line(text: str, line: int, says: str) -> None:
    with pytest.raises(FormatError) as info:
        load_yaml(text, line=2, what="the front matter", path="x.msg.md")
    message = str(info.value)
    assert info.value.line == line + 1
    assert message.startswith(f"x.msg.md:{line + 1}: the front matter ")
    assert says in message
    assert "\n" not in message


def test_absurd_sizes_are_refused_before_parsing() -> None:
    text = "a: " + "x" * (2 << 20) + "\n"
    start = time.perf_counter()
    with pytest.raises(FormatError, match="characters is not read"):
        load_yaml(text)
    assert time.perf_counter() - start < 1  # refused unread, not parsed and then refused


def test_deep_block_nesting_is_refused_not_a_recursion_error() -> None:
    text = "".join(" " * i + f"k{i}:\n" for i in range(300)) + " " * 300 + "v\n"
    with pytest.raises(FormatError, match="nests deeper"):
        load_yaml(text)


# --------------------------------------------------------------------------- the format core


def test_the_alias_bomb_is_a_format_error_naming_its_line() -> None:
    # in the jupyter: entry, the notebook's metadata: read() refuses it
    start = time.perf_counter()
    with pytest.raises(FormatError) as info:
        fmt.read(BOMB)
    assert time.perf_counter() - start < 1
    assert str(info.value).startswith(f"{BOMB}:4: the front matter's jupyter: entry defines "
                                      "the YAML anchor &a")
    # elsewhere in the front matter (agents:): read() keeps the text, front_matter() refuses it
    with pytest.raises(FormatError) as info:
        fmt.front_matter(fmt.read(BOMB_IN_AGENTS))
    assert str(info.value).startswith("line 4: the front matter defines the YAML anchor &a")


def test_deep_json_in_the_jupyter_entry_or_an_attribute_is_a_format_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(FormatError, match=r"line 2: .*nests deeper"):
        fmt.reads(f'---\njupyter: {{"a": {deep}}}\n---\n')
    with pytest.raises(FormatError, match=r"line 2: .*nests too deeply"):
        fmt.reads(f"# %%[^a]\n[^a]: [markdown] x={deep}\n\nhi\n")


def test_deep_nesting_is_refused_in_our_words_and_brackets_in_quotes_are_not_nesting() -> None:
    from jupyter_percent_agent.format.safe_yaml import MAX_DEPTH, load_yaml

    deep = "[" * (MAX_DEPTH + 1) + "1" + "]" * (MAX_DEPTH + 1)
    with pytest.raises(FormatError, match=rf"^line 3: the text nests deeper than {MAX_DEPTH}"):
        load_yaml(f"a: 1\nb: 2\nc: {deep}\n")
    # a document that fails for another reason, with many brackets inside a quoted string
    # or a comment, keeps the parser's own explanation
    quoted = '"' + "[" * 2000 + '"'
    for text in (f"a: {quoted}\nb: [1, 2\n", f"# {'[' * 2000}\nb: [1, 2\n"):
        with pytest.raises(FormatError) as info:
            load_yaml(text)
        assert "nests deeper" not in str(info.value)
    assert load_yaml(f"a: {quoted}") == {"a": "[" * 2000}


def test_a_notebook_nested_too_deeply_to_write_is_a_format_error() -> None:
    deep: list = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    nb = fmt.reads("# %%[^a]\n[^a]:\n\nhi\n")
    nb["cells"][0]["metadata"]["x"] = deep
    with pytest.raises(FormatError, match="nests too deeply"):
        fmt.writes(nb)


# --------------------------------------------------------------------------- tce chat


# --------------------------------------------------------------------------- contents server


def test_an_error_at_the_end_names_the_last_line_not_the_one_after() -> None:
    # libyaml reports a flow left open at the end of a text with no final newline one line on
    with pytest.raises(FormatError) as info:
        load_yaml("title: x\nagents: [unclosed", line=2)
    assert info.value.line == 3
