"""Tool calls and tool results in a real JupyterLab and Chromium.

The format core writes them as ``text/plain`` outputs marked ``percent_agent.type ==
"tool"``; the labextension shows them as collapsible blocks: "tool call: NAME" over the
code as Python, "result · STATUS · DURATION" over the text, a failed result open and
marked. Every other ``text/plain`` output (a stream, an ``execute_result``) still renders as
JupyterLab's ordinary text.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.paths import TEST_DATA

from .labpage import cell_with, open_notebook

pytestmark = pytest.mark.slow

DATA = TEST_DATA / "browser" / "tool_outputs.msg.md"
NAME = "tool_outputs.msg.md"


def _open_notebook(page, lab_server):
    (lab_server.root / NAME).write_text(DATA.read_text())
    return open_notebook(page, lab_server, NAME)


def test_tool_call_and_result_render_as_collapsible_blocks(page, lab_server) -> None:
    notebook = _open_notebook(page, lab_server)
    cell = cell_with(notebook, "How many lines has the report?")
    outputs = cell.locator(".jp-OutputArea")
    # The replies around the tool use still render as the agent's Markdown.
    expect(outputs.locator(".jp-PercentAgent-replyHeader").first).to_contain_text("counter")
    expect(outputs.locator("strong", has_text="12000 lines")).to_be_visible()

    # The call: a collapsed block named after the tool; opened, the code as Python.
    call = outputs.locator("details.jp-PercentAgent-toolCall")
    expect(call).to_have_count(1)
    expect(call.locator("summary")).to_have_text("tool call: count_lines")
    renderer = outputs.locator(".jp-OutputArea-output:has(> details.jp-PercentAgent-toolCall)")
    expect(renderer).to_have_attribute("data-agent-kind", "tool_call")
    expect(renderer).not_to_have_class(re.compile(r"\bjp-RenderedText\b"))
    code = call.locator("pre")
    expect(code).to_be_hidden()
    call.locator("summary").click()
    expect(code).to_be_visible()
    expect(code).to_have_text('__result__ = count_lines("report.txt")')
    # A Python code block, highlighted by JupyterLab's Markdown parser.
    expect(call.locator("code")).to_have_class(re.compile(r"\blanguage-python\b"))

    # The result: status and duration in its summary, the text inside, not marked failed.
    result = outputs.locator("details.jp-PercentAgent-toolResult")
    expect(result).to_have_count(1)
    expect(result).to_have_attribute("data-status", "success")
    expect(result).not_to_have_class(re.compile(r"\bjp-mod-failed\b"))
    expect(result.locator("summary")).to_have_text("result · success · 0.25s")
    text = result.locator("pre")
    expect(text).to_be_hidden()
    result.locator("summary").click()
    expect(text).to_be_visible()
    expect(text).to_have_text('{"lines": 12000}')
    page.screenshot(path=str(lab_server.root.parent / "tool_outputs.png"))


def test_a_failed_result_is_open_and_marked(page, lab_server) -> None:
    notebook = _open_notebook(page, lab_server)
    cell = cell_with(notebook, "And the appendix?")
    result = cell.locator("details.jp-PercentAgent-toolResult")
    expect(result).to_have_attribute("data-status", "fail")
    expect(result).to_have_class(re.compile(r"\bjp-mod-failed\b"))
    expect(result.locator("summary")).to_have_text("result · fail · 0.01s")
    # Open without a click, so the error is seen at once; its summary is in the error colour.
    expect(result.locator("pre")).to_be_visible()
    expect(result.locator("pre")).to_have_text("FileNotFoundError: appendix.txt")
    failed = result.locator("summary").evaluate("node => getComputedStyle(node).color")
    plain = cell.locator("details.jp-PercentAgent-toolCall > summary").evaluate(
        "node => getComputedStyle(node).color"
    )
    assert failed != plain


def test_other_plain_text_outputs_render_as_ordinary_text(page, lab_server) -> None:
    notebook = _open_notebook(page, lab_server)
    cell = cell_with(notebook, "plain stdout line")
    outputs = cell.locator(".jp-OutputArea")
    stdout = outputs.locator(
        '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stdout"]'
    )
    expect(stdout).to_have_class(re.compile(r"\bjp-RenderedText\b"))
    expect(stdout.locator("pre")).to_have_text("plain stdout line")
    # An execute_result is `text/plain` too, with no agent metadata: JupyterLab's own text.
    result = outputs.locator('.jp-OutputArea-output[data-mime-type="text/plain"]')
    expect(result).to_have_class(re.compile(r"\bjp-RenderedText\b"))
    expect(result.locator("pre")).to_have_text("42")
    expect(outputs.locator(".jp-PercentAgent-output")).to_have_count(0)
    expect(outputs.locator("details")).to_have_count(0)


def test_a_stopped_or_cut_off_reply_says_so_in_its_header(page, lab_server) -> None:
    notebook = _open_notebook(page, lab_server)
    stopped = cell_with(notebook, "Tell me a long story.").locator(".jp-PercentAgent-replyHeader")
    expect(stopped).to_have_text("counter · gpt-4o-mini · stopped")
    expect(stopped).to_have_class(re.compile(r"\bjp-mod-cut\b"))
    cut = cell_with(notebook, "Are you there?").locator(".jp-PercentAgent-replyHeader")
    expect(cut).to_have_text("counter · gpt-4o-mini · incomplete: the connection was lost")
    whole = (
        cell_with(notebook, "How many lines has the report?")
        .locator(".jp-PercentAgent-replyHeader")
        .first
    )
    expect(whole).to_have_text("counter · gpt-4o-mini")
    expect(whole).not_to_have_class(re.compile(r"\bjp-mod-cut\b"))


def test_a_code_block_in_a_reply_has_jupyterlabs_markdown_margins(page, lab_server) -> None:
    notebook = _open_notebook(page, lab_server)
    block = cell_with(notebook, "Tell me a long story.").locator(".jp-PercentAgent-replyBody > pre")
    expect(block).to_have_css("margin-left", re.compile(r"^[1-9]"))
    expect(block).to_have_css("margin-top", re.compile(r"^[1-9]"))


def test_an_image_a_tool_returned_shows_under_its_result(page, lab_server) -> None:
    """An MCP tool's image is an output of the call's record (``[tool] mime_type=
    ["image/png","text/plain"]``): JupyterLab shows the picture under the result's block,
    not its text stand-in."""
    name = "tool_image.msg.md"
    (lab_server.root / name).write_text((DATA.parent / name).read_text())
    notebook = open_notebook(page, lab_server, name)
    cell = cell_with(notebook, "Take a picture of the whiteboard.")
    outputs = cell.locator(".jp-OutputArea")
    expect(outputs.locator("details.jp-PercentAgent-toolResult")).to_have_count(1)
    image = outputs.locator('.jp-OutputArea-output[data-mime-type="image/png"] img')
    expect(image).to_have_count(1)
    expect(image).to_be_visible()
    expect(image).to_have_attribute("src", re.compile(r"^data:image/png;base64,iVBOR"))
    assert image.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [40, 20]
    expect(outputs).not_to_contain_text("[image 1: image/png")
    # in order: the call, its result, its image, then the answer
    order = outputs.locator(".jp-OutputArea-output").evaluate_all(
        "nodes => nodes.map(n => n.dataset.agentKind || n.dataset.mimeType)"
    )
    assert order[1:4] == ["tool_call", "tool_result", "image/png"], order
    page.screenshot(path=str(lab_server.root.parent / "tool_image.png"))


def test_a_display_tag_quoted_in_inline_code_stays_text(page, lab_server) -> None:
    """A reply explaining the Jarvis convention inline (`<text>{...}</text>` in backticks)
    was cut in two around an empty media block, the quoted tag lost; quoted in a fenced block
    it was already kept."""
    (lab_server.root / "quoted.msg.md").write_text(
        "# %% Q[^q1]\n[^q1]: [markdown]\n\nHow do I show text?\n\n"
        "## %%%[^q1.1]\n[^q1.1]: [writer]\n\n"
        'Write `<text>{"content": "hi"}</text>` in your reply, and it shows as text.\n'
    )
    notebook = open_notebook(page, lab_server, "quoted.msg.md")
    body = cell_with(notebook, "How do I show text?").locator(".jp-PercentAgent-replyBody")
    expect(body.locator("code")).to_have_text('<text>{"content": "hi"}</text>')
    expect(body).to_contain_text("in your reply, and it shows as text.")
    expect(body.locator("figure")).to_have_count(0)
