"""Real-time collaboration (jupyter-collaboration): two browser windows on one message file
see the same reply as it arrives, and a save writes one canonical message file."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from jupyter_percent_agent import format as fmt

from .labpage import (
    cell_with,
    chat_through_jupyterlab,
    chat_through_tce,
    open_notebook,
    run_cell,
    same_but_for_time_and_ids,
    save,
    wait_for_kernel,
)

pytestmark = pytest.mark.slow

CHAT = ("---\nagents:\n  writer: {models: [m]}\n---\n\n"
        "# %% Ask[^c1]\n[^c1]: [markdown]\n\nWhich plan costs less?\n")


@pytest.fixture
def two_windows(browser) -> Iterator[tuple[object, object]]:
    """Two people: two browser contexts, each its own JupyterLab window."""
    contexts = [browser.new_context(viewport={"width": 1300, "height": 850}) for _ in range(2)]
    for context in contexts:
        context.set_default_timeout(60_000)
    try:
        yield contexts[0].new_page(), contexts[1].new_page()
    finally:
        for context in contexts:
            with contextlib.suppress(Exception):
                context.close()


def test_two_windows_see_the_same_reply_and_a_save_writes_one_canonical_file(
        collab_server, lab_model, two_windows) -> None:
    alice, bob = two_windows
    path = collab_server.root / "shared.msg.md"
    path.write_text(CHAT)
    lab_model.reset()
    lab_model.script("Plan B, by about a third.")
    mine = open_notebook(alice, collab_server, "shared.msg.md")
    theirs = open_notebook(bob, collab_server, "shared.msg.md")
    wait_for_kernel(alice)
    run_cell(alice, cell_with(mine, "Which plan costs less?"))
    expect(cell_with(theirs, "Which plan costs less?").locator(".jp-OutputArea")).to_contain_text(
        "Plan B, by about a third.", timeout=60_000)
    save(alice)
    text = path.read_text()
    nb = fmt.read(path)
    (cell,) = [c for c in nb["cells"] if fmt.cell_kind(c) == "message"]
    (reply,) = cell["outputs"]
    assert fmt.output_text(reply) == "Plan B, by about a third."
    assert fmt.writes(nb, path=str(path)) == text  # canonical: reads and writes back the same
    assert "execution_count" not in text
    assert len(re.findall(r"^# %% ", text, re.M)) == 1  # no empty message added


def test_a_save_from_a_shared_document_is_the_bytes_tce_writes(
        collab_server, lab_model, two_windows, tmp_path) -> None:
    """With real-time collaboration the server saves the notebook from its shared document,
    whose maps do not keep the order keys were set in; the file is still the bytes ``tce``
    writes for the same conversation."""
    lab_model.reset()
    by_tce = chat_through_tce(lab_model, tmp_path, "Which plan costs less?",
                              "Plan B, by about a third.")
    alice, _bob = two_windows
    by_lab = chat_through_jupyterlab(alice, collab_server, lab_model, "Which plan costs less?",
                                     "Plan B, by about a third.")
    assert same_but_for_time_and_ids(by_lab) == same_but_for_time_and_ids(by_tce)
