"""External agents over ACP beyond ``tce chat``: a task document's ACP step (the document
protected, the person at the terminal asked, an untrusted folder refused), images in the
prompt (ACP image blocks for an agent that takes them, the stand-in line otherwise), and
``tce exec`` not importing the model client for an ACP turn. The scripted agent is a real
process on the official SDK (jupyter_percent_agent/testing/scripted_acp_agent.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_percent_agent.runtime.code_history import NO_VISION
from jupyter_percent_agent.testing.environment import run_tce, tce, tce_on_terminal
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.helpers.acp import ACP_DATA, HEADER, Scripted
from tests.paths import TEST_DATA


def test_tce_exec_of_an_external_agents_message_never_imports_the_model_client(
        project: Scripted) -> None:
    """tce exec warmed litellm up for any message cell; an ACP turn calls no model."""
    project.add("echo.json")
    project.path.write_text(HEADER.format(name="fake")
                            + "# %% Ask[^m1]\n[^m1]: [markdown]\n\nhi\n")
    probe = ("import sys\nsys.argv = ['tce', 'exec', sys.argv[1]]\n"
             "from jupyter_percent_agent.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n"
             "    print('LITELLM' if 'litellm' in sys.modules else 'NO-LITELLM', file=sys.stderr)\n"
             "    raise\n")
    p = subprocess.run([sys.executable, "-c", probe, str(project.path)], env=dict(os.environ),
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert "answer to: hi" in p.stdout and "NO-LITELLM" in p.stderr


# -- a task document's step answered by an external agent ---------------------------------

@pytest.fixture
def sop_project(tmp_path: Path) -> Scripted:
    """The scripted folder with a SOP folder whose step ``edit/ask`` goes to ``coder``, the
    user's external agent ``fake`` (not trusted yet)."""
    scripted = Scripted(tmp_path)
    shutil.copytree(ACP_DATA / "task_sop" / "sop", scripted.folder / "sop")
    return scripted


def test_a_task_step_never_reads_or_writes_its_own_document_and_nobody_allows_at_random(
        sop_project: Scripted, trusted) -> None:
    trusted(sop_project.folder)
    sop_project.add("task_step.json")
    document = sop_project.folder / "sop" / "edit" / "ask.md"
    before = document.read_bytes()
    r = tce("run", "edit/ask", "--sop", str(sop_project.folder / "sop"),
            "--context", '{"what": "tidy up"}', "--json")
    assert r.exit_code == 0, r.output
    # what the agent said while its tool ran is a step of the transcript; the answer follows it
    assert json.loads(r.stdout)["context"]["answer"].strip() == "done"
    said = Path(json.loads(r.stdout)["transcript"]).read_text()
    assert "permission: reject" in said
    assert "read: ---" not in said and "wrote sop/edit/ask.md" not in said
    assert "refused: ACP read of 'sop/edit/ask.md'" in said
    assert "refused: ACP write of 'sop/edit/ask.md'" in said
    assert "reject_once (no person)" in said  # nobody at a terminal: rejected
    assert document.read_bytes() == before


def test_the_person_at_the_terminal_answers_a_task_steps_permission(
        sop_project: Scripted, trusted) -> None:
    trusted(sop_project.folder)
    sop_project.add("task_step.json")

    def answer(got: bytes, terminal: int, proc: subprocess.Popen) -> bool:
        if b"(Enter rejects)" in got:
            assert b"Remove build/ (delete)" in got and b"rm -rf build" in got
            os.write(terminal, b"1\n")  # Allow once
            return True
        return False

    code, out, answered = tce_on_terminal(
        "run", "edit/ask", "--sop", str(sop_project.folder / "sop"),
        "--context", '{"what": "tidy up"}', env=dict(os.environ), answer=answer)
    assert code == 0 and answered, out
    transcript = next((sop_project.folder / "runs").glob("*.msg.md")).read_text()
    assert "permission: allow" in transcript and "allow_once (person)" in transcript


@pytest.mark.parametrize("task", ["edit/ask", "edit/plan"])
def test_a_task_step_for_an_external_agent_in_an_untrusted_folder_is_refused_first(
        sop_project: Scripted, local_model: OpenAIServer, task: str) -> None:
    """Refused before any step: the model's step a plan has before it is not called either."""
    sop_project.add("task_step.json")
    r = tce("run", task, "--sop", str(sop_project.folder / "sop"),
            "--context", '{"what": "tidy up"}')
    assert r.exit_code == 6, r.output
    line = r.stderr.strip().splitlines()[-1]
    assert "refused: agent 'coder' is the external agent 'fake'" in line
    assert f"to allow it: tce trust {sop_project.folder.resolve()}" in line
    assert sop_project.calls() == []  # no agent process was started
    assert local_model.chat_requests == []  # and no model called


def test_tce_run_of_external_agents_steps_only_never_imports_the_model_client(
        sop_project: Scripted, trusted) -> None:
    trusted(sop_project.folder)
    sop_project.add("echo.json")
    probe = ("import sys\nsys.argv = ['tce', 'run', 'edit/ask', '--sop', sys.argv[1],\n"
             "            '--context', '{\"what\": \"hi\"}', '--json']\n"
             "from jupyter_percent_agent.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n"
             "    print('LITELLM' if 'litellm' in sys.modules else 'NO-LITELLM', file=sys.stderr)\n"
             "    raise\n")
    p = subprocess.run([sys.executable, "-c", probe, str(sop_project.folder / "sop")],
                       env=dict(os.environ), capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["context"]["answer"].startswith("answer to: hi")
    assert "NO-LITELLM" in p.stderr


# -- images in an external agent's prompt --------------------------------------------------

def _images(call: dict) -> list[dict]:
    return [b for b in call["blocks"] if b["type"] == "image"]


def test_images_go_to_an_agent_that_takes_them_as_image_blocks(project: Scripted) -> None:
    shutil.copy(ACP_DATA / "plot.png", project.folder / "plot.png")
    project.add("images.json")
    r = tce("chat", str(project.path), "-m", "what is in ![a plot](plot.png)?")
    assert r.exit_code == 0, r.output
    r = tce("chat", str(project.path), "-m", "and now? ![again](plot.png)")  # continued
    assert r.exit_code == 0, r.output
    first, second = project.calls("prompt")
    assert [c["method"] for c in project.calls()].count("load_session") == 1
    for call in (first, second):
        (image,) = _images(call)
        assert image["mimeType"] == "image/png" and image["bytes"] > 0
        assert "[image 1: plot.png (image/png)]" in call["text"]
        assert NO_VISION not in call["text"]
    assert first["blocks"][0]["type"] == "text"  # the message's text, then its image


def test_an_agent_that_takes_no_images_gets_the_line_non_vision_models_get(
        project: Scripted) -> None:
    shutil.copy(ACP_DATA / "plot.png", project.folder / "plot.png")
    project.add("echo.json")
    r = tce("chat", str(project.path), "-m", "what is in ![a plot](plot.png)?")
    assert r.exit_code == 0, r.output
    (call,) = project.calls("prompt")
    assert _images(call) == [] and call["text"].endswith(NO_VISION)


def test_a_code_cells_plot_in_the_history_reaches_an_agent_that_takes_images(
        project: Scripted) -> None:
    """The plot of a code cell run by tce exec (a real kernel) goes to the external agent
    answering the question after it, as an image block."""
    code = TEST_DATA / "code"
    shutil.copy(code / "red-2000x1000.png", project.folder / "red-2000x1000.png")
    project.path.write_text(HEADER.format(name="fake")
                            + (code / "done_when.msg.md").read_text())
    project.add("images.json")
    p = run_tce("exec", str(project.path), env=dict(os.environ), input="")
    assert p.returncode == 0, p.stderr
    (call,) = project.calls("prompt")
    (image,) = _images(call)
    assert image["mimeType"] == "image/png" and "[image 1: image/png]" in call["text"]
