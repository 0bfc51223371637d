"""The format core's model helpers answer what other parts need without reaching into its
private metadata: which cells hold the document, a cell's title and link, the front matter."""

from __future__ import annotations

import pytest

from jupyter_percent_agent import format as fmt

CHAT = """---
default_agent: planner
---

# %% Plan the trip[^a1]
[^a1]: [markdown]

Three days in Beijing.

# %% Later[^a2]
[^a2]: [async](results/a2.md) id="a2"

Run the long search.
"""

DOC = """---
message_section: Discussion
---

# Notes

Text before the conversation.

# Discussion

# %% A question[^q1]
[^q1]: [markdown]

Why?
"""


def test_front_matter_and_preamble_are_document_parts_not_conversation() -> None:
    nb = fmt.reads(DOC, path="notes.md")
    parts = [fmt.document_part(c) for c in nb["cells"]]
    assert parts[0] == "front_matter"
    assert "preamble" in parts
    conversation = [c for c in nb["cells"] if fmt.document_part(c) is None]
    assert [fmt.cell_id(c) for c in conversation] == ["q1"]


def test_cell_title_and_link_come_from_the_heading_and_the_type() -> None:
    nb = fmt.reads(CHAT, path="chat.msg.md")
    first, second = (c for c in nb["cells"] if fmt.document_part(c) is None)
    assert fmt.cell_title(first) == "Plan the trip"
    assert fmt.cell_link(first) is None
    assert fmt.cell_kind(second) == "async"
    assert fmt.cell_link(second) == "results/a2.md"


def test_front_matter_parses_the_yaml() -> None:
    assert fmt.front_matter(fmt.reads(CHAT, path="chat.msg.md")) == {"default_agent": "planner"}


def test_broken_front_matter_yaml_is_an_error_naming_the_file_line() -> None:
    nb = fmt.reads("---\nagents:\n  planner: {models: [a\n---\n", path="chat.msg.md")
    with pytest.raises(fmt.FormatError) as info:
        fmt.front_matter(nb)
    assert info.value.line is not None and 2 <= info.value.line <= 4
    assert "front matter" in str(info.value)
