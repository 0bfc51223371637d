"""``[code]`` cells in a real JupyterLab and Chromium: in a trusted folder, Shift+Enter runs
one in a real ``python3`` kernel (matplotlib's plot shows under the cell), and the next
message is sent with that plot as an image part to a vision model (the local model server)."""

from __future__ import annotations

import re
import shutil

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.openai_server import Reply
from tests.paths import TEST_DATA

from .labpage import (
    KERNEL_IDLE,
    MODEL_DIRTY,
    cell_with,
    open_notebook,
    run_cell,
    save,
    wait_for_kernel,
)

pytestmark = pytest.mark.slow

DATA = TEST_DATA
PROPOSED_MARK = """() => Array.from(window.jupyterapp.shell.currentWidget.model.cells)
    .find(cell => cell.sharedModel.getSource().includes('csv.DictReader'))
    .getMetadata('proposed') ?? null"""

PLOT = (
    "---\nagents:\n  seer:\n    models: [test-model]\n    vision: true\n---\n\n"
    "# %% Plot[^p1]\n[^p1]: [code]\n\n```python\n"
    "import matplotlib.pyplot as plt\n"
    "values = [1, 4, 9, 16]\n"
    "plt.plot(values)\n"
    "plt.title('squares')\n"
    "plt.show()\n"
    "print('plotted', len(values))\n"
    "```\n\n"
    "# %% Ask[^q1]\n[^q1]: [markdown]\n\nWhat does the plot show?\n"
)


@pytest.fixture
def trusted_root(lab_server):
    """The lab's root, trusted in the server's user config for this test only."""
    config = lab_server.user_config
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'trusted = ["{lab_server.root.resolve()}"]\n')
    (lab_server.root / "plot.msg.md").write_text(PLOT)
    yield lab_server.root
    (config / "config.toml").unlink(missing_ok=True)


def test_a_matplotlib_plot_shows_and_goes_to_a_vision_model(
    page, lab_server, model, trusted_root
) -> None:
    notebook = open_notebook(page, lab_server, "plot.msg.md")
    wait_for_kernel(page)
    code = cell_with(notebook, "plt.plot(values)")
    run_cell(page, code)
    outputs = code.locator(".jp-OutputArea")
    expect(outputs).to_contain_text("plotted 4")
    image = outputs.locator("img")
    expect(image).to_be_visible(timeout=60_000)
    width = image.evaluate("img => img.naturalWidth")
    assert width > 100  # a real figure, rendered from its PNG
    assert not model.chat_requests  # running code calls no model

    model.script("A line rising ever faster: the squares 1, 4, 9, 16.")
    ask = cell_with(notebook, "What does the plot show?")
    run_cell(page, ask)
    expect(ask.locator(".jp-OutputArea")).to_contain_text("rising ever faster", timeout=60_000)
    (request,) = model.chat_requests
    parts = [p for m in request.messages if isinstance(m["content"], list) for p in m["content"]]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert "plotted 4" in parts[0]["text"] and "not instructions" in parts[0]["text"]
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    page.screenshot(path=str(lab_server.root.parent / "code_cells.png"))
    # saved by JupyterLab: the plot and the print in the format's terms
    save(page)
    text = (trusted_root / "plot.msg.md").read_text()
    assert "stdout> plotted 4" in text
    assert '"image/png"' in text or 'mime_type="image/png"' in text


HTML_FILE = (
    "# %% Table[^h1]\n[^h1]: [code]\n\n```python\n"
    "from IPython.display import HTML, display\n"
    "display(HTML('<b>bold</b><img src=x onerror=\"(window.__paHits=window.__paHits||[])"
    ".push(1)\"><script>(window.__paHits=window.__paHits||[]).push(2)</script>'))\n"
    "```\n"
)


def test_html_from_a_code_kernel_is_sanitized(page, lab_server, model, trusted_root) -> None:
    (trusted_root / "html.msg.md").write_text(HTML_FILE)
    notebook = open_notebook(page, lab_server, "html.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "display(HTML(")
    run_cell(page, cell)
    expect(cell.locator(".jp-OutputArea b")).to_have_text("bold")
    page.wait_for_timeout(1000)
    assert page.evaluate("() => window.__paHits || []") == []
    assert cell.locator(".jp-OutputArea script").count() == 0


PROPOSE = (DATA / "code" / "propose_answer.toml").read_text()
CHAT = (
    "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [weather]\n---\n\n"
    "# %% Ask[^w1]\n[^w1]: [markdown]\n\nChart my weather file.\n"
)


def test_proposed_code_appears_under_the_reply_and_runs_only_when_the_user_runs_it(
    page, lab_server, model, trusted_root
) -> None:
    (trusted_root / "toolbox").mkdir(exist_ok=True)
    shutil.copy(DATA / "toolbox" / "weather.py", trusted_root / "toolbox" / "weather.py")
    (trusted_root / "weather.csv").write_text("city,t\nParis,18.5\nOslo,4\n")
    (trusted_root / "propose.msg.md").write_text(CHAT)
    notebook = open_notebook(page, lab_server, "propose.msg.md")
    wait_for_kernel(page)
    model.script(PROPOSE)
    ask = cell_with(notebook, "Chart my weather file.")
    run_cell(page, ask)
    expect(ask.locator(".jp-OutputArea")).to_contain_text("run it when you are ready")
    proposal = notebook.locator(".jp-CodeCell").nth(1)
    expect(proposal).to_contain_text("csv.DictReader", timeout=30_000)
    expect(proposal.locator(".jp-OutputArea-output")).to_have_count(0)  # not run
    assert page.evaluate(PROPOSED_MARK) is True
    # the user runs it before saving: the kernel learns from the live state it is [code]
    run_cell(page, proposal)
    expect(proposal.locator(".jp-OutputArea")).to_contain_text("2 rows")
    assert page.evaluate(PROPOSED_MARK) is None
    assert len(model.chat_requests) == 1  # the code went to the kernel, not the model
    save(page)
    saved = (trusted_root / "propose.msg.md").read_text()
    assert "csv.DictReader" in saved and "stdout> 2 rows" in saved
    (kept,) = [
        c
        for c in fmt.read(trusted_root / "propose.msg.md")["cells"]
        if "csv.DictReader" in fmt.message_text(c)
    ]
    assert fmt.cell_kind(kept) == "code"
    assert "proposed=true" not in (trusted_root / "propose.msg.md").read_text()


def test_a_message_typed_in_jupyterlab_gets_its_proposal_under_it_too(
    page, lab_server, model, trusted_root
) -> None:
    """A message the user adds in JupyterLab has a UUID id there; its proposal used to be
    dropped (the kernel named the message by the short id the file will give it)."""
    (trusted_root / "toolbox").mkdir(exist_ok=True)
    shutil.copy(DATA / "toolbox" / "weather.py", trusted_root / "toolbox" / "weather.py")
    (trusted_root / "propose.msg.md").write_text(CHAT)
    notebook = open_notebook(page, lab_server, "propose.msg.md")
    wait_for_kernel(page)
    model.script(PROPOSE)
    last = notebook.locator(".jp-CodeCell").last
    last.locator(".cm-content").click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new message below, as a user adds one
    page.keyboard.press("Enter")
    page.keyboard.type("Now chart it for me.")
    ask = cell_with(notebook, "Now chart it for me.")
    run_cell(page, ask)
    expect(ask.locator(".jp-OutputArea")).to_contain_text("run it when you are ready")
    cells = notebook.locator(".jp-CodeCell")
    index = next(i for i in range(cells.count()) if "Now chart it" in cells.nth(i).inner_text())
    expect(cells.nth(index + 1)).to_contain_text("csv.DictReader", timeout=30_000)
    assert page.evaluate(PROPOSED_MARK) is True


def test_code_cells_are_highlighted_as_their_language(page, lab_server, model, trusted_root):
    (trusted_root / "langs.msg.md").write_text(
        "# %% Py[^a]\n[^a]: [code]\n\n```python\nimport os\n```\n\n"
        "# %% Sh[^b]\n[^b]: [code]\n\n```bash\nls -l\n```\n\n"
        "# %% Ask[^c]\n[^c]: [markdown]\n\nA message.\n"
    )
    notebook = open_notebook(page, lab_server, "langs.msg.md")
    wait_for_kernel(page)
    mimes = page.evaluate(
        "() => Array.from(window.jupyterapp.shell.currentWidget.model.cells)"
        ".map(cell => cell.mimeType)"
    )
    assert mimes == ["text/x-ipython", "text/x-sh", "text/x-markdown"], mimes
    content = cell_with(notebook, "import os").locator(".cm-content")
    expect(content).to_have_attribute("data-language", "python")
    expect(content.locator("span", has_text="import")).to_have_count(1)  # a Python token


def test_with_auto_run_in_the_users_config_the_proposal_runs_by_itself(
    page, lab_server, model, trusted_root
) -> None:
    (trusted_root / "toolbox").mkdir(exist_ok=True)
    shutil.copy(DATA / "toolbox" / "weather.py", trusted_root / "toolbox" / "weather.py")
    (trusted_root / "weather.csv").write_text("city,t\nParis,18.5\nOslo,4\n")
    (trusted_root / "auto.msg.md").write_text(CHAT)
    config = lab_server.user_config / "config.toml"
    config.write_text(config.read_text() + f'auto_run = ["{trusted_root.resolve()}"]\n')
    notebook = open_notebook(page, lab_server, "auto.msg.md")
    wait_for_kernel(page)
    model.script(PROPOSE)
    run_cell(page, cell_with(notebook, "Chart my weather file."))
    proposal = notebook.locator(".jp-CodeCell").nth(1)
    expect(proposal).to_contain_text("csv.DictReader", timeout=30_000)
    expect(proposal.locator(".jp-OutputArea")).to_contain_text("2 rows", timeout=60_000)
    assert page.evaluate(PROPOSED_MARK) is None


# Cells the user works on while a reply streams in: one above the question (deleted
# meanwhile) and two below it (selected meanwhile).
MOVING = (
    "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [weather]\n---\n\n"
    "# %% Aside[^m0]\n[^m0]: [markdown]\n\nAn aside deleted while the reply streams.\n\n"
    "# %% Ask[^w1]\n[^w1]: [markdown]\n\nChart my weather file.\n\n"
    "# %% Next[^m1]\n[^m1]: [markdown]\n\nA later message, selected meanwhile.\n\n"
    "# %% Last[^m2]\n[^m2]: [markdown]\n\nThe last message, selected too.\n"
)
# While the reply streams: a cell inserted at the top, the aside above the question
# deleted (every index below moves), and the two later messages selected, the last active.
EDIT_WHILE_STREAMING = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const shared = panel.model.sharedModel;
    const index = text => Array.from(panel.model.cells)
        .findIndex(cell => cell.sharedModel.getSource().includes(text));
    shared.insertCell(1, {cell_type: 'markdown', source: 'A note added meanwhile.'});
    shared.deleteCell(index('An aside deleted'));
    const notebook = panel.content;
    notebook.mode = 'command';
    notebook.activeCellIndex = index('A later message');
    notebook.extendContiguousSelectionTo(index('The last message'));
    return notebook.activeCellIndex;
}"""
ACTIVE_CELL_SOURCE = """() => window.jupyterapp.shell.currentWidget.content.activeCell
    .model.sharedModel.getSource()"""


def test_auto_run_runs_the_proposal_meant_while_the_user_moves_and_selects_cells(
    page, lab_server, model, trusted_root
) -> None:
    """The proposal runs, and only it: cells inserted and deleted above it while the reply
    streamed do not make another cell run in its place, and the cells the user selected
    meanwhile neither run nor lose their selection."""
    (trusted_root / "toolbox").mkdir(exist_ok=True)
    shutil.copy(DATA / "toolbox" / "weather.py", trusted_root / "toolbox" / "weather.py")
    (trusted_root / "weather.csv").write_text("city,t\nParis,18.5\nOslo,4\n")
    (trusted_root / "moving.msg.md").write_text(MOVING)
    config = lab_server.user_config / "config.toml"
    config.write_text(config.read_text() + f'auto_run = ["{trusted_root.resolve()}"]\n')
    notebook = open_notebook(page, lab_server, "moving.msg.md")
    wait_for_kernel(page)
    # about 25 chunks 0.2 s apart: five seconds of streaming to work in
    model.script(Reply(PROPOSE, chunk_size=20, chunk_delay=0.2))
    ask = cell_with(notebook, "Chart my weather file.")
    ask.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    expect(ask.locator(".jp-OutputArea")).to_contain_text("weather", timeout=60_000)
    expect(ask.locator(".jp-InputPrompt").first).to_have_text("[*]:")
    page.evaluate(EDIT_WHILE_STREAMING)
    expect(ask.locator(".jp-InputPrompt").first).not_to_have_text("[*]:", timeout=60_000)
    proposal = notebook.locator(".jp-CodeCell", has=page.get_by_text("csv.DictReader"))
    expect(proposal.locator(".jp-OutputArea")).to_contain_text("2 rows", timeout=60_000)
    sources = page.evaluate(
        "() => Array.from(window.jupyterapp.shell.currentWidget.model.cells)"
        ".map(cell => cell.sharedModel.getSource())"
    )
    asked = next(i for i, s in enumerate(sources) if "Chart my weather" in s)
    assert "csv.DictReader" in sources[asked + 1]  # under the question, where it belongs
    assert not any("An aside deleted" in s for s in sources)
    for text in ("A later message", "The last message"):
        expect(cell_with(notebook, text).locator(".jp-OutputArea-output")).to_have_count(0)
    assert len(model.chat_requests) == 1  # only the question went to the model
    assert "The last message" in page.evaluate(ACTIVE_CELL_SOURCE)


ASKING = (
    "# %% Ask me[^i1]\n[^i1]: [code]\n\n```python\nimport getpass\n"
    "name = input('Your name? ')\ntoken = getpass.getpass('Token? ')\n"
    "print('hello', name, len(token))\n```\n"
)


def test_input_and_getpass_ask_in_jupyterlab_and_the_password_is_not_shown(
    page, lab_server, trusted_root
) -> None:
    (trusted_root / "asking.msg.md").write_text(ASKING)
    notebook = open_notebook(page, lab_server, "asking.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "getpass.getpass")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    box = cell.locator(".jp-Stdin-input")
    expect(box).to_be_visible(timeout=60_000)
    expect(cell.locator(".jp-Stdin-prompt")).to_have_text("Your name? ")
    assert box.get_attribute("type") != "password"
    box.fill("Ada")
    box.press("Enter")
    # the answered box stays a moment, with what was typed; the new one comes after it
    expect(cell.locator(".jp-Stdin-prompt").last).to_have_text("Token? ", timeout=30_000)
    box = cell.locator(".jp-Stdin-input").last
    assert box.get_attribute("type") == "password"  # getpass: the box does not echo
    box.fill("hunter2")
    box.press("Enter")
    outputs = cell.locator(".jp-OutputArea")
    expect(outputs).to_contain_text("hello Ada 7", timeout=60_000)
    expect(outputs).not_to_contain_text("hunter2")
    expect(cell.locator(".jp-InputPrompt").first).to_have_text(re.compile(r"^\[\d+\]:$"))
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)  # the run is over: nothing changes
    # focus may still be in the answered box, where Ctrl+S is the box's: File > Save
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(f"() => !({MODEL_DIRTY.removeprefix('() => ')})")
    text = (trusted_root / "asking.msg.md").read_text()
    assert "stdout> hello Ada 7" in text and "hunter2" not in text
