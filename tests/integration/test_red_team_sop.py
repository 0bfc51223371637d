"""Red team: the files of a SOP folder a clone ships (documents, ``_agents.yaml``, toolbox
sources) are read as the message files are: a link out of the folder is refused, and a FIFO
or a device is never opened, so neither a file of the user's elsewhere reaches a model nor does
``tce`` hang or fill memory. ``tce`` runs as the user runs it, in the clone, with the local
model server as the model."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from jupyter_percent_agent.testing.environment import model_env, run_tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.paths import TEST_DATA

DATA = TEST_DATA / "sop" / "review"
BIN = Path(sys.executable).parent
SECRET = "the private plan of the user"


pytestmark = pytest.mark.usefixtures("review_sop")  # the clone ships the review workflow


@pytest.fixture
def private_doc(tmp_path: Path) -> Path:
    """A task document of the user's, outside the clone."""
    doc = tmp_path / "home" / "notes" / "leak.md"
    doc.parent.mkdir(parents=True)
    doc.write_text(
        "---\ntask_id: w/leak\ntask_type: execute\noutput:\n  $.x: $\n---\n\n"
        f"## parameters.prompt\nSay: {SECRET}\n"
    )
    return doc


def test_a_sop_document_linking_out_of_the_folder_is_never_read(
    clone: Path, private_doc: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    (clone / "sop" / "w" / "leak.md").symlink_to(private_doc)
    done = run_tce(
        "run",
        "w/leak",
        "--sop",
        "sop",
        "--context",
        "{}",
        cwd=clone,
        env=model_env(openai_server,
        user_config_dir),
    )
    assert SECRET not in " ".join(str(r.body) for r in openai_server.requests)
    assert SECRET not in done.stdout + done.stderr
    assert done.returncode != 0
    checked = run_tce("sop", "check", "sop", cwd=clone,
                      env=model_env(openai_server, user_config_dir))
    assert "w/leak.md" in checked.stdout + checked.stderr
    assert "link" in checked.stdout + checked.stderr


@pytest.mark.parametrize("where", ["w/stuck.md", "_agents.yaml", "../toolbox/stuck.py"])
def test_a_fifo_or_a_device_in_a_sop_folder_never_hangs_or_fills_memory(
    clone: Path, openai_server: OpenAIServer, user_config_dir: Path, where: str
) -> None:
    (clone / "toolbox").mkdir(exist_ok=True)
    (clone / "sop" / "w" / "tool.md").write_text(
        "---\ntask_id: w/tool\ntask_type: execute\ntool:\n  tool_id: stuck\n---\n"
    )
    os.mkfifo(clone / "sop" / where)
    zero = clone / "sop" / "w" / "zero.md"
    zero.symlink_to("/dev/zero")
    checked = run_tce("sop", "check", "sop", cwd=clone,
                      env=model_env(openai_server, user_config_dir))
    shown = checked.stdout + checked.stderr
    assert checked.returncode != 0
    assert "zero.md" in shown and Path(where).name in shown, shown


def test_the_sop_index_never_reads_a_document_linking_out_of_the_folder(
    clone: Path, private_doc: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    private_doc.write_text(
        private_doc.read_text().replace(
            "task_type: execute\n", f"task_type: execute\ndescription: {SECRET}\n"
        )
    )
    (clone / "sop" / "w" / "leak.md").symlink_to(private_doc)
    found = run_tce(
        "sop",
        "search",
        "private plan",
        "--sop",
        "sop",
        "--json",
        cwd=clone,
        env=model_env(openai_server,
        user_config_dir),
    )
    assert found.returncode == 0, found.stderr
    assert SECRET not in found.stdout + found.stderr
    assert "w/leak" not in found.stdout


def test_a_sop_index_file_linking_out_of_the_folder_is_replaced_not_written_through(
    tmp_path: Path, clone: Path, user_config_dir: Path
) -> None:
    """A clone shipping sop/.sop-index.sqlite -> the index of a SOP folder of the user's had
    tce sop search write the clone's documents into the user's index (sealed by the user, so
    taken as trusted) and drop theirs from it: a file outside the clone written because the
    clone asked. The link is replaced by an index of the clone's own."""
    mine = tmp_path / "home" / "work"
    shutil.copytree(DATA / "sop", mine / "sop")
    with OpenAIServer() as server:
        built = run_tce("sop", "index", "sop", cwd=mine, env=model_env(server, user_config_dir))
        assert built.returncode == 0, built.stderr
        index = mine / "sop" / ".sop-index.sqlite"
        before = index.read_bytes()
        (clone / "sop" / "w" / "tea.md").write_text(
            "---\ntask_id: w/tea\ntask_type: execute\ndescription: All about tea\n---\n\n"
            "## parameters.prompt\nTea.\n"
        )
        (clone / "sop" / ".sop-index.sqlite").symlink_to(index)
        found = run_tce("sop", "search", "tea", cwd=clone, env=model_env(server, user_config_dir))
    assert found.returncode == 0, found.stderr
    assert "w/tea" in found.stdout
    assert index.read_bytes() == before
    assert not (clone / "sop" / ".sop-index.sqlite").is_symlink()
