"""A script message file (``.msg.py``) in a real JupyterLab and Chromium: a double-click opens
it as a notebook on the agent kernel, a message run in it gets its reply, and the file saved
from JupyterLab is still a script Python runs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent import format as fmt
from tests.paths import TEST_DATA

from .labpage import cell_with, open_notebook, run_cell, save, wait_for, wait_for_kernel

pytestmark = pytest.mark.slow

SAMPLE = TEST_DATA / "format" / "script" / "analysis.msg.py"


def test_double_click_opens_a_script_message_file_whose_message_runs_and_it_stays_a_script(
    page, lab_server, model
) -> None:
    path = lab_server.root / "analysis.msg.py"
    text = SAMPLE.read_text(encoding="utf-8")
    # a new message at the end, not run yet
    path.write_text(
        text + "\n# %% Ask[^ask]\n# [^ask]: [markdown]\n#\n# Is the check right?\n",
        encoding="utf-8",
    )
    notebook = open_notebook(page, lab_server, "analysis.msg.py")
    # the code of a [code] cell is a cell, a reply an output
    expect(cell_with(notebook, "numbers = [3, 1, 2]")).to_be_visible()
    replies = notebook.locator(".jp-PercentAgent-replyHeader")
    expect(replies.first).to_contain_text("planner")
    wait_for_kernel(page)

    model.script("Yes: 1 + 2 + 3 = 1 * 2 * 3.", "Yes: 1 + 2 + 3 = 1 * 2 * 3.")
    run_cell(page, cell_with(notebook, "Is the check right?"))
    cell_with(notebook, "Is the check right?").get_by_text("1 + 2 + 3 = 1 * 2 * 3").wait_for()
    save(page)

    wait_for(lambda: "1 + 2 + 3" in path.read_text(encoding="utf-8"), what="the reply on disk")
    saved = path.read_text(encoding="utf-8")
    assert "\n# Yes: 1 + 2 + 3 = 1 * 2 * 3.\n" in saved  # the reply is a comment
    assert saved.startswith(text.split("# %% Which")[0])  # the code cell is plain code still
    assert fmt.writes(fmt.reads(saved, path=str(path)), path=str(path)) == saved
    run = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        cwd=path.parent,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "loaded 3\nchecked 6\n"
