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


# --------------------------------------------------------------------------- heading levels

DEEP = """---
default_agent: planner
---

# Trip

## %% Compare the two plans[^q3]
[^q3]: [markdown] history="include"

Which plan costs less?

### %%% Answer[^q3.1]
[^q3.1]: [planner] model="gpt-4o-mini"

Plan B.
"""


def test_new_message_in_a_level_2_file_is_written_at_the_documents_level():
    nb = fmt.reads(DEEP, path="trip.msg.md")
    assert nb["metadata"][fmt.NS] == {"level": 2}
    assert all("level" not in c["metadata"].get(fmt.NS, {}) for c in nb["cells"])
    assert fmt.writes(nb, path="trip.msg.md") == DEEP
    cell = fmt.new_message("And by train?", cell_id="q4")
    cell["outputs"].append(fmt.reply_output("Slower.", agent="planner", out_id="q4.1"))
    nb["cells"].append(cell)
    text = fmt.writes(nb, path="trip.msg.md")
    assert text.endswith("\n## %%[^q4]\n[^q4]: [markdown]\n\nAnd by train?\n\n"
                         "### %%%[^q4.1]\n[^q4.1]: [planner]\n\nSlower.\n")
    assert "\n# %%" not in text and "\n## %%%" not in text
    back = fmt.reads(text, path="trip.msg.md")
    assert back["metadata"] == nb["metadata"]
    assert "level" not in back["cells"][-1]["metadata"].get(fmt.NS, {})
    assert fmt.writes(back, path="trip.msg.md") == text


def test_a_cell_at_another_level_than_the_first_message_keeps_its_own():
    text = ("### %%[^a]\n[^a]: [markdown]\n\n"
            "# %%[^b]\n[^b]: [markdown]\n\n## %%%[^b.1]\n[^b.1]: [x]\n")
    nb = fmt.reads(text)
    assert nb["metadata"][fmt.NS] == {"level": 3}
    a, b = nb["cells"]
    assert fmt.NS not in a["metadata"]
    assert b["metadata"][fmt.NS] == {"level": 1}
    assert "level" not in b["outputs"][0]["metadata"][fmt.NS]
    assert fmt.writes(nb) == text


def test_the_documents_level_is_kept_beside_crlf_and_never_in_the_front_matter():
    text = DEEP.replace("\n", "\r\n")
    nb = fmt.reads(text, path="trip.msg.md")
    assert nb["metadata"][fmt.NS] == {"level": 2, "crlf": True}
    out = fmt.writes(nb, path="trip.msg.md")
    assert out == text and "jupyter:" not in out
    plain = fmt.reads("# %%[^a]\n[^a]: [markdown]\n")
    assert fmt.NS not in plain["metadata"]
