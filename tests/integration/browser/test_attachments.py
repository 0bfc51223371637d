"""Files and images in a message, in a real JupyterLab and Chromium: ``@file:PATH`` in a
message cell sends the file's text (framed as data) through the agent kernel, and an image
pasted into a message cell is saved beside the conversation, linked in the message as
``![pasted image](NAME)``, and reaches a vision model (the local model server) byte for byte.
The lab's root is untrusted: neither needs trust."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.paths import TEST_DATA

from .labpage import cell_with, open_notebook, run_cell, save, wait_for, wait_for_kernel

pytestmark = pytest.mark.slow

VISION = ("---\nagents:\n  seer:\n    models: [test-model]\n    vision: true\n"
          "default_agent: seer\n---\n\n")
PASTE = """(b64) => {
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], 'image.png', { type: 'image/png' }));
    const target = document.querySelector(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .cm-content');
    target.dispatchEvent(new ClipboardEvent('paste',
        { clipboardData: data, bubbles: true, cancelable: true }));
}"""


def test_a_file_mention_in_a_message_cell_sends_the_files_text(page, lab_server, model) -> None:
    root = lab_server.root
    (root / "notes.txt").write_text("The port is 8417.\n")
    (root / "mention.msg.md").write_text(
        "# %%[^m1]\n[^m1]: [markdown]\n\nWhich port does @file:notes.txt name?\n")
    model.script("It is port 8417.")
    notebook = open_notebook(page, lab_server, "mention.msg.md")
    wait_for_kernel(page)
    ask = cell_with(notebook, "Which port does")
    run_cell(page, ask)
    expect(ask.locator(".jp-OutputArea")).to_contain_text("It is port 8417.", timeout=60_000)
    (request,) = model.chat_requests
    sent = request.messages[-1]["content"]
    assert sent.startswith("Which port does @file:notes.txt name?")
    assert "[The user attached the file notes.txt to this message." in sent
    assert "The port is 8417." in sent


def test_a_pasted_image_is_saved_beside_the_conversation_and_sent_as_it_is(
    page, lab_server, model
) -> None:
    root = lab_server.root
    png = (TEST_DATA / "attachments" / "red.png").read_bytes()
    (root / "paste.msg.md").write_text(
        VISION + "# %%[^p1]\n[^p1]: [markdown]\n\nWhat colour is this? \n")
    model.script("Red.")
    notebook = open_notebook(page, lab_server, "paste.msg.md")
    wait_for_kernel(page)
    ask = cell_with(notebook, "What colour is this?")
    ask.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.evaluate(PASTE, base64.b64encode(png).decode())
    wait_for(lambda: list(root.glob("paste-pasted-*.png")), what="the pasted image's file")
    (saved,) = root.glob("paste-pasted-*.png")
    assert saved.read_bytes() == png
    expect(ask.locator(".cm-content")).to_contain_text(f"![pasted image]({saved.name})")
    run_cell(page, ask)
    expect(ask.locator(".jp-OutputArea")).to_contain_text("Red.", timeout=60_000)
    (request,) = model.chat_requests
    parts = request.messages[-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    url = parts[1]["image_url"]["url"]
    assert base64.b64decode(url.removeprefix("data:image/png;base64,")) == png
    save(page)
    text = (root / "paste.msg.md").read_text()
    assert f"What colour is this? ![pasted image]({saved.name})" in text
    # kept through the real jupytext command, there and back: the link is text, the image a file
    jupytext = str(Path(sys.executable).parent / "jupytext")
    for args in (["--to", "ipynb", "-o", "paste.ipynb", "paste.msg.md"],
                 ["--to", ".msg.md", "-o", "back.msg.md", "paste.ipynb"]):
        subprocess.run([jupytext, *args], cwd=root, check=True, capture_output=True)
    assert (root / "back.msg.md").read_text() == text and saved.read_bytes() == png
