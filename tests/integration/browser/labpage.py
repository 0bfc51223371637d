"""What a test does in JupyterLab, as a user would: open a file, run a cell, save, reopen.

Plain functions over a Playwright page and the `LabServer` of `conftest.py`; the tests of
this folder share them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

# True once the current notebook's kernel is up and idle.
KERNEL_IDLE = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return !!kernel && kernel.status === "idle";
}"""
# Resolves once the current notebook's kernel is idle and JupyterLab has done what it does when
# a kernel comes up: it writes the kernel's `language_info` and kernelspec into the notebook's
# metadata (JupyterLab's own callbacks on these promises were registered first, so ran first).
KERNEL_SETTLED = """async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    await panel.context.ready;
    await panel.sessionContext.ready;
    const kernel = panel.sessionContext.session.kernel;
    await kernel.info;
    await kernel.spec;
    return kernel.name;
}"""
# The front matter of a conversation with two agents on the local model server: `writer`
# answers by default, `helper` may call tools (the ATTP loop).
FRONT = """---
agents:
  writer:
    models: [test-model]
  helper:
    models: [test-model]
    tools: ["*"]
default_agent: writer
---

"""
# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
MODEL_DIRTY = "() => window.jupyterapp.shell.currentWidget.context.model.dirty"


def wait_for(predicate: Callable[[], object], timeout: float = 60.0, what: str = "it") -> None:
    """Poll `predicate` until it is true; an AssertionError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def open_lab(page: Page, lab_server) -> None:
    """JupyterLab with a fresh workspace, its file browser listed."""
    page.goto(f"{lab_server.url}/lab?reset")
    page.locator(".jp-DirListing-content").wait_for()


def double_click(page: Page, name: str) -> None:
    """Double-click the file `name` in the file browser."""
    item = page.locator(".jp-DirListing-item", has=page.locator(f'text="{name}"'))
    item.first.dblclick()


def open_notebook(page: Page, lab_server, name: str) -> Locator:
    """Open `name` from a fresh JupyterLab by double-click; its notebook, once it has cells."""
    open_lab(page, lab_server)
    double_click(page, name)
    notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    notebook.locator(".jp-Cell").first.wait_for()
    return notebook


def wait_for_kernel(page: Page) -> None:
    """The current notebook's agent kernel is up, idle and settled."""
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    assert page.evaluate(KERNEL_SETTLED) == "percent-agent"
    # What a notebook does when its kernel is up is done; give anything later a moment too.
    page.wait_for_timeout(1000)


def cell_with(notebook: Locator, text: str) -> Locator:
    """The code cell whose input holds `text`, scrolled into view."""
    cell = notebook.locator(".jp-CodeCell", has=notebook.page.get_by_text(text)).first
    cell.scroll_into_view_if_needed()
    return cell


def run_cell(page: Page, cell: Locator) -> None:
    """Run `cell` (a message that has not run yet) with Shift+Enter, as a user does, and wait
    until its reply is complete: its prompt shows an execution count and the kernel is idle."""
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    prompt = cell.locator(".jp-InputPrompt").first
    expect(prompt).to_have_text(re.compile(r"^\[\d+\]:$"), timeout=90_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)


def save(page: Page) -> None:
    """Ctrl+S, and wait until the document is no longer modified."""
    page.keyboard.press("Control+s")
    page.wait_for_function(f"() => !({MODEL_DIRTY.removeprefix('() => ')})")


def same_but_for_time_and_ids(text: str) -> str:
    """``text`` with what two runs of one conversation never share made equal: the message's
    id (random in ``tce``, from the cell id in JupyterLab) and when and how long the model
    answered."""
    (cid,) = set(re.findall(r"^# %%[^\n]*\[\^([^\].]+)\]$", text, re.M))
    text = text.replace(cid, "ID")
    text = re.sub(r'time="[^"]*"', 'time="T"', text)
    return re.sub(r"duration=[0-9.]+", "duration=D", text)


def chat_through_tce(model, folder: Path, message: str, reply: str) -> str:
    """The text ``tce chat`` writes for ``message`` answered by ``reply`` (the local model
    ``model``), in a new file of ``folder``. No title: a message typed into a cell has none."""
    model.script(reply)
    path = folder / "tce.msg.md"
    env = {**os.environ, "PERCENT_AGENT_API_BASE": model.url,
           "PERCENT_AGENT_MODEL": "test-model", "PERCENT_AGENT_WARM": "0",
           "PERCENT_AGENT_CONFIG_DIR": str(folder / "config")}
    tce = Path(sys.executable).parent / "tce"
    done = subprocess.run([str(tce), "chat", str(path), "-m", message, "--title", ""], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    text = path.read_text()
    assert reply in text
    return text


def run_new_chat(page: Page, server, message: str) -> Locator:
    """Open a new Agent chat from the launcher, type ``message`` into its first cell and run
    it; the chat's notebook."""
    open_lab(page, server)
    page.locator(".jp-LauncherCard", has_text="New Agent Chat").first.click()
    notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    wait_for_kernel(page)
    first = notebook.locator(".jp-CodeCell").first
    first.locator(".cm-content").click()
    page.keyboard.type(message)
    run_cell(page, first)
    return notebook


def chat_through_jupyterlab(page: Page, server, model, message: str, reply: str) -> str:
    """The text JupyterLab saves for a new Agent chat whose first message, typed and run, is
    answered by ``reply``; the file is removed afterwards."""
    model.script(reply)
    run_new_chat(page, server, message)
    save(page)
    (path,) = server.root.glob("Untitled*.msg.md")
    try:
        wait_for(lambda: reply in path.read_text(), what="the reply on disk")
        return path.read_text()
    finally:
        path.unlink()
