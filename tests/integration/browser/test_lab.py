"""What a JupyterLab user sees and does with message files, in a real JupyterLab and Chromium.

Double-clicking a ``.msg.md`` opens the notebook editor with messages as cells and replies
and tool calls as outputs; an edit saved with Ctrl+S lands in the file as canonical text
with the outputs kept; "New Agent Chat" makes ``Untitled.msg.md``; a plain ``.md`` still
opens in the text editor.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent import format as fmt
from tests.paths import TEST_DATA

from .labpage import (
    MODEL_DIRTY,
    chat_through_jupyterlab,
    chat_through_tce,
    double_click,
    open_lab,
    same_but_for_time_and_ids,
    wait_for,
    wait_for_kernel,
)

pytestmark = pytest.mark.slow

CHAT = """---
default_agent: planner
---

## %% Plan the trip[^q1]

[^q1]: [markdown]

Plan three days in Beijing.

### %%% Answer[^q1.1]

[^q1.1]: [planner] time="2026-11-22T10:00:00Z" model="gpt-4o-mini"

Day one: **the Forbidden City**.

### %%% Weather lookup[^q1.k3x9]

[^q1.k3x9]: [tool] name="weather"

__result__ = weather(city="Beijing")

### %%% [^q1.k3x9.1]

[^q1.k3x9.1]: [tool] status="success" duration=0.5

Sunny, 25 degrees
"""


def test_double_click_opens_a_message_file_as_a_notebook_and_save_keeps_it_canonical(
    page, lab_server
) -> None:
    path = lab_server.root / "chat.msg.md"
    path.write_text(CHAT)
    open_lab(page, lab_server)
    double_click(page, "chat.msg.md")

    notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    notebook.wait_for()
    first_cell = notebook.locator(".jp-CodeCell").first
    first_cell.wait_for()
    # JupyterLab draws a cell's editor after the cell itself: wait for the text.
    expect(first_cell.locator(".jp-InputArea")).to_contain_text("Plan three days in Beijing.")
    outputs = first_cell.locator(".jp-OutputArea")
    outputs.get_by_text("the Forbidden City").wait_for()
    # The reply is recognised as an agent's: a header names the agent and the model.
    expect(outputs.locator(".jp-PercentAgent-replyHeader")).to_contain_text("planner")
    expect(outputs.locator(".jp-PercentAgent-replyHeader")).to_contain_text("gpt-4o-mini")
    outputs.get_by_text("weather", exact=False).first.wait_for()
    page.screenshot(path=str(lab_server.root.parent / "opened.png"))

    # Edit the message and save with the keyboard, as a user would.
    editor = first_cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" And a day at the Summer Palace.")
    page.keyboard.press("Control+s")

    wait_for(lambda: "Summer Palace" in path.read_text(), what="the edit on disk")
    text = path.read_text()
    assert "Plan three days in Beijing. And a day at the Summer Palace." in text
    # Canonical: writing what was read gives the same bytes; nothing of the outputs lost.
    assert fmt.writes(fmt.reads(text, path=str(path)), path=str(path)) == text
    assert "Day one: **the Forbidden City**." in text
    assert '[tool] name="weather"' in text
    assert "Sunny, 25 degrees" in text
    assert "default_agent: planner" in text


DATA = TEST_DATA / "browser" / "tool_outputs.msg.md"


def _dirty_tabs(page):
    return page.locator("#jp-main-dock-panel .lm-TabBar-tab.jp-mod-dirty")


def test_opening_a_message_file_leaves_it_unmodified(page, lab_server) -> None:
    """No "unsaved changes" mark on a file just opened; a real edit sets it, a save writes it.

    JupyterLab writes the kernel's `language_info` into the notebook when the kernel starts; a
    message file does not keep it, and the notebook once came out of it marked modified.
    """
    path = lab_server.root / "opened.msg.md"
    text = DATA.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    open_lab(page, lab_server)
    double_click(page, "opened.msg.md")
    notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    first_cell = notebook.locator(".jp-CodeCell").first
    expect(first_cell.locator(".jp-InputArea")).to_contain_text("How many lines has the report?")
    wait_for_kernel(page)

    assert page.evaluate(MODEL_DIRTY) is False
    tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="opened.msg.md")
    expect(tab).to_be_visible()
    expect(_dirty_tabs(page)).to_have_count(0)
    assert path.read_text(encoding="utf-8") == text, "opening wrote nothing"

    # A real edit still marks the document modified, and saving writes it.
    first_cell.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" And the appendix?")
    expect(_dirty_tabs(page)).to_have_count(1)
    assert page.evaluate(MODEL_DIRTY) is True
    page.keyboard.press("Control+s")
    wait_for(lambda: "report? And the appendix?" in path.read_text(), what="the edit on disk")
    expect(_dirty_tabs(page)).to_have_count(0)
    saved = path.read_text(encoding="utf-8")
    # Only the edit: the kernel's language_info stays out of the file.
    assert saved == text.replace("report?\n", "report? And the appendix?\n", 1)
    assert "language_info" not in saved


def test_a_new_agent_chat_is_unmodified_once_its_kernel_is_up(page, lab_server) -> None:
    open_lab(page, lab_server)
    page.locator(".jp-LauncherCard", has_text="New Agent Chat").first.click()
    page.locator(".jp-NotebookPanel:visible .jp-Notebook").wait_for()
    wait_for_kernel(page)
    assert page.evaluate(MODEL_DIRTY) is False
    expect(_dirty_tabs(page)).to_have_count(0)
    assert "language_info" not in (lab_server.root / "Untitled.msg.md").read_text()


def test_new_agent_chat_from_the_launcher_creates_untitled_msg_md(page, lab_server) -> None:
    open_lab(page, lab_server)
    page.locator(".jp-LauncherCard", has_text="New Agent Chat").first.click()
    created = lab_server.root / "Untitled.msg.md"
    wait_for(created.exists, what="Untitled.msg.md on disk")
    page.locator(".jp-NotebookPanel:visible .jp-Notebook").wait_for()
    # The new file is a message file the format core reads, set up for the agent kernel.
    nb = fmt.reads(created.read_text(), path=str(created))
    assert nb["metadata"]["kernelspec"]["name"] == "percent-agent"


def test_a_plain_markdown_file_still_opens_in_the_text_editor(page, lab_server) -> None:
    (lab_server.root / "notes.md").write_text("# Notes\n\nJust a document.\n")
    open_lab(page, lab_server)
    double_click(page, "notes.md")
    page.locator(".jp-FileEditor:visible").wait_for()
    expect(page.locator(".jp-FileEditor:visible")).to_contain_text("Just a document.")
    assert page.locator(".jp-NotebookPanel:visible").count() == 0


def test_icon_of_message_files_differs_from_plain_markdown(page, lab_server) -> None:
    (lab_server.root / "a.msg.md").write_text(CHAT)
    (lab_server.root / "b.md").write_text("# B\n")
    open_lab(page, lab_server)

    def icon_html(name: str) -> str:
        item = page.locator(".jp-DirListing-item", has=page.locator(f'text="{name}"')).first
        item.wait_for()
        return item.locator(".jp-DirListing-itemIcon").inner_html()

    assert icon_html("a.msg.md") != icon_html("b.md")


def test_a_conversation_saved_from_jupyterlab_is_the_bytes_tce_writes(
        page, lab_server, model, tmp_path) -> None:
    """One conversation, made twice through the same local model: by ``tce chat``, and in
    JupyterLab (a new Agent chat, a message typed and run, Ctrl+S): the same bytes."""
    by_tce = chat_through_tce(model, tmp_path, "Which plan costs less?", "Plan B, by a third.")
    by_lab = chat_through_jupyterlab(page, lab_server, model, "Which plan costs less?",
                                     "Plan B, by a third.")
    assert same_but_for_time_and_ids(by_lab) == same_but_for_time_and_ids(by_tce)
