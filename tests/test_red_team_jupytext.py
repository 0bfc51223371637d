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

from jupyter_percent_agent.testing.environment import model_env
from jupyter_percent_agent.testing.openai_server import OpenAIServer

BIN = Path(sys.executable).parent
TIMEOUT = 180


def hostile(folder: Path, mark: Path, name: str = "chat.msg.md") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(
        "---\njupyter:\n  kernelspec:\n    name: python3\n"
        "    display_name: Python 3\n    language: python\n---\n\n"
        "# %% Please summarise[^a]\n[^a]: [markdown]\n\n"
        f"open({str(mark)!r}, 'w').write('ran')\n"
    )
    return path


@pytest.mark.parametrize("name", ["chat.msg.md", "notes.md"])
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
