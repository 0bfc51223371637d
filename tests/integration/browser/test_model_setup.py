"""JupyterLab's "Set up a model": a new user with no key in the environment runs a message,
the cell fails for the missing key and offers the dialog; the key and the default model it
saves go into the user's config (as tce keys set does) and the cell's next run works, with no
restart. Real JupyterLab, real Chromium, the agent kernel and the local model server (as
OpenAI's endpoint, through OPENAI_BASE_URL)."""

from __future__ import annotations

import shutil

import pytest
from playwright.sync_api import expect

from .labpage import cell_with, open_lab, open_notebook, wait_for_kernel

pytestmark = pytest.mark.slow

SECRET = "sk-typed-into-the-dialog-0123456789"
CHAT = "# %% Hello[^n1]\n[^n1]: [markdown]\n\nHello, model.\n"


@pytest.fixture
def fresh(first_run_server):
    """An empty root and user config: no key stored, no default model."""
    for entry in first_run_server.root.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for name in ("keys.json", "config.toml"):
        (first_run_server.user_config / name).unlink(missing_ok=True)
    (first_run_server.root / "first.msg.md").write_text(CHAT)
    return first_run_server


def test_a_cell_failed_for_a_missing_key_offers_the_dialog_and_then_runs(
        first_run_page, fresh, model) -> None:
    page, lab = first_run_page, fresh
    notebook = open_notebook(page, lab, "first.msg.md")
    wait_for_kernel(page)
    cell = cell_with(notebook, "Hello, model.")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".jp-OutputArea")).to_contain_text("no API key found for gpt-4o-mini",
                                                           timeout=60_000)
    assert not model.chat_requests
    button = cell.locator(".jp-PercentAgent-setupButton")
    expect(button).to_be_visible()
    button.click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Set up a model")
    expect(dialog.locator(".jp-PercentAgent-setupProvider")).to_have_value("openai")
    key_field = dialog.locator(".jp-PercentAgent-setupKey")
    assert key_field.get_attribute("type") == "password"
    key_field.fill(SECRET)
    dialog.locator(".jp-PercentAgent-setupModel").fill("gpt-4o")
    model.script("Hello from a stored key.")
    dialog.get_by_role("button", name="Save").click()
    expect(cell.locator(".jp-OutputArea")).to_contain_text("Hello from a stored key.",
                                                           timeout=60_000)
    expect(button).to_have_count(0)
    (request,) = model.chat_requests
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body["model"] == "gpt-4o"
    assert '"openai": "' + SECRET in (lab.user_config / "keys.json").read_text()
    assert SECRET not in page.content()
    assert SECRET not in lab.log.read_text(errors="replace")


def test_the_agent_menu_and_the_palette_open_the_dialog(first_run_page, fresh) -> None:
    page = first_run_page
    open_lab(page, fresh)
    page.locator(".lm-MenuBar-itemLabel", has_text="Agent").click()
    page.locator(".lm-Menu-itemLabel", has_text="Set up a model").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Set up a model")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    page.keyboard.press("Control+Shift+c")
    page.keyboard.type("Set up a model")
    page.locator(".lm-CommandPalette-item", has_text="Set up a model").first.click()
    expect(dialog).to_contain_text("Set up a model")
    dialog.get_by_role("button", name="Cancel").click()
    assert not (fresh.user_config / "keys.json").exists()


SERVER_KEY = "sk-own-server-from-the-dialog-0123456789"


def test_the_dialog_sets_up_the_users_own_server_and_the_cell_runs_on_it(
        first_run_page, fresh, model) -> None:
    """No variable names a server (a desktop-launched JupyterLab): the dialog's "own server"
    path stores its URL, a key tied to it and the default model; the next run goes there."""
    page, lab = first_run_page, fresh
    notebook = open_notebook(page, lab, "first.msg.md")
    wait_for_kernel(page)
    page.locator(".lm-MenuBar-itemLabel", has_text="Agent").click()
    page.locator(".lm-Menu-itemLabel", has_text="Set up a model").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog.locator(".jp-PercentAgent-setupUrl")).to_be_hidden()
    dialog.locator(".jp-PercentAgent-setupProvider").select_option("own server")
    dialog.locator(".jp-PercentAgent-setupUrl").fill("ftp://" + model.url.split("://")[1])
    dialog.locator(".jp-PercentAgent-setupKey").fill(SERVER_KEY)
    dialog.locator(".jp-PercentAgent-setupModel").fill("test-model")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog.locator(".jp-PercentAgent-setupProblem")).to_contain_text(
        "is not an http:// or https:// URL")  # refused: asked again, what was typed kept
    expect(dialog.locator(".jp-PercentAgent-setupModel")).to_have_value("test-model")
    expect(dialog.locator(".jp-PercentAgent-setupKey")).to_have_value("")
    assert not model.requests
    dialog.locator(".jp-PercentAgent-setupUrl").fill(model.url)
    dialog.locator(".jp-PercentAgent-setupKey").fill(SERVER_KEY)
    dialog.get_by_role("button", name="Save").click()
    saved = lab.user_config / "config.toml"
    for _ in range(300):  # the answer is in once the config is written
        if saved.exists():
            break
        page.wait_for_timeout(100)
    assert f'api_base = "{model.url}"' in saved.read_text()
    expect(dialog).to_have_count(0)
    model.script("Hello from your own server.")
    cell = cell_with(notebook, "Hello, model.")
    cell.locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".jp-OutputArea")).to_contain_text("Hello from your own server.",
                                                           timeout=60_000)
    (request,) = model.chat_requests
    assert request.headers["authorization"] == f"Bearer {SERVER_KEY}"
    assert request.body["model"] == "test-model"
    assert f'"{model.url}": "{SERVER_KEY}"' in (lab.user_config / "keys.json").read_text()
    assert SERVER_KEY not in page.content()
    assert SERVER_KEY not in lab.log.read_text(errors="replace")
