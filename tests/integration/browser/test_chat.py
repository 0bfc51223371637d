"""JupyterLab as a chat: an agent's ATTP steps shown as steps (live, too), each reply's usage
in its header and the conversation's total in the status bar, each message's agent and
history mode at a glance and changed with one click, one Launcher entry.

A real JupyterLab in Chromium; live runs go through the agent kernel to the local model
server.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.attp import FinalAnswer, ToolCall, format_reply
from jupyter_percent_agent.testing.openai_server import Reply
from tests.paths import TEST_DATA

from .labpage import (
    FRONT,
    MODEL_DIRTY,
    cell_with,
    open_lab,
    open_notebook,
    run_cell,
    run_new_chat,
    save,
    wait_for_kernel,
)

pytestmark = pytest.mark.slow

DATA = TEST_DATA / "browser" / "chat.msg.md"
NAME = "chat.msg.md"


def open_chat(page, lab_server):
    (lab_server.root / NAME).write_text(DATA.read_text())
    return open_notebook(page, lab_server, NAME)


# -- ATTP steps ----------------------------------------------------------------------------


def test_an_agents_step_shows_its_thought_folded_and_its_code_as_python(page, lab_server) -> None:
    notebook = open_chat(page, lab_server)
    outputs = cell_with(notebook, "What is the weather in Paris?").locator(".jp-OutputArea")
    step = outputs.locator(".jp-PercentAgent-step")
    expect(step).to_have_count(1)
    # Never the TOML as Markdown.
    expect(outputs).not_to_contain_text('thought = """')
    expect(outputs).not_to_contain_text("[tool_call]")
    # The thought: a folded block, its first line in view, its Markdown inside.
    thought = step.locator("details.jp-PercentAgent-thought")
    expect(thought).not_to_have_attribute("open", "")
    expect(thought.locator("summary")).to_contain_text("Thought")
    expect(thought.locator("summary")).to_contain_text("I should call the **weather** tool")
    body = thought.locator(".jp-PercentAgent-thoughtBody")
    expect(body).to_be_hidden()
    thought.locator("summary").click()
    expect(body).to_be_visible()
    expect(body.locator("strong")).to_have_text("weather")
    expect(body).to_contain_text("It knows every city.")
    # The call: its target, then its code highlighted as Python.
    call = step.locator(".jp-PercentAgent-stepCall")
    expect(call.locator(".jp-PercentAgent-stepTarget")).to_have_text("the weather in Paris")
    code = call.locator("pre code")
    expect(code).to_have_class(re.compile(r"\blanguage-python\b"))
    expect(code).to_have_text('__result__ = weather(city="Paris")')
    # The tool call and result blocks stay as they were.
    expect(outputs.locator("details.jp-PercentAgent-toolCall summary")).to_have_text(
        "tool call: weather"
    )
    expect(outputs.locator("details.jp-PercentAgent-toolResult")).to_have_attribute(
        "data-status", "success"
    )
    expect(outputs.locator("strong", has_text="18.5 °C")).to_be_visible()
    page.screenshot(path=str(lab_server.root.parent / "chat_step.png"))


def test_a_step_that_does_not_parse_is_shown_as_its_text(page, lab_server) -> None:
    notebook = open_chat(page, lab_server)
    outputs = cell_with(notebook, "What do you think?").locator(".jp-OutputArea")
    raw = outputs.locator(".jp-PercentAgent-rawStep")
    expect(raw.locator("pre code")).to_have_text('thought = """never closed\n[tool_call')
    expect(outputs.locator(".jp-PercentAgent-stepError")).to_have_text(
        "Not valid ATTP: TOML syntax error"
    )
    expect(outputs.locator(".jp-PercentAgent-thought")).to_have_count(0)


def test_a_live_step_streams_as_a_step_then_its_tool_call_and_answer(
    page, lab_server, model
) -> None:
    (lab_server.root / "live.msg.md").write_text(
        FRONT + '# %% Ask[^w1]\n[^w1]: [markdown] agent="helper"\n\nCount to three.\n'
    )
    step = ToolCall(
        thought="I will count with **Python**.\n" + "Counting carefully. " * 30,
        target="count to three",
        code="__result__ = [1, 2, 3]\n",
    )
    answer = FinalAnswer(thought="Done.", answer="One, two, **three**.")
    # Slow enough to be seen while it streams: about 80 chunks, 50 ms apart.
    model.script(Reply(format_reply(step), chunk_size=10, chunk_delay=0.05), format_reply(answer))
    notebook = open_notebook(page, lab_server, "live.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "Count to three.")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    outputs = cell.locator(".jp-OutputArea")
    # While the model is still writing its thought, the step already reads as a step.
    live = outputs.locator(".jp-PercentAgent-step .jp-PercentAgent-thought")
    live.wait_for(timeout=60_000)
    expect(cell.locator(".jp-InputPrompt").first).to_have_text("[*]:")
    expect(outputs).not_to_contain_text('thought = """')
    # Then it completes: the code, the tool call and result, the answer.
    expect(cell.locator(".jp-InputPrompt").first).to_have_text(
        re.compile(r"^\[\d+\]:$"), timeout=60_000
    )
    expect(outputs.locator(".jp-PercentAgent-stepCall pre code")).to_have_text(
        "__result__ = [1, 2, 3]"
    )
    expect(outputs.locator("details.jp-PercentAgent-toolCall")).to_have_count(1)
    expect(outputs.locator("details.jp-PercentAgent-toolResult")).to_have_count(1)
    expect(outputs.locator("strong", has_text="three")).to_be_visible()
    expect(outputs).not_to_contain_text('thought = """')


# -- usage ---------------------------------------------------------------------------------


def test_each_reply_header_shows_agent_model_tokens_cost_and_duration(page, lab_server) -> None:
    notebook = open_chat(page, lab_server)
    headers = cell_with(notebook, "What is the weather in Paris?").locator(
        ".jp-PercentAgent-replyHeader"
    )
    expect(headers.first).to_have_text(
        "helper · gpt-4o-mini · step · 1,200 → 45 tokens · $0.0003 · 1.5s"
    )
    expect(headers.nth(1)).to_have_text("helper · gpt-4o-mini · 1,300 → 30 tokens · $0.0002 · 0.8s")


STATUS = ".jp-PercentAgent-usageStatus"
PLAIN_NOTEBOOK = {
    "cells": [],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def test_the_status_bar_shows_the_conversations_running_total(page, lab_server, model) -> None:
    notebook = open_chat(page, lab_server)
    status = page.locator(STATUS)
    expect(status).to_have_text("Agent: 2,500 → 75 tokens · $0.0005")
    # A reply that arrives adds what it used (litellm's counts: more than nothing).
    model.script("Fine.")
    wait_for_kernel(page)
    run_cell(page, cell_with(notebook, "What do you think?"))
    expect(status).not_to_have_text(re.compile(r"^Agent: 2,500 → 75 tokens"))
    tokens_in, tokens_out = (
        int(n.replace(",", ""))
        for n in re.findall(r"[\d,]+", status.inner_text().split("tokens")[0])
    )
    assert tokens_in > 2500 and tokens_out > 75
    # A notebook that is not a conversation shows none.
    (lab_server.root / "plain.ipynb").write_text(json.dumps(PLAIN_NOTEBOOK))
    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:open', {path: 'plain.ipynb'})"
    )
    expect(page.locator(".jp-NotebookPanel:visible .jp-Notebook")).to_have_count(1)
    expect(status).to_be_hidden()


# -- the bar over each message -------------------------------------------------------------


def bar_of(notebook, text: str):
    return cell_with(notebook, text).locator(".jp-PercentAgent-cellBar")


def test_each_message_shows_its_agent_and_history_and_changes_them_with_one_click(
    page, lab_server
) -> None:
    notebook = open_chat(page, lab_server)
    path = lab_server.root / NAME
    ask = bar_of(notebook, "What is the weather in Paris?")
    select = ask.locator("select.jp-PercentAgent-agentSelect")
    expect(select).to_have_value("helper")
    # The agents this file defines (front matter, then definition cells), and the default.
    options = select.locator("option")
    expect(options).to_have_text(["default (writer)", "writer", "helper", "critic"])
    expect(ask.locator("button[aria-pressed=true]")).to_have_text("include")
    # An agent definition cell has no bar.
    expect(
        cell_with(notebook, "models: [gpt-4o-mini]").locator(".jp-PercentAgent-cellBar")
    ).to_have_count(0)

    latest = bar_of(notebook, "What do you think?")
    expect(latest.locator("select")).to_have_value("")
    latest.locator("select").select_option("critic")
    aside = bar_of(notebook, "An aside the agent should not see.")
    expect(aside.locator("button[aria-pressed=true]")).to_have_text("exclude")
    aside.get_by_role("button", name="include").click()
    ask.get_by_role("button", name="summary").click()
    ask.locator("select").select_option("")
    save(page)
    text = path.read_text()
    assert '[^q4]: [markdown] agent="critic"\n' in text
    assert "[^q2]: [markdown]\n" in text  # include: the default, no attribute
    assert '[^q1]: [markdown] history="summary"\n' in text  # agent: back to the default
    nb = fmt.reads(text, path=str(path))
    cells = {c["id"]: c for c in nb["cells"]}
    assert cells["q4"]["metadata"]["agent"] == "critic"


def test_editing_the_front_matter_updates_every_bar_without_a_click(page, lab_server) -> None:
    """The bar says at a glance who answers: after the user types a new default_agent (and
    a new agent) into the front matter, the closed menus said "default (writer)" until
    each was clicked."""
    (lab_server.root / "front.msg.md").write_text(
        FRONT + "# %% A[^m1]\n[^m1]: [markdown]\n\nFirst message.\n\n"
        "# %% B[^m2]\n[^m2]: [markdown]\n\nSecond message.\n"
    )
    notebook = open_notebook(page, lab_server, "front.msg.md")
    first = bar_of(notebook, "First message.").locator("select")
    expect(first.locator("option:checked")).to_have_text("default (writer)")
    front = notebook.locator(".jp-Cell").first
    front.get_by_text("default_agent: writer").click()
    page.keyboard.press("End")
    for _ in "writer":
        page.keyboard.press("Backspace")
    page.keyboard.type("helper")
    for text in ["First message.", "Second message."]:
        select = bar_of(notebook, text).locator("select")
        expect(select.locator("option:checked")).to_have_text("default (helper)")


def test_an_excluded_message_is_dimmed(page, lab_server) -> None:
    notebook = open_chat(page, lab_server)
    aside = cell_with(notebook, "An aside the agent should not see.")
    expect(aside).to_have_class(re.compile(r"\bjp-PercentAgent-excluded\b"))
    expect(aside.locator(".jp-InputArea")).to_have_css("opacity", "0.5")
    ask = cell_with(notebook, "What is the weather in Paris?")
    expect(ask).not_to_have_class(re.compile(r"\bjp-PercentAgent-excluded\b"))
    expect(ask.locator(".jp-InputArea")).to_have_css("opacity", "1")
    # One click brings it back, another sets it apart again.
    aside.locator(".jp-PercentAgent-cellBar").get_by_role("button", name="include").click()
    expect(aside.locator(".jp-InputArea")).to_have_css("opacity", "1")
    ask.locator(".jp-PercentAgent-cellBar").get_by_role("button", name="exclude").click()
    expect(ask).to_have_class(re.compile(r"\bjp-PercentAgent-excluded\b"))
    page.screenshot(path=str(lab_server.root.parent / "chat_bar.png"))


def test_a_stored_summary_can_be_read(page, lab_server) -> None:
    notebook = open_chat(page, lab_server)
    bar = bar_of(notebook, "A long exchange about hotels.")
    expect(bar.locator("button[aria-pressed=true]")).to_have_text("summary")
    summary = bar.locator(".jp-PercentAgent-summary")
    expect(summary).to_be_hidden()
    bar.locator(".jp-PercentAgent-summaryToggle").click()
    expect(summary).to_be_visible()
    expect(summary).to_have_text("The user asked for three hotels; the agent listed them.")
    # A message without a stored summary offers none.
    expect(
        bar_of(notebook, "What is the weather in Paris?").locator(".jp-PercentAgent-summaryToggle")
    ).to_be_hidden()



CELL_COUNT = """async () => {
    const panel = window.jupyterapp.shell.currentWidget;
    await panel.context.ready;
    return panel.model.cells.length;
}"""


def test_the_bar_works_from_the_keyboard_alone_and_its_keys_never_reach_the_notebook(
    page, lab_server
) -> None:
    """Keys pressed on the bar are the bar's: `D D` on its menu or a button used to reach
    the notebook's command mode and delete the cell. The menu, the history buttons and the
    summary toggle are reached with Tab and worked with the arrow keys, Space and Enter, and
    say their state (`aria-pressed`, `aria-expanded`)."""
    notebook = open_chat(page, lab_server)
    count = page.evaluate(CELL_COUNT)
    bar = bar_of(notebook, "A long exchange about hotels.")
    select = bar.get_by_role("combobox", name="Agent")
    select.focus()
    page.keyboard.press("d")
    page.keyboard.press("d")
    page.keyboard.press("ArrowDown")  # from "default (writer)" to the next agent
    expect(select).to_have_value("writer")  # the keys before it were handled too
    assert page.evaluate(CELL_COUNT) == count
    page.keyboard.press("Tab")
    expect(bar.get_by_role("button", name="include")).to_be_focused()
    page.keyboard.press("d")
    page.keyboard.press("d")
    page.keyboard.press("Tab")  # auto
    page.keyboard.press("Tab")  # exclude
    page.keyboard.press("Space")
    expect(bar.get_by_role("button", name="exclude")).to_have_attribute("aria-pressed", "true")
    assert page.evaluate(CELL_COUNT) == count
    toggle = bar.locator(".jp-PercentAgent-summaryToggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(toggle).to_be_focused()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(bar.get_by_role("region", name="Stored summary")).to_have_text(
        "The user asked for three hotels; the agent listed them."
    )
    assert page.evaluate(
        """() => Array.from(window.jupyterapp.shell.currentWidget.model.cells)
            .filter(cell => cell.sharedModel.getSource().includes('about hotels'))
            .map(cell => [cell.getMetadata('agent'), cell.getMetadata('history')])"""
    ) == [["writer", "exclude"]]
    # Chords still reach JupyterLab: Ctrl+S on the bar saves.
    page.keyboard.press("Control+s")
    page.wait_for_function(f"() => !({MODEL_DIRTY.removeprefix('() => ')})")


# -- the Launcher --------------------------------------------------------------------------


def test_the_launcher_has_one_agent_entry(page, lab_server) -> None:
    open_lab(page, lab_server)
    launcher = page.locator(".jp-Launcher:visible")
    launcher.locator(".jp-LauncherCard").first.wait_for()
    # The kernelspec cards are in: Python's are there, the agent kernel's are not.
    for section in ("Notebook", "Console"):
        cards = launcher.locator(f'.jp-LauncherCard[data-category="{section}"]')
        expect(cards.filter(has_text="Python 3")).to_have_count(1)
        expect(cards.filter(has_text="Agent")).to_have_count(0)
    expect(launcher.locator(".jp-LauncherCard", has_text="New Agent Chat")).to_have_count(1)


# -- what the kernel is sent ---------------------------------------------------------------

RECORD_EXECUTE_REQUESTS = """() => {
    window.__paRequests = [];
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    let state = null;
    kernel.anyMessage.connect((_, args) => {
        if (args.direction !== 'send') {
            return;
        }
        const msg = JSON.parse(JSON.stringify(args.msg));
        if (msg.header.msg_type === 'comm_msg') {
            state = msg.content.data;
        } else if (msg.header.msg_type === 'execute_request') {
            // the live state sent on the comm right before it, and for its cell
            window.__paRequests.push({...msg.metadata, state});
            state = null;
        }
    });
}"""


def test_a_run_sends_the_notebooks_unsaved_agents_history_and_edits(
    page, lab_server, model
) -> None:
    """The kernel reads the saved file; what is not saved yet goes on the kernel's comm
    right before the execute request, for that request's cell."""
    notebook = open_chat(page, lab_server)
    wait_for_kernel(page)
    page.evaluate(RECORD_EXECUTE_REQUESTS)
    bar_of(notebook, "An aside the agent should not see.").get_by_role(
        "button", name="include"
    ).click()
    latest = cell_with(notebook, "What do you think?")
    latest.locator(".jp-PercentAgent-cellBar select").select_option("critic")
    latest.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" Be brief.")
    model.script("Fine.")
    run_cell(page, latest)
    (meta,) = page.evaluate("() => window.__paRequests")
    # JupyterLab's own: the running cell's id and metadata.
    assert meta["cellId"] == "q4" and meta["agent"] == "critic"
    assert meta["state"]["cellId"] == "q4" and meta["state"]["nonce"]
    state = meta["state"]["state"]
    assert state["version"] == 1
    cells = {c["id"]: c for c in state["cells"]}
    assert [c["id"] for c in state["cells"]] == ["front-matter", "q1", "q2", "q3", "a1", "q4"]
    assert cells["q1"]["agent"] == "helper" and "source" not in cells["q1"]
    assert "history" not in cells["q2"]  # included again, not saved
    assert cells["q3"]["history"] == "summary" and cells["q3"]["summary"].startswith("The user")
    assert cells["a1"]["definition"] == "agent" and cells["a1"]["name"] == "critic"
    assert cells["q4"]["agent"] == "critic"
    assert cells["q4"]["source"] == "What do you think? Be brief." and cells["q4"]["unsaved"]
    # Once saved, a cell's text is the file's again: not sent.
    save(page)
    model.script("Fine again.")
    page.evaluate("() => { window.__paRequests = []; }")
    latest.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function("() => window.__paRequests.length === 1")
    (meta,) = page.evaluate("() => window.__paRequests")
    cells = {c["id"]: c for c in meta["state"]["state"]["cells"]}
    assert "source" not in cells["q4"] and "source" not in cells["front-matter"]


def test_a_new_chat_and_every_cell_added_to_it_get_the_bar(page, lab_server) -> None:
    open_lab(page, lab_server)
    page.locator(".jp-LauncherCard", has_text="New Agent Chat").first.click()
    notebook = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    cells = notebook.locator(".jp-CodeCell")
    expect(cells).to_have_count(1)
    expect(cells.first.locator(".jp-PercentAgent-cellBar select")).to_have_value("")
    expect(cells.first.locator(".jp-PercentAgent-cellBar option")).to_have_text(["default"])
    cells.first.locator(".cm-content").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below, as a user adds one
    expect(cells).to_have_count(2)
    expect(cells.nth(1).locator(".jp-PercentAgent-cellBar")).to_have_count(1)
    expect(cells.nth(1).locator("button[aria-pressed=true]")).to_have_text("include")


SEEN = """---
agents:
  writer: {models: [writer-model]}
  critic: {models: [critic-model]}
default_agent: writer
---

# %% One[^m1]
[^m1]: [markdown]

First message.

## %%%[^m1.1]
[^m1.1]: [writer]

First reply.

# %% Two[^m2]
[^m2]: [markdown]

Second message.

## %%%[^m2.1]
[^m2.1]: [writer]

Second reply.

# %% Three[^m3]
[^m3]: [markdown]

Third message.
"""


def test_the_agent_sees_the_notebook_on_screen_not_the_saved_file(
    page, lab_server, model
) -> None:
    """An unsaved exclusion, an unsaved edit of an earlier message and an unsaved agent choice
    all reach the model: the kernel lays the live state the labextension sends over the
    file. Nothing is saved until the user saves."""
    path = lab_server.root / "seen.msg.md"
    path.write_text(SEEN)
    notebook = open_notebook(page, lab_server, "seen.msg.md")
    wait_for_kernel(page)
    bar_of(notebook, "First message.").get_by_role("button", name="exclude").click()
    second = cell_with(notebook, "Second message.")
    second.locator(".cm-content").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" Edited.")
    bar_of(notebook, "Third message.").locator("select").select_option("critic")
    model.script("Noted.")
    run_cell(page, cell_with(notebook, "Third message."))
    body = model.chat_requests[-1].body
    assert body["model"].endswith("critic-model")
    sent = [m["content"] for m in body["messages"]]
    assert sent == ["Second message. Edited.", "Second reply.", "Third message."]
    assert path.read_text() == SEEN  # nothing saved behind the user's back
    save(page)
    text = path.read_text()
    assert '[^m1]: [markdown] history="exclude"' in text
    assert "Second message. Edited." in text and 'agent="critic"' in text


def test_after_a_kernel_restart_the_agent_still_sees_the_unsaved_replies_on_screen(
    page, lab_server, model
) -> None:
    """A reply the old kernel streamed in, not saved yet, is on screen after "Restart
    Kernel": the next message goes with it (the new kernel never made it, so the
    labextension sends it once), not as two user turns in a row."""
    (lab_server.root / "restart.msg.md").write_text(
        FRONT + "# %% A[^m1]\n[^m1]: [markdown]\n\nFirst message.\n\n"
        "# %% B[^m2]\n[^m2]: [markdown]\n\nSecond message.\n"
    )
    notebook = open_notebook(page, lab_server, "restart.msg.md")
    wait_for_kernel(page)
    model.script("First reply, on screen only.")
    run_cell(page, cell_with(notebook, "First message."))
    page.locator(".jp-NotebookPanel:visible [data-command='notebook:restart-kernel']").first.click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    page.wait_for_timeout(2000)
    wait_for_kernel(page)
    model.script("Second reply.")
    run_cell(page, cell_with(notebook, "Second message."))
    sent = [(m["role"], m["content"].strip()) for m in model.chat_requests[-1].messages]
    assert sent == [
        ("user", "First message."),
        ("assistant", "First reply, on screen only."),
        ("user", "Second message."),
    ]
    # Saved, the file holds it; the next restart has nothing more to send.
    save(page)
    model.script("Third reply.")
    page.locator(".jp-NotebookPanel:visible [data-command='notebook:restart-kernel']").first.click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    page.wait_for_timeout(2000)
    wait_for_kernel(page)
    second = cell_with(notebook, "Second message.")
    second.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    expect(second.locator(".jp-OutputArea")).to_contain_text("Third reply.", timeout=90_000)
    sent = [(m["role"], m["content"].strip()) for m in model.chat_requests[-1].messages]
    assert sent == [
        ("user", "First message."),
        ("assistant", "First reply, on screen only."),
        ("user", "Second message."),
    ]


def test_a_conversation_renamed_while_open_keeps_its_history_and_agents(
    page, lab_server, model
) -> None:
    """Renamed in the file browser while open, the notebook's next message went with no
    history and none of the file's agents: the kernel still read the old path."""
    (lab_server.root / "before.msg.md").write_text(
        "---\nagents:\n  critic:\n    models: [critic-model]\n---\n\n"
        "# %% Q[^m1]\n[^m1]: [markdown]\n\nSaved question.\n\n"
        "## %%%[^m1.1]\n[^m1.1]: [critic]\n\nSaved answer.\n\n"
        "# %% N[^m2]\n[^m2]: [markdown]\n\nNew question.\n"
    )
    notebook = open_notebook(page, lab_server, "before.msg.md")
    wait_for_kernel(page)
    item = page.locator(".jp-DirListing-item", has=page.locator('text="before.msg.md"'))
    item.first.click()
    page.keyboard.press("F2")
    page.keyboard.press("Control+a")
    page.keyboard.type("after.msg.md")
    page.keyboard.press("Enter")
    tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="after.msg.md")
    expect(tab).to_be_visible()
    model.script("Noted.")
    run_cell(page, cell_with(notebook, "New question."))
    body = model.chat_requests[-1].body
    assert body["model"].endswith("critic-model")
    sent = [m["content"] for m in body["messages"] if m["role"] != "system"]
    assert sent == ["Saved question.", "Saved answer.", "New question."]


def test_a_new_chat_saved_after_a_run_is_a_clean_file(page, lab_server, model) -> None:
    """Short ids as tce makes them (not JupyterLab's 36-character UUIDs), no execution_count
    on messages, no empty message for the cell JupyterLab adds below the one that ran."""
    model.script("Day one: the Forbidden City.")
    notebook = run_new_chat(page, lab_server, "Plan three days in Beijing.")
    expect(notebook.locator(".jp-CodeCell")).to_have_count(2)  # JupyterLab added one
    save(page)
    (path,) = lab_server.root.glob("*.msg.md")
    text = path.read_text()
    assert not re.search(r"\[\^[0-9a-f]{8}-[0-9a-f]{4}-", text), text  # no UUID ids
    assert "execution_count" not in text
    nb = fmt.read(path)
    messages = [c for c in nb["cells"] if fmt.cell_kind(c) == "message"]
    assert [fmt.message_text(c) for c in messages] == ["Plan three days in Beijing."]
    assert len(fmt.cell_id(messages[0])) == 8
    (reply,) = messages[0]["outputs"]
    assert fmt.output_text(reply) == "Day one: the Forbidden City."
    assert f"## %%%[^{fmt.cell_id(messages[0])}.1]" in text  # the reply's id follows


def test_history_auto_shows_which_cells_a_run_sent_and_pins_or_excludes_in_one_click(
    page, lab_server, model
) -> None:
    """A 100-message history: auto conversation: after a run each auto cell's bar says
    whether the request held it; one click pins (include) or excludes a cell."""
    from jupyter_percent_agent.testing.long_conversations import conversation

    conv = conversation(13, 100)
    path = lab_server.root / "auto.msg.md"
    path.write_text(conv.text + f"## %% Question[^qz]\n\n[^qz]: [markdown]\n\n{conv.question}\n")
    notebook = open_notebook(page, lab_server, "auto.msg.md")
    wait_for_kernel(page)
    nb = fmt.read(path)
    text_of = {fmt.cell_id(c): fmt.message_text(c) for c in nb["cells"]}
    needed = bar_of(notebook, text_of[conv.needed[0]])
    expect(needed.locator("button[aria-pressed=true]")).to_have_text("auto")
    expect(needed.locator(".jp-PercentAgent-autoSent")).to_be_hidden()  # no run yet
    model.script("ok")
    run_cell(page, cell_with(notebook, conv.question))
    sent = "\n".join(str(m["content"]) for m in model.requests[-1].messages)
    assert len(sent) < 0.6 * len(conv.text)  # bounded
    for cid in conv.needed:
        assert text_of[cid] in sent
        bar = bar_of(notebook, text_of[cid])
        expect(bar.locator(".jp-PercentAgent-autoSent")).to_have_text("sent")
    left_out = notebook.locator(".jp-PercentAgent-cellBar[data-sent='false']")
    expect(left_out.first).to_be_attached()
    assert left_out.count() > 30
    # one click: pin a cell the run left out, exclude one it sent
    texts = list(text_of.values())
    unsent = next(cid for cid, t in text_of.items() if cid.startswith("m") and t not in sent
                  and texts.count(t) == 1)
    pinned_bar = bar_of(notebook, text_of[unsent])
    expect(pinned_bar.locator(".jp-PercentAgent-autoSent")).to_have_text("not sent")
    pinned_bar.get_by_role("button", name="include").click()
    expect(pinned_bar.locator("button[aria-pressed=true]")).to_have_text("include")
    needed.get_by_role("button", name="exclude").click()
    expect(needed.locator("button[aria-pressed=true]")).to_have_text("exclude")
    save(page)
    saved = fmt.read(path)
    modes = {fmt.cell_id(c): (c.get("metadata") or {}).get("history") for c in saved["cells"]}
    assert modes[conv.needed[0]] == "exclude" and modes[unsent] == "include"
    assert list(modes.values()).count("include") == 1  # the one pinned; auto cells set none
