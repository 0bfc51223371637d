"""A long reply streaming into JupyterLab: what a save writes meanwhile, and what it ends as.

Real JupyterLab in Chromium, the agent kernel, and the local model server scripted to stream
slowly, so that the user saves while the reply is still coming in.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.openai_server import Reply

from .labpage import FRONT, cell_with, open_notebook, save, wait_for, wait_for_kernel

pytestmark = pytest.mark.slow

QUESTION = "Describe the coast, please."
REPLY = "".join(f"Bay {n} is calm and blue. " for n in range(60))  # ~1.6 KB


def _reply(path) -> dict | None:
    (message,) = [c for c in fmt.read(path)["cells"] if fmt.cell_kind(c) == "message"]
    assert fmt.message_text(message) == QUESTION  # what the user typed is kept
    replies = [o for o in message["outputs"] if fmt.output_kind(o) == "reply"]
    return replies[0] if replies else None


def test_a_save_while_a_reply_streams_writes_it_incomplete_then_the_final_reply(
    page, lab_server, model
) -> None:
    path = lab_server.root / "coast.msg.md"
    path.write_text(FRONT + f"# %% Ask[^c1]\n[^c1]: [markdown]\n\n{QUESTION}\n")
    # about 80 chunks, 80 ms apart: several seconds of streaming to save in
    model.script(Reply(REPLY, chunk_size=20, chunk_delay=0.08))
    notebook = open_notebook(page, lab_server, "coast.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, QUESTION)
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    outputs = cell.locator(".jp-OutputArea")
    expect(outputs).to_contain_text("Bay 3 is calm", timeout=60_000)
    expect(cell.locator(".jp-InputPrompt").first).to_have_text("[*]:")
    page.keyboard.press("Control+s")

    def saved_partial() -> bool:
        return _reply(path) is not None

    wait_for(saved_partial, timeout=30, what="the save made while the reply streams")
    partial = _reply(path)
    text = fmt.output_text(partial)
    assert REPLY.startswith(text) and len(text) < len(REPLY), text
    assert fmt.output_attrs(partial).get("incomplete") is True, path.read_text()
    assert "incomplete=true" in path.read_text()
    # the stream ends; the next save writes the whole reply, no longer marked
    expect(cell.locator(".jp-InputPrompt").first).to_have_text(
        re.compile(r"^\[\d+\]:$"), timeout=90_000
    )
    # the updates a render coalesced away end in the whole reply, exactly
    expect(outputs.locator(".jp-PercentAgent-replyBody")).to_have_text(REPLY.strip())
    expect(outputs.locator(".jp-PercentAgent-replyHeader")).not_to_contain_text("incomplete")
    save(page)
    final = _reply(path)
    assert fmt.output_text(final) == REPLY.rstrip() or fmt.output_text(final) == REPLY
    attrs = fmt.output_attrs(final)
    assert "incomplete" not in attrs and attrs["model"], path.read_text()
