"""An external ACP agent in JupyterLab: its permission request opens a dialog (the tool's
title and kind, the edit as a diff, the agent's options); the answer goes back to the agent;
the tool's result shows its edit as a diff and the plan as a checklist. Real JupyterLab, real
Chromium, the Agent kernel and the scripted agent on the official ACP SDK as the user's agent
in the (trusted) folder."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent import acp, trust

from .labpage import cell_with, open_notebook, wait_for_kernel

pytestmark = pytest.mark.slow

CHAT = ("---\nagents:\n  coder: {acp: scripted}\ndefault_agent: coder\n---\n\n"
        "# %% Edit[^e1]\n[^e1]: [markdown]\n\nPA-ACP: fix the notes, please.\n")

EDIT = {"id": "e1", "title": "Edit notes.txt", "kind": "edit", "status": "pending",
        "locations": ["notes.txt"],
        "diff": {"path": "notes.txt", "old": "old line\n", "new": "new line\n"}}

SCRIPT = {"prompts": [[
    {"plan": [["Read the notes", "completed"], ["Fix them", "in_progress"]]},
    {"tool": EDIT},
    {"permission": {"id": "e1", "title": "Edit notes.txt", "kind": "edit"}},
    {"update": {"id": "e1", "status": "completed"}},
    {"plan": [["Read the notes", "completed"], ["Fix them", "completed"]]},
    {"say": " Done."}]]}


@pytest.fixture
def agent_folder(lab_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                 ) -> Iterator[Path]:
    """The lab's root trusted, with the scripted agent added as ``scripted`` in the lab's
    user config; both taken back afterwards (the server outlives the test)."""
    monkeypatch.setenv("PERCENT_AGENT_CONFIG_DIR", str(lab_server.user_config))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    acp.add_agent(acp.AcpAgentSpec(
        "scripted", sys.executable,
        ("-m", "jupyter_percent_agent.testing.scripted_acp_agent", str(script))),
        replace=True)
    folder = lab_server.root
    trust.trust_folder(folder)
    (folder / "acp.msg.md").write_text(CHAT, encoding="utf-8")
    yield folder
    trust.untrust_folder(folder)
    acp.remove_agent("scripted")


def test_a_permission_dialog_shows_the_diff_and_the_result_shows_it_as_a_diff(
        page, lab_server, model, agent_folder: Path) -> None:
    notebook = open_notebook(page, lab_server, "acp.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "PA-ACP")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")

    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("coder asks permission", timeout=60_000)
    expect(dialog).to_contain_text("Edit notes.txt")
    expect(dialog.locator(".jp-PercentAgent-permissionKind")).to_have_text("edit")
    expect(dialog.locator(".jp-PercentAgent-diffDel")).to_have_text("-old line\n")
    expect(dialog.locator(".jp-PercentAgent-diffAdd")).to_have_text("+new line\n")
    for name in ("Allow once", "Always allow", "Reject"):
        expect(dialog.get_by_role("button", name=name)).to_be_visible()
    # no prompt box to be seen under the cell: the dialog asks instead
    expect(cell.locator(".jp-Stdin")).to_be_hidden()
    dialog.get_by_role("button", name="Allow once").click()

    output = cell.locator(".jp-OutputArea")
    expect(output).to_contain_text("permission: allow", timeout=60_000)
    # the agent's text before the result is prose, not shown as code
    step = output.locator(".jp-PercentAgent-replyBody", has_text="permission: allow")
    expect(step.locator("pre")).to_have_count(0)
    expect(output).to_contain_text("Done.")
    result = output.locator(".jp-PercentAgent-toolResult", has=page.locator(
        ".jp-PercentAgent-diff"))
    expect(result.locator(".jp-PercentAgent-diffAdd")).to_have_text("+new line\n")
    expect(result.locator(".jp-PercentAgent-diffDel")).to_have_text("-old line\n")
    plan = output.locator(".jp-PercentAgent-plan li")
    expect(plan).to_have_count(2)
    expect(plan.locator("input:checked")).to_have_count(2)
    expect(page.locator(".jp-Dialog")).to_have_count(0)


def test_closing_the_dialog_rejects(page, lab_server, model, agent_folder: Path) -> None:
    notebook = open_notebook(page, lab_server, "acp.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "PA-ACP")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("coder asks permission", timeout=60_000)
    page.keyboard.press("Escape")
    expect(cell.locator(".jp-OutputArea")).to_contain_text("permission: reject",
                                                           timeout=60_000)
