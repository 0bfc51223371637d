"""JupyterLab's "Trust this folder?" dialog: a cell refused because its folder is not trusted
offers to trust it; trusting records it in the user's config (as tce trust does) and runs
the cell again; declining leaves everything as it was. Real JupyterLab, real Chromium, the
agent kernel and the local model server."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .labpage import cell_with, open_notebook, wait_for_kernel

pytestmark = pytest.mark.slow

TOOL = '''import pathlib
pathlib.Path(__file__).with_name("imported.marker").write_text("x")


def ping() -> str:
    """Answer pong.

    Returns:
        str: pong
    """
    return "pong"
'''
CHAT = ("---\nagents:\n  a: {models: [m], tools: [notes]}\n---\n\n"
        "# %% Ask[^n1]\n[^n1]: [markdown]\n\nPing, please.\n")


@pytest.fixture
def clone(lab_server):
    """The lab's root as a cloned folder: a chat whose agent wants the toolbox beside it.
    The trust a test records is taken back afterwards (the server outlives the test)."""
    folder = lab_server.root
    (folder / "toolbox").mkdir(parents=True, exist_ok=True)
    (folder / "toolbox" / "notes.py").write_text(TOOL)
    (folder / "chat.msg.md").write_text(CHAT)
    yield folder
    (lab_server.user_config / "config.toml").unlink(missing_ok=True)


def run_ask(page, lab_server):
    notebook = open_notebook(page, lab_server, "chat.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "Ping, please.")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    return cell


def test_declining_leaves_the_folder_untrusted(page, lab_server, model, clone) -> None:
    folder = clone
    cell = run_ask(page, lab_server)
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Trust this folder?", timeout=60_000)
    expect(dialog).to_contain_text(str(folder))
    dialog.get_by_role("button", name="Not now").click()
    expect(cell.locator(".jp-OutputArea")).to_contain_text("UntrustedFolder")
    assert not (folder / "toolbox" / "imported.marker").exists()
    assert not model.chat_requests
    config = lab_server.user_config / "config.toml"
    assert not config.exists() or str(folder) not in config.read_text()


def test_trusting_records_the_folder_and_runs_the_cell_again(page, lab_server, model,
                                                            clone) -> None:
    folder = clone
    model.script('answer = """pong, from a trusted toolbox."""\n')
    cell = run_ask(page, lab_server)
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Trust this folder?", timeout=60_000)
    dialog.get_by_role("button", name="Trust folder").click()
    expect(cell.locator(".jp-OutputArea")).to_contain_text("pong, from a trusted toolbox",
                                                           timeout=60_000)
    assert (folder / "toolbox" / "imported.marker").exists()
    assert str(folder.resolve()) in (lab_server.user_config / "config.toml").read_text()


LURE = ("# %% Lure[^c1]\n[^c1]: [code]\n\n```python\n"
        "class UntrustedFolder(Exception):\n    pass\n\n"
        "raise UntrustedFolder('refused: PA-LURE this folder is safe, click Trust folder')\n"
        "```\n")


def test_an_error_a_cell_raises_under_the_refusals_name_opens_no_dialog(
        page, lab_server, model, clone) -> None:
    """The code of a cell chooses its error's name and text: only the kernel's own refusal,
    in the reply's metadata, opens the dialog."""
    folder = clone
    (folder / "lure.msg.md").write_text(LURE)
    notebook = open_notebook(page, lab_server, "lure.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "PA-LURE")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".jp-OutputArea")).to_contain_text("PA-LURE", timeout=60_000)
    page.wait_for_timeout(2000)
    expect(page.locator(".jp-Dialog")).to_have_count(0)
    config = lab_server.user_config / "config.toml"
    assert not config.exists() or str(folder) not in config.read_text()
