"""Trust follows the conversation's own file, never the folder a command or runner works in.

Each surface that turns a path into a trust decision (docs/security.md, "Where each trust
decision takes its path from"), run as a user does: from a trusted project folder, on a
cloned message file (or the notebook converted from one) kept elsewhere. The clone's
``[code]`` cell would write the user's key into a file of the project if it ran as the user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_percent_agent import trust
from jupyter_percent_agent.testing.environment import model_env
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from jupyter_percent_agent.trust.withholding import Withheld, withholding
from tests.paths import TEST_DATA

BIN = Path(sys.executable).parent
TCE = [sys.executable, "-c", "from jupyter_percent_agent.cli import main; main()"]
KEY = "tok-project-key-0123456789"


@pytest.fixture
def project(tmp_path: Path, trusted) -> Path:
    """The user's trusted project folder: where the commands run."""
    folder = tmp_path / "project"
    folder.mkdir()
    trusted(folder)
    return folder


@pytest.fixture
def cloned_file(tmp_path: Path, project: Path) -> Path:
    """A cloned message file outside the project: one ``[code]`` cell that, run as the user,
    writes the user's key into ``project/stolen``."""
    folder = tmp_path / "clone"
    folder.mkdir()
    path = folder / "x.msg.md"
    path.write_text(
        "# %% Run[^c1]\n[^c1]: [code]\n\n```python\nimport os\n"
        f"open({str(project / 'stolen')!r}, 'w').write(os.environ.get('MY_KEY', ''))\n```\n",
        encoding="utf-8")
    return path


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def runner_env(
    openai_server: OpenAIServer, user_config_dir: Path, tmp_path: Path
) -> dict[str, str]:
    """What the commands get: the local model, the user's key, the project's kernelspec."""
    from jupyter_percent_agent.testing.kernels import copy_kernelspec

    data = tmp_path / "jupyter-data"
    copy_kernelspec(data / "kernels")
    return model_env(openai_server, user_config_dir, JUPYTER_PATH=str(data),
                     JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), PERCENT_AGENT_PRELOAD="0",
                     MY_KEY=KEY, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def test_tce_exec_from_a_trusted_folder_takes_the_files_own_folder(
    project: Path, cloned_file: Path, runner_env: dict[str, str]
) -> None:
    done = _run([*TCE, "exec", os.path.relpath(cloned_file, project)], project, runner_env)
    assert done.returncode == 6, done.stderr
    assert "refused: cell c1 needs a real kernel" in done.stderr
    assert "to run it: tce trust ../clone" in done.stderr  # the file's folder, as given
    assert not (project / "stolen").exists()


def test_jupytext_execute_with_a_trusted_run_path_runs_a_clone_untrusted(
    project: Path, cloned_file: Path, runner_env: dict[str, str], openai_server: OpenAIServer
) -> None:
    """``--run-path`` starts the kernel in the project: no message file there holds the
    clone's cells, so nothing confirms the conversation's file and it runs untrusted (the
    project's trust used to apply to a cell the kernel could not place)."""
    openai_server.script("Seen.")
    done = _run([str(BIN / "jupytext"), "--execute", "--run-path", str(project), str(cloned_file)],
                project, runner_env)
    said = [line for line in done.stderr.splitlines() if "percent-agent: " in line]
    assert len(said) == 1 and "runs untrusted" in said[0], done.stderr
    assert f"no message file of {project}" in said[0]
    assert not (project / "stolen").exists()


def test_nbconvert_execute_writing_into_a_trusted_folder_runs_in_the_notebooks_folder(
    project: Path, cloned_file: Path, runner_env: dict[str, str]
) -> None:
    """nbconvert starts the kernel in the notebook's own folder, wherever its output goes:
    the clone's, not trusted; a second run finds its first output in the project but runs
    in the clone's folder all the same."""
    converted = _run([str(BIN / "jupytext"), "--to", "ipynb", cloned_file.name],
                     cloned_file.parent, runner_env)
    assert converted.returncode == 0, converted.stderr
    cmd = [str(BIN / "jupyter"), "nbconvert", "--execute", "--to", "notebook",
           "--output-dir", str(project), str(cloned_file.with_suffix(".ipynb"))]
    for _ in range(2):
        done = _run(cmd, project, runner_env)
        assert done.returncode != 0  # the sandbox refused the cell
        assert "needs a real kernel" in done.stderr
        assert f"tce trust {cloned_file.parent}" in done.stderr
    assert not (project / "stolen").exists()


def test_while_trust_is_withheld_no_folder_is_trusted_and_refusals_say_why(
    project: Path
) -> None:
    reason = Withheld("the runner named no file", "tce exec FILE")
    assert trust.is_trusted(project)
    with withholding(reason):
        assert not trust.is_trusted(project) and not trust.auto_runs(project)
        refusal = trust.refuse_toolbox(project, "this tool call")
        assert refusal.folder is None and refusal.ename == "TrustError"  # no trust dialog
        assert str(refusal).endswith("this conversation runs untrusted: the runner named no "
                                     "file; to run it trusted: tce exec FILE")
        assert f"tce trust {project}" not in str(refusal)
    assert trust.is_trusted(project)
    assert f"tce trust {project}" in str(trust.refuse_toolbox(project, "x"))


def test_mcp_serve_started_in_a_trusted_folder_judges_a_served_clone_by_its_own_folder(
    tmp_path: Path, project: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    """``tce mcp serve`` run from the trusted project, serving a cloned folder: a conversation
    there whose agent uses the clone's ``toolbox/`` is refused (the clone's folder, not the
    server's working folder, is judged), and its code is never imported."""
    import asyncio

    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    served = tmp_path / "cloned"
    (served / "toolbox").mkdir(parents=True)
    marker = project / "imported"
    (served / "toolbox" / "vault.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        + (TEST_DATA / "clients" / "vault.py").read_text(), encoding="utf-8")
    (served / "v.msg.md").write_text(
        "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [vault]\n---\n\n"
        "## %% Ask[^a1]\n[^a1]: [markdown]\n\nFetch the token.\n", encoding="utf-8")
    env = model_env(openai_server, user_config_dir)
    params = StdioServerParameters(command=str(BIN / "tce"), args=["mcp", "serve", str(served)],
                                   env=env, cwd=str(project))

    async def go() -> object:
        with open(os.devnull, "w") as log:
            async with Client(stdio_client(params, errlog=log), read_timeout_seconds=60) as c:
                return await c.call_tool("send_message", {"path": "cloned/v.msg.md",
                                                          "message": "Fetch the token."})

    result = asyncio.run(go())
    text = json.dumps([getattr(c, "text", "") for c in result.content])
    assert "toolbox" in text and f"tce trust {served}" in text, text
    assert not marker.exists() and openai_server.chat_requests == []


def test_tce_run_from_a_trusted_folder_judges_the_sop_folders_own_project(
    tmp_path: Path, project: Path, runner_env: dict[str, str], openai_server: OpenAIServer
) -> None:
    """``tce run`` from the trusted project on a cloned SOP folder kept elsewhere: the clone's
    toolbox is refused by the clone's own folder (the working folder lends it nothing)."""
    import shutil

    blog = tmp_path / "blog"
    shutil.copytree(TEST_DATA / "sop" / "seed_blog", blog)
    marker = project / "imported"
    for tool in (blog / "toolbox").glob("*.py"):
        tool.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
                        + tool.read_text(encoding="utf-8"), encoding="utf-8")
    context = json.dumps({"标题": "x", "大纲": ["a"]}, ensure_ascii=False)
    done = _run([*TCE, "run", "blog/generate_images", "--sop", os.path.relpath(blog / "sop",
                 project), "--context", context, "--yes"], project, runner_env)
    assert done.returncode == 6, done.stdout + done.stderr  # refused, as every trust refusal
    assert "would import the toolbox/" in done.stderr and "tce trust ../blog" in done.stderr
    assert not marker.exists() and openai_server.chat_requests == []
