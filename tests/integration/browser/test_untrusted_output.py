"""Model output is never trusted in JupyterLab: a reply, an agent's step, a tool call and its
result that carry HTML attacks run nothing, live and after save + reopen, whatever the cell's
trust flag says; Jarvis display tags take safe URLs only; remote media waits for a click.

Every payload, if it ran, would record itself in `window.__paHits` and fetch
`BEACON/xss/NAME.png` from the local logging server; the tests assert that neither happened.
A real JupyterLab in Chromium, the real agent kernel, the local model server.
"""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent.attp import FinalAnswer, ToolCall, format_reply

from .labpage import FRONT, PNG, cell_with, open_notebook, run_cell, save, wait_for, wait_for_kernel

pytestmark = pytest.mark.slow

HITS = "() => window.__paHits || []"
DIALOGS = ".jp-Dialog"
ANY_CELL_TRUSTED = """() => Array.from(window.jupyterapp.shell.currentWidget.model.cells)
    .some(cell => cell.trusted || cell.getMetadata('trusted') !== undefined)"""


def hit(beacon, name: str) -> str:
    """JavaScript that records that payload `name` ran (no double quotes in it)."""
    return (
        f"(window.__paHits=window.__paHits||[]).push('{name}');"
        f"(new Image).src='{beacon.url}/xss/{name}.png'"
    )


def attacks(beacon, tag: str) -> str:
    """Markdown whose every HTML trick would run `hit` (named `TAG-trick`) if rendered trusted."""
    b = beacon.url
    return f"""Here is what I found.

<script>{hit(beacon, tag + "-script")}</script>

<img src=x onerror="{hit(beacon, tag + "-img")}">

<svg onload="{hit(beacon, tag + "-svg")}"><circle r="5"/></svg>

<details open ontoggle="{hit(beacon, tag + "-details")}"><summary>more</summary>hidden</details>

<iframe srcdoc="<img src={b}/xss/{tag}-srcdoc.png>"></iframe>

<iframe src="{b}/xss/{tag}-iframe.png"></iframe>

<a href="javascript:{hit(beacon, tag + "-link")}">PA-JS-LINK-{tag}</a>

<form action="{b}/xss/{tag}-form"><button type="submit">PA-FORM-{tag}</button></form>

<meta http-equiv="refresh" content="0;url={b}/xss/{tag}-meta">

<button data-commandlinker-command="help:about">PA-COMMAND-{tag}</button>

<div style="background-image: url({b}/xss/{tag}-css.png)">PA-CSS-{tag}</div>

$\\href{{javascript:{hit(beacon, tag + "-math")}}}{{\\text{{PA-MATH-{tag}}}}}$

<img>{{"url": "javascript:{hit(beacon, tag + "-jarvis-img")}"}}</img>

<video>{{"url": "javascript:{hit(beacon, tag + "-jarvis-video")}"}}</video>

<img>{{"url": "data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>"}}</img>

<img>{{"url": "data:text/html,<script>alert(1)</script>"}}</img>

<download>{{"type": "PA-DL-{tag}", "url": "javascript:{hit(beacon, tag + "-download")}"}}</download>
"""


def message(cell_id: str, text: str, agent: str | None = None) -> str:
    attrs = f' agent="{agent}"' if agent else ""
    return f"# %% {cell_id}[^{cell_id}]\n[^{cell_id}]: [markdown]{attrs}\n\n{text}\n\n"


def assert_nothing_ran(page, beacon) -> None:
    ran = page.evaluate(HITS)
    assert ran == [], f"payloads ran in the page: {ran}"
    reached = beacon.seen("/xss/")
    assert reached == [], f"payloads reached the network: {reached}"


def click_every_lure(page, output, beacon, tag: str) -> None:
    """Click what a user might click in the reply: the links, the form button, the command."""
    lures = [f"PA-JS-LINK-{tag}", f"PA-FORM-{tag}", f"PA-COMMAND-{tag}"]
    page.evaluate("() => { window.__paSamePage = true; }")
    for text in lures:
        target = output.get_by_text(text, exact=True)
        expect(target.first).to_be_visible()
        target.first.click()
    page.wait_for_timeout(1000)
    # A form's submission would have loaded another page (or this one again).
    assert page.evaluate("() => window.__paSamePage === true"), "the page navigated"
    expect(page.locator(DIALOGS)).to_have_count(0)  # no command ran (help:about is a dialog)
    assert_nothing_ran(page, beacon)


def open_every_block(output) -> None:
    """Open every collapsed block, so that anything hidden in them is rendered and shown."""
    closed = output.locator("details:not([open]) > summary")
    for _ in range(20):
        if not closed.count():
            return
        closed.first.click()
    raise AssertionError("blocks that do not open")


def assert_jarvis_urls_refused(output, tag: str) -> None:
    refused = output.locator(".jp-PercentAgent-refused")
    # javascript: in <img>, <video> and <download>, the SVG and the HTML data URLs
    expect(refused).to_have_count(5)
    expect(refused.first).to_contain_text("refused")
    for bad in ("javascript:", "data:image/svg", "data:text/html"):
        expect(output.locator(f'[src^="{bad}"], [href^="{bad}"]')).to_have_count(0)


def test_a_live_reply_full_of_html_attacks_runs_nothing_live_or_reopened(
    page, lab_server, model, beacon
) -> None:
    (lab_server.root / "attacks.msg.md").write_text(FRONT + message("q1", "Show me the report."))
    model.script(attacks(beacon, "reply"))
    notebook = open_notebook(page, lab_server, "attacks.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "Show me the report.")
    run_cell(page, cell)
    output = cell.locator(".jp-OutputArea")
    output.get_by_text("Here is what I found.").wait_for()
    page.wait_for_timeout(1000)
    assert_nothing_ran(page, beacon)
    assert_jarvis_urls_refused(output, "reply")
    click_every_lure(page, output, beacon, "reply")
    # JupyterLab trusts a cell the user runs; a message notebook's cells stay untrusted.
    assert page.evaluate(ANY_CELL_TRUSTED) is False

    save(page)
    saved = (lab_server.root / "attacks.msg.md").read_text()
    assert "PA-JS-LINK-reply" in saved  # the reply is in the file, unchanged
    notebook = open_notebook(page, lab_server, "attacks.msg.md")
    output = cell_with(notebook, "Show me the report.").locator(".jp-OutputArea")
    output.get_by_text("Here is what I found.").wait_for()
    page.wait_for_timeout(1000)
    assert_nothing_ran(page, beacon)
    assert_jarvis_urls_refused(output, "reply")
    click_every_lure(page, output, beacon, "reply")


def test_an_agents_steps_tool_calls_and_results_carrying_attacks_run_nothing(
    page, lab_server, model, beacon
) -> None:
    (lab_server.root / "tools.msg.md").write_text(FRONT + message("t1", "Use the tools.", "helper"))
    payload = f'<img src=x onerror="{hit(beacon, "result")}">'
    printing = ToolCall(
        thought=f'Looking. <img src=x onerror="{hit(beacon, "thought")}">',
        target=f'<img src=x onerror="{hit(beacon, "target")}">',
        code=f"print({json.dumps(payload)})\n__result__ = {json.dumps(payload)}\n",
    )
    # Code that closes the code block it is shown in, then writes HTML.
    breaking_out = ToolCall(
        thought="Again.",
        target="break out",
        code=f'```\n```\n<img src=x onerror="{hit(beacon, "toolcall")}">\n',
    )
    answer = FinalAnswer(thought="Done.", answer=attacks(beacon, "answer"))
    model.script(format_reply(printing), format_reply(breaking_out), format_reply(answer))
    notebook = open_notebook(page, lab_server, "tools.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "Use the tools.")
    run_cell(page, cell)
    output = cell.locator(".jp-OutputArea")
    output.get_by_text("Here is what I found.").wait_for()
    expect(output.locator("details.jp-PercentAgent-toolCall")).to_have_count(2)
    expect(output.locator("details.jp-PercentAgent-toolResult")).to_have_count(2)
    open_every_block(output)
    page.wait_for_timeout(1000)
    assert_nothing_ran(page, beacon)
    click_every_lure(page, output, beacon, "answer")

    save(page)
    notebook = open_notebook(page, lab_server, "tools.msg.md")
    output = cell_with(notebook, "Use the tools.").locator(".jp-OutputArea")
    output.get_by_text("Here is what I found.").wait_for()
    open_every_block(output)
    page.wait_for_timeout(1000)
    assert_nothing_ran(page, beacon)


SAVED_HTML = """# %% Saved[^s1]
[^s1]: [code] execution_count=1

```python
print(1)
```

## %%%[^s1.1]
[^s1.1]: [python] mime_type="text/html"

<img src=x onerror="{hit}"><b>PA-SAVED-HTML</b>

"""


def test_trusting_the_notebook_does_not_trust_model_output(page, lab_server, beacon) -> None:
    """A saved reply and an HTML output stay sanitized after Jupyter's "Trust Notebook"."""
    text = FRONT + message("q1", "Show me the report.")
    text += '## %%%[^q1.1]\n[^q1.1]: [writer] model="test-model"\n\n'
    text += attacks(beacon, "saved") + "\n"
    text += SAVED_HTML.format(hit=hit(beacon, "saved-html"))
    (lab_server.root / "saved.msg.md").write_text(text)
    notebook = open_notebook(page, lab_server, "saved.msg.md")
    output = cell_with(notebook, "Show me the report.").locator(".jp-OutputArea")
    output.get_by_text("Here is what I found.").wait_for()
    # Not awaited: the command resolves once its dialog is answered, below.
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:trust'); }")
    dialog = page.locator(DIALOGS)
    dialog.get_by_role("button", name=re.compile("Trust", re.I)).click()
    expect(dialog).to_have_count(0)
    notebook.get_by_text("PA-SAVED-HTML").wait_for()
    page.wait_for_timeout(1500)
    assert page.evaluate(ANY_CELL_TRUSTED) is False
    assert_nothing_ran(page, beacon)
    assert_jarvis_urls_refused(output, "saved")
    click_every_lure(page, output, beacon, "saved")


def remote_media(beacon) -> str:
    b = beacon.url
    return f"""Pictures:

![PA-REMOTE-MD]({b}/remote/md.png)

<img src="{b}/remote/html.png" alt="PA-REMOTE-HTML">

<img>{{"url": "{b}/remote/jarvis.png", "type": "PA-REMOTE-JARVIS"}}</img>

<video>{{"type": "PA-REMOTE-VIDEO", "url": "{b}/remote/video.mp4"}}</video>

<img>{{"url": "data:image/png;base64,{base64.b64encode(PNG).decode()}", "type": "PA-DATA"}}</img>

![PA-LOCAL](local.png)
"""


def test_remote_media_loads_only_after_a_click_on_a_placeholder_naming_its_host(
    page, lab_server, model, beacon
) -> None:
    host = beacon.url.removeprefix("http://")
    (lab_server.root / "local.png").write_bytes(PNG)
    (lab_server.root / "media.msg.md").write_text(FRONT + message("m1", "Show the pictures."))
    model.script(remote_media(beacon))
    notebook = open_notebook(page, lab_server, "media.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "Show the pictures.")
    run_cell(page, cell)
    output = cell.locator(".jp-OutputArea")
    output.get_by_text("Pictures:").wait_for()
    placeholders = output.locator(".jp-PercentAgent-remoteMedia")
    expect(placeholders).to_have_count(4)
    for i in range(4):
        expect(placeholders.nth(i)).to_contain_text(host)
    # Local media load at once: a relative path (the Jupyter server) and a data: PNG.
    expect(output.locator('img[alt="PA-LOCAL"]')).to_have_count(1)
    wait_for(
        lambda: output.locator('img[alt="PA-LOCAL"]').evaluate("i => i.naturalWidth") == 1,
        what="the local image",
    )
    expect(output.locator('img[src^="data:image/png"]')).to_have_count(1)
    page.wait_for_timeout(1500)
    assert beacon.seen("/remote/") == [], "remote media loaded without a click"

    # One click loads that one image, and only it.
    placeholders.first.get_by_role("button").click()
    wait_for(lambda: beacon.seen("/remote/") == ["/remote/md.png"], what="the clicked image")
    expect(output.locator(f'img[src="{beacon.url}/remote/md.png"]')).to_have_count(1)
    expect(placeholders).to_have_count(3)
    page.wait_for_timeout(1000)
    assert beacon.seen("/remote/") == ["/remote/md.png"]


def test_the_load_remote_media_setting_loads_them_at_once(page, lab_server, beacon) -> None:
    """Remote media, that is: the Jupyter server's own URLs still wait for a click."""
    text = FRONT + message("m1", "Show the pictures.")
    text += "## %%%[^m1.1]\n[^m1.1]: [writer]\n\n" + remote_media(beacon)
    text += "\n![PA-LOGOUT](/logout?pa=setting)\n"
    (lab_server.root / "media.msg.md").write_text(text)
    settings = lab_server.settings / "jupyter-percent-agent" / "plugin.jupyterlab-settings"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"loadRemoteMedia": True}))
    baits = requested_baits(page)
    try:
        notebook = open_notebook(page, lab_server, "media.msg.md")
        output = cell_with(notebook, "Show the pictures.").locator(".jp-OutputArea")
        output.get_by_text("Pictures:").wait_for()
        wait_for(
            lambda: (
                {"/remote/md.png", "/remote/html.png", "/remote/jarvis.png"}
                <= set(beacon.seen("/remote/"))
            ),
            what="the remote images",
        )
        expect(output.locator(".jp-PercentAgent-remoteMedia")).to_have_count(1)
        assert baits == []
    finally:
        settings.unlink()


def test_disguised_urls_are_judged_as_the_browser_reads_them(page, lab_server, beacon) -> None:
    """Another host written without a scheme, a backslash for a slash, a scheme in mixed case
    with a tab in it, an SVG data URL in capitals: remote or refused, never loaded."""
    host = beacon.url.removeprefix("http://")
    reply = f"""Tricks:

![PA-PROTOCOL-RELATIVE](//{host}/remote/relative.png)

<img src="/\\\\{host}/remote/backslash.png">

<img>{{"url": "//{host}/remote/jarvis-relative.png"}}</img>

<img>{{"url": " JaVa\\tScRiPt:alert(1)"}}</img>

<img>{{"url": "DATA:IMAGE/SVG+XML;base64,PHN2Zy8+"}}</img>

<video>{{"url": "rtsp://{host}/live"}}</video>
"""
    text = FRONT + message("m1", "Show the tricks.")
    text += "## %%%[^m1.1]\n[^m1.1]: [writer]\n\n" + reply
    (lab_server.root / "tricks.msg.md").write_text(text)
    notebook = open_notebook(page, lab_server, "tricks.msg.md")
    output = cell_with(notebook, "Show the tricks.").locator(".jp-OutputArea")
    output.get_by_text("Tricks:").wait_for()
    placeholders = output.locator(".jp-PercentAgent-remoteMedia")
    expect(placeholders).to_have_count(3)
    for i in range(3):
        expect(placeholders.nth(i)).to_contain_text(host)
    refused = output.locator(".jp-PercentAgent-refused")
    expect(refused).to_have_count(3)
    expect(refused.nth(0)).to_contain_text("javascript: URLs are not allowed")
    expect(refused.nth(1)).to_contain_text("only PNG, JPEG, GIF and WebP")
    expect(refused.nth(2)).to_contain_text("rtsp: URLs are not allowed")
    expect(output.locator("img, video")).to_have_count(0)
    page.wait_for_timeout(1000)
    assert beacon.seen("/") == []


def requested_baits(page, base: str = "/") -> list[str]:
    """The baits (`?pa=NAME`) the page requests from now on outside the server's files
    (``base``: its base URL), in a list that grows."""
    baits: list[str] = []

    def seen(url: str) -> None:
        parts = urlsplit(url)
        if parts.query.startswith("pa=") and not parts.path.startswith(f"{base}files/"):
            baits.append(f"{parts.path}?{parts.query}")

    page.on("request", lambda request: seen(request.url))
    return baits


def same_origin_media(base: str) -> str:
    """A reply whose media point at the Jupyter server (``base``: its base URL): its files, and
    URLs that do something when fetched (log the user out, list the contents), each with its
    bait query."""
    return f"""Same origin:

![PA-FILES]({base}files/local.png?pa=files)

![PA-LOCAL](local.png)

![PA-LOGOUT]({base}logout?pa=logout)

<img src="{base}api/contents?pa=api" alt="PA-API">

![PA-UP](../../../logout?pa=up)

![PA-DOTS](%2e%2e/%2e%2e/%2e%2e/logout?pa=dots)

<video>{{"url": "{base}logout?pa=jarvis", "type": "PA-JARVIS"}}</video>
"""


def assert_files_load_and_the_rest_waits(page, output, baits: list[str],
                                         placeholders: int) -> None:
    output.get_by_text("Same origin:").wait_for()
    for alt in ("PA-FILES", "PA-LOCAL"):
        wait_for(lambda alt=alt: output.locator(f'img[alt="{alt}"]').evaluate(
            "i => i.naturalWidth") == 1, what=f"the server's file {alt}")
    waiting = output.locator(".jp-PercentAgent-remoteMedia")
    expect(waiting).to_have_count(placeholders)
    page.wait_for_timeout(1500)
    assert baits == [], f"the reply's media fetched {baits}"


def test_media_load_at_once_only_from_the_servers_files(page, lab_server) -> None:
    """`![](/logout)` in a reply logged the user out: only the server's `files/` load at
    once; its other URLs wait for a click, as remote media do, whatever the path's disguise
    (relative climbs, dots written as %2e, a Jarvis tag)."""
    (lab_server.root / "local.png").write_bytes(PNG)
    text = FRONT + message("m1", "Show the pictures.")
    text += "## %%%[^m1.1]\n[^m1.1]: [writer]\n\n" + same_origin_media("/") + "\n"
    text += SAVED_HTML.replace("print(1)", "print(2)").replace(
        '<img src=x onerror="{hit}"><b>PA-SAVED-HTML</b>', '<img src="/logout?pa=html" alt="PA-H">')
    (lab_server.root / "media.msg.md").write_text(text)
    baits = requested_baits(page)
    notebook = open_notebook(page, lab_server, "media.msg.md")
    output = cell_with(notebook, "Show the pictures.").locator(".jp-OutputArea")
    assert_files_load_and_the_rest_waits(page, output, baits, placeholders=4)
    html = cell_with(notebook, "print(2)").locator(".jp-OutputArea")
    expect(html.locator(".jp-PercentAgent-remoteMedia")).to_have_count(1)
    # a click loads what the user asked for, as for remote media
    output.locator(".jp-PercentAgent-remoteMedia").first.get_by_role("button").click()
    wait_for(lambda: baits == ["/logout?pa=logout"], what="the clicked URL")


def test_under_jupyterhub_only_the_users_own_files_load_at_once(hub_page, hub_server) -> None:
    page = hub_page
    base = "/user/alice/"
    (hub_server.root / "local.png").write_bytes(PNG)
    reply = same_origin_media(base) + (
        "\n![PA-ROOT](/files/local.png?pa=root)\n\n![PA-HUB](/hub/logout?pa=hub)\n")
    text = FRONT + message("m1", "Show the pictures.")
    text += "## %%%[^m1.1]\n[^m1.1]: [writer]\n\n" + reply
    (hub_server.root / "media.msg.md").write_text(text)
    baits = requested_baits(page, base)
    notebook = open_notebook(page, hub_server, "media.msg.md")
    output = cell_with(notebook, "Show the pictures.").locator(".jp-OutputArea")
    assert_files_load_and_the_rest_waits(page, output, baits, placeholders=6)


def test_a_notebook_known_by_its_agent_kernelspec_is_guarded_from_its_first_render(
        page, lab_server, beacon) -> None:
    """A notebook whose name says nothing (`.ipynb`) but whose kernelspec is the Agent kernel
    is a message notebook: its Markdown and HTML outputs go through the second sanitizing
    pass from the first render, not once its kernel or its metadata has been seen."""
    b = beacon.url
    outputs = [
        {"output_type": "display_data", "metadata": {},
         "data": {"text/markdown": f"PA-KS-MD ![md]({b}/remote/ks-md.png)"}},
        {"output_type": "display_data", "metadata": {},
         "data": {"text/html": f'<b>PA-KS-HTML</b><img src="{b}/remote/ks-html.png">'}},
    ]
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "percent-agent", "display_name": "Agent",
                                      "language": "markdown"}},
          "cells": [{"cell_type": "code", "id": "k1", "metadata": {}, "execution_count": 1,
                     "source": "Show me.", "outputs": outputs}]}
    (lab_server.root / "agent.ipynb").write_text(json.dumps(nb))
    notebook = open_notebook(page, lab_server, "agent.ipynb")
    output = cell_with(notebook, "Show me.").locator(".jp-OutputArea")
    output.get_by_text("PA-KS-HTML").wait_for()
    expect(output.locator(".jp-PercentAgent-remoteMedia")).to_have_count(2)
    page.wait_for_timeout(1500)
    assert beacon.seen("/remote/") == [], "media loaded before the notebook was guarded"


def test_other_notebooks_keep_jupyterlabs_own_renderers(page, lab_server) -> None:
    """Only a message notebook's own renderer registry has this extension's renderers: a
    Python notebook renders an output that looks like a reply or a tool call (its metadata
    says so) with JupyterLab's Markdown and text renderers, as it renders any other (the
    application's registry, which other notebooks, Markdown cells and the Markdown viewer
    clone, used to have ours)."""
    outputs = [
        {"output_type": "display_data",
         "metadata": {"percent_agent": {"type": "writer"}, "model": "test-model"},
         "data": {"text/markdown": "PA-PLAIN-REPLY **bold**"}},
        {"output_type": "display_data",
         "metadata": {"percent_agent": {"type": "tool"}, "name": "weather"},
         "data": {"text/plain": "PA-PLAIN-TOOL print(1)"}},
    ]
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
          "cells": [{"cell_type": "code", "id": "p1", "metadata": {}, "execution_count": 1,
                     "source": "show()", "outputs": outputs}]}
    (lab_server.root / "plain.ipynb").write_text(json.dumps(nb))
    notebook = open_notebook(page, lab_server, "plain.ipynb")
    output = cell_with(notebook, "show()").locator(".jp-OutputArea")
    output.get_by_text("PA-PLAIN-TOOL").wait_for()
    expect(output.locator("strong", has_text="bold")).to_have_count(1)  # Markdown, rendered
    expect(output.locator(".jp-PercentAgent-output")).to_have_count(0)
    expect(output.locator(".jp-RenderedText")).to_contain_text("PA-PLAIN-TOOL print(1)")
