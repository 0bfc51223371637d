"""JupyterLab's "Fork from here": a cell's context menu copies the conversation up to that
cell, outputs kept, into a new file beside it (``forked_from`` in its front matter) and opens
it; the original is not written. Real JupyterLab, real Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent import format as fmt

from .labpage import cell_with, open_notebook

pytestmark = pytest.mark.slow

CHAT = """---
default_agent: writer
agents:
  writer: {models: [test-model]}
---

# %% First question[^f1]
[^f1]: [markdown]

What is two and two?

## %%% Answer[^f1.1]
[^f1.1]: [writer] agent="writer"

Four.

# %% Second question[^f2]
[^f2]: [markdown]

And three and three?

## %%% Answer[^f2.1]
[^f2.1]: [writer] agent="writer"

Six.

# %% Third question[^f3]
[^f3]: [markdown]

And four and four?
"""


def test_fork_from_here_opens_a_fork_up_to_that_cell(page, lab_server) -> None:
    original = lab_server.root / "forkme.msg.md"
    original.write_text(CHAT)
    notebook = open_notebook(page, lab_server, "forkme.msg.md")
    cell = cell_with(notebook, "And three and three?")
    cell.locator(".jp-InputPrompt").first.click(button="right")
    item = page.locator(".lm-Menu-item", has_text="Fork from here")
    expect(item).to_be_visible()
    item.click()
    fork = lab_server.root / "forkme.fork-1.msg.md"
    expect(
        page.locator(".lm-TabBar-tab.lm-mod-current", has_text="forkme.fork-1.msg.md")
    ).to_be_visible(timeout=30_000)
    opened = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    expect(opened).to_contain_text("Six.")
    expect(opened).not_to_contain_text("And four and four?")
    nb = fmt.read(fork)
    cells = [c for c in nb["cells"] if fmt.document_part(c) is None]
    assert [fmt.cell_id(c) for c in cells] == ["f1", "f2"]
    assert fmt.front_matter(nb)["forked_from"] == {"file": "forkme.msg.md", "cell": "f2"}
    assert original.read_text() == CHAT
