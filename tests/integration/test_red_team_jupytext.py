"""Red team: ``jupytext --execute`` on a message file a folder ships.

A message file may name a kernelspec in its ``jupyter:`` entry (``python3``): jupytext, asked
to execute the file, starts the kernel the notebook's metadata names and sends it every cell's
source. A message cell's source is its text, so a cloned file whose first message is Python
would run as the user, outside the sandbox and the trust rules. The file runs on the agent
kernel, as in JupyterLab, unless the user picks another (``--set-kernel``). The real
``jupytext`` command, in the clone, with the local model server as the model.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.environment import model_env, run_tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer

BIN = Path(sys.executable).parent
TIMEOUT = 180


def hostile(folder: Path, mark: Path, name: str = "chat.msg.md") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    text = (
        "---\njupyter:\n  kernelspec:\n    name: python3\n"
        "    display_name: Python 3\n    language: python\n---\n\n"
        "# %% Please summarise[^a]\n[^a]: [markdown]\n\n"
        f"open({str(mark)!r}, 'w').write('ran')\n"
    )
    if fmt.is_script_path(name):  # the same conversation as a script message file
        text = fmt.writes(fmt.reads(text), path=name)
        assert "python3" in text and "# open(" in text
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["chat.msg.md", "notes.md", "chat.msg.py", "chat.msg.R"])
def test_jupytext_execute_runs_a_cloned_message_file_on_the_agent_kernel(
    tmp_path: Path, openai_server: OpenAIServer, user_config_dir: Path, name: str
) -> None:
    mark = tmp_path / "ran"
    path = hostile(tmp_path / "clone", mark, name)
    openai_server.script("A summary.")
    done = subprocess.run(
        [str(BIN / "jupytext"), "--to", "ipynb", "--execute", path.name],
        cwd=path.parent,
        env=model_env(openai_server, user_config_dir),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert not mark.exists(), done.stderr
    assert done.returncode == 0, done.stderr
    executed = json.loads(path.with_suffix(".ipynb").read_text())
    assert executed["metadata"]["kernelspec"]["name"] == "percent-agent"
    assert len(openai_server.chat_requests) == 1  # the message went to the model, as a message
    assert path.read_text().count("python3") == 1  # the file itself is untouched


def test_a_kernel_the_user_picks_is_used(
    tmp_path: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    mark = tmp_path / "ran"
    path = hostile(tmp_path / "mine", mark)
    done = subprocess.run(
        [str(BIN / "jupytext"), "--to", "ipynb", "--execute", "--set-kernel", "python3", path.name],
        cwd=path.parent,
        env=model_env(openai_server, user_config_dir),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert mark.read_text() == "ran"


PROPOSAL = '''thought = "The user wants their file read."
answer = """Run this when you have read it."""

[proposed_code]
language = "python"
code = "open('proposal-ran', 'w').write('ran')"
'''
AGENT = "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [weather]\n---\n"


@pytest.mark.parametrize("name", ["w.msg.md", "w.msg.py"])
def test_jupytext_execute_leaves_code_a_reply_proposed_as_tce_exec_does(
    tmp_path: Path,
    openai_server: OpenAIServer,
    user_config_dir: Path,
    data_dir: Path,
    name: str,
) -> None:
    """nbclient runs every cell: code a prompt-injected reply proposed ran in the user's real
    kernel with their next jupytext --execute (papermill, nbconvert --execute), though it
    never runs by itself and a plain tce exec leaves it."""
    folder = tmp_path / "work"
    (folder / "toolbox").mkdir(parents=True)
    (folder / "toolbox" / "weather.py").write_text(
        (data_dir / "toolbox" / "weather.py").read_text()
    )
    path = folder / name
    path.write_text(AGENT if name.endswith(".md") else
                    "".join(f"# {line}\n" for line in AGENT.splitlines()))  # fmt: skip
    env = model_env(openai_server, user_config_dir)
    assert run_tce("trust", str(folder), cwd=folder, env=env).returncode == 0
    openai_server.script(PROPOSAL)
    chat = run_tce("chat", name, "-m", "Read my file", cwd=folder, env=env)
    assert chat.returncode == 0, chat.stderr
    openai_server.script('answer = "Done."')
    done = subprocess.run(
        [str(BIN / "jupytext"), "--execute", name], cwd=folder, env=env,
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not (folder / "proposal-ran").exists()
    proposal = [c for c in fmt.read(path)["cells"] if fmt.cell_kind(c) == "code"]
    assert [fmt.cell_attrs(c) for c in proposal] == [{"proposed": True}]
    assert not proposal[0]["outputs"] and proposal[0]["execution_count"] is None
    assert "proposed" in done.stderr  # said, as tce exec says it
    # the user runs it by naming it
    ran = run_tce("exec", name, "--cell", "2", cwd=folder, env=env)
    assert ran.returncode == 0, ran.stderr
    assert (folder / "proposal-ran").read_text() == "ran"


@pytest.mark.parametrize("name", ["chat.msg.md", "chat.msg.py"])
def test_a_notebook_made_from_a_cloned_message_file_runs_on_the_agent_kernel(
    tmp_path: Path, openai_server: OpenAIServer, user_config_dir: Path, name: str
) -> None:
    """README's way to run a conversation in a notebook pipeline: jupytext --to ipynb, then
    nbconvert --execute (or papermill). The .ipynb took the kernelspec the cloned file named
    (python3), so nbconvert ran the message text as Python, as the user, outside the sandbox."""
    mark = tmp_path / "ran"
    path = hostile(tmp_path / "clone", mark, name)
    env = model_env(openai_server, user_config_dir)
    openai_server.script("A summary.")
    made = subprocess.run([str(BIN / "jupytext"), "--to", "ipynb", path.name], cwd=path.parent,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)  # fmt: skip
    assert made.returncode == 0, made.stderr
    notebook = path.parent / (path.name.split(".")[0] + ".msg.ipynb")
    assert json.loads(notebook.read_text())["metadata"]["kernelspec"]["name"] == "percent-agent"
    done = subprocess.run(
        [str(BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--output",
         "out.ipynb", notebook.name],
        cwd=path.parent, env=env, capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert not mark.exists(), done.stderr
    assert done.returncode == 0, done.stderr
