"""Red team: our own processes started in a cloned folder run none of its code.

The folder (``hostile_folder`` in conftest.py) ships a module named like every module a process
of ours imports, the standard library and our dependencies included, a ``.jupytext.py``, a
``toolbox/``, a ``.env`` with fake keys, message files and a SOP folder; each piece of code
records that it ran. Each test starts one of our processes as a user starts it, inside that
folder, and checks that nothing of it ran and no fake key reached the model server.

To grow it: give ``HostileFolder`` the new thing a folder can ship, and add the process or the
way of starting it that the hole went through.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from jupyter_percent_agent import safe_start
from jupyter_percent_agent.kernel import KERNEL_NAME, kernelspec_dir
from jupyter_percent_agent.testing.environment import model_env as local_model_env
from jupyter_percent_agent.testing.environment import run_tce
from jupyter_percent_agent.testing.kernels import copy_kernelspec, execute
from jupyter_percent_agent.testing.openai_server import OpenAIServer

BIN = Path(sys.executable).parent
TIMEOUT = 60


def model_env(server: OpenAIServer, config_dir: Path, **extra: str) -> dict[str, str]:
    """The user's environment: the local model server, no key of theirs, none of the
    folder's variables."""
    env = {k: v for k, v in local_model_env(server, config_dir).items()
           if k not in ("PYTHONPATH", "PYTHONSAFEPATH") and not k.endswith("_API_KEY")}
    env.update(extra)
    return env


def cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().decode()
    return dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)


@pytest.fixture
def user_lib(tmp_path: Path) -> Path:
    """A folder of the user's own, named in their PYTHONPATH (trusted: it stays)."""
    folder = tmp_path / "user-lib"
    folder.mkdir()
    return folder


# -- how our processes start -----------------------------------------------------------------

def test_pythonpath_keeps_only_the_users_absolute_entries(user_lib: Path) -> None:
    env = {"PYTHONPATH": f":{user_lib}:lib:./x::/opt/y:", "HOME": "/home/me"}
    assert safe_start.safe_env(env) == {"PYTHONPATH": f"{user_lib}:/opt/y", "HOME": "/home/me"}
    assert safe_start.safe_env({"PYTHONPATH": ":rel"}) == {}
    assert safe_start.safe_env({"PATH": "/bin"}) == {"PATH": "/bin"}


def test_the_kernelspec_and_the_helper_start_python_without_the_working_folder() -> None:
    argv = json.loads((kernelspec_dir() / "kernel.json").read_text())["argv"]
    # "python" is replaced by jupyter_client (and so JupyterLab) with its own interpreter
    assert argv == ["python", "-I", "-m", "jupyter_percent_agent.safe_start",
                    "jupyter_percent_agent.kernel", "-f", "{connection_file}"]
    assert safe_start.python_command("jupyter_percent_agent.runtime.helper", "S")[1:] == [
        "-P", "-m", "jupyter_percent_agent.runtime.helper", "S"]


def test_safe_start_runs_our_modules_only(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-I", "-m", "jupyter_percent_agent.safe_start",
                           "os"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert done.returncode != 0 and "usage:" in done.stderr


# -- the Agent kernel ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> KernelSpecManager:
    folder = tmp_path_factory.mktemp("jupyter") / "kernels"
    copy_kernelspec(folder)
    return KernelSpecManager(kernel_dirs=[str(folder)])


@pytest.mark.parametrize("pythonpath", ["unset", "with an empty entry"])
def test_the_agent_kernel_started_in_a_cloned_folder_runs_none_of_it(
        hostile_folder, kernels: KernelSpecManager, openai_server: OpenAIServer,
        user_config_dir: Path, user_lib: Path, pythonpath: str) -> None:
    """As jupyter_client (and JupyterLab) starts it: the notebook's folder as its working
    directory, the server's environment (whose PYTHONPATH may have an empty entry: the
    working folder, wherever that is)."""
    extra = {"JPY_SESSION_NAME": str(hostile_folder.path / "chat.msg.md")}
    if pythonpath != "unset":
        extra["PYTHONPATH"] = f":{user_lib}"
    openai_server.script("Hello from the model.")
    km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=kernels)
    km.start_kernel(env=model_env(openai_server, user_config_dir, **extra),
                    cwd=str(hostile_folder.path))
    kc = km.client()
    try:
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=TIMEOUT)
        except RuntimeError as err:
            pytest.fail(f"{err}; what of the folder ran: {hostile_folder.ran()}")
        pid = km.provisioner.process.pid  # replaced in place: the same process id
        assert cmdline(pid)[1:4] == ["-P", "-m", "jupyter_percent_agent.kernel"]
        assert environ(pid).get("PYTHONPATH") == (None if pythonpath == "unset"
                                                  else str(user_lib))
        reply, _ = execute(kc, "Say hello.", "h1", timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert len(openai_server.chat_requests) == 1
    assert hostile_folder.ran() == []
    assert hostile_folder.keys_sent(openai_server.requests) == []


@pytest.mark.slow
def test_a_jupyter_server_opening_and_running_a_cloned_folder_runs_none_of_it(
        hostile_folder, tmp_path: Path, openai_server: OpenAIServer, user_config_dir: Path,
        user_lib: Path, jupyter_server) -> None:
    """As JupyterLab does it, hidden files allowed (a common setting), with the kernelspec
    the package installed: open the message file, start a session, run its message, save.
    The server runs elsewhere, with an empty entry in its PYTHONPATH."""
    openai_server.script("Hello from the model.")
    server = jupyter_server(hostile_folder.path, "--ContentsManager.allow_hidden=True",
                            env=model_env(openai_server, user_config_dir,
                                          PYTHONPATH=f":{user_lib}"), cwd=tmp_path)
    model = server.first("GET", "/api/contents/chat.msg.md")
    assert model["type"] == "notebook"
    kc = server.start_session("chat.msg.md", KERNEL_NAME, timeout=TIMEOUT)
    reply, _ = execute(kc, "Say hello.", "h1", timeout=TIMEOUT)
    assert reply["content"]["status"] == "ok", reply["content"]
    server.api("PUT", "/api/contents/chat.msg.md",
               {"type": "notebook", "format": "json", "content": model["content"]})
    assert len(openai_server.chat_requests) == 1
    assert hostile_folder.ran() == []
    assert hostile_folder.keys_sent(openai_server.requests) == []
    assert f"skipped {hostile_folder.path / '.jupytext.py'}" in server.log.read_text()


# -- the contents manager ------------------------------------------------------------------

@pytest.fixture
def jp_root_dir(hostile_folder) -> Path:
    return hostile_folder.path


@pytest.fixture
def jp_argv() -> list[str]:
    """Hidden files allowed, as in the server test above (a common setting)."""
    return ["--ContentsManager.allow_hidden=True"]

@pytest.fixture
def server_warnings(jp_serverapp) -> Iterator[list[str]]:
    """What the contents manager logs as warnings."""
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Keep(logging.WARNING)
    log = jp_serverapp.contents_manager.log
    log.addHandler(handler)
    yield seen
    log.removeHandler(handler)


async def test_the_contents_manager_runs_no_python_jupytext_configuration_of_a_clone(
        hostile_folder, jp_fetch, server_warnings: list[str]) -> None:
    for name in ("chat.msg.md", "tools.msg.md"):
        response = await jp_fetch("api", "contents", name, method="GET")
        model = json.loads(response.body)
        assert model["type"] == "notebook"
        await jp_fetch("api", "contents", name, method="PUT", body=json.dumps(
            {"type": "notebook", "format": "json", "content": model["content"]}))
    assert hostile_folder.ran() == []
    folder = hostile_folder.path
    assert f"[jupyter-percent-agent] skipped {folder / '.jupytext.py'}: a jupytext " \
           f"configuration written in Python runs as you, and {folder} is not a trusted " \
           f"folder; to allow it: tce trust {folder}" in server_warnings


async def test_a_trusted_folder_s_python_jupytext_configuration_runs_in_the_server(
        hostile_folder, jp_fetch, trusted, server_warnings: list[str]) -> None:
    trusted(hostile_folder.path)
    await jp_fetch("api", "contents", "chat.msg.md", method="GET")
    assert hostile_folder.ran() == [".jupytext.py"]
    assert not [w for w in server_warnings if "skipped" in w]


# -- the jupytext command ------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--to", "ipynb"], ["--sync"]], ids=["to-ipynb", "sync"])
def test_the_jupytext_command_on_a_cloned_message_file_runs_none_of_it(
        hostile_folder, args: list[str]) -> None:
    done = subprocess.run([str(BIN / "jupytext"), *args, "chat.msg.md"], cwd=hostile_folder.path,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert hostile_folder.ran() == []
    folder = hostile_folder.path
    assert (f"jupyter-percent-agent: skipped {folder / '.jupytext.py'}: a jupytext "
            f"configuration written in Python runs as you, and {folder} is not a trusted "
            f"folder; to allow it: tce trust {folder}\n") in done.stderr


def test_a_trusted_folder_s_python_jupytext_configuration_runs_in_the_command(
        hostile_folder, trusted) -> None:
    trusted(hostile_folder.path)
    done = subprocess.run([str(BIN / "jupytext"), "--to", "ipynb", "chat.msg.md"],
                          cwd=hostile_folder.path, capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert hostile_folder.ran() == [".jupytext.py"]
    assert "skipped" not in done.stderr


# -- tce and its warm helper ---------------------------------------------------------------


def helper_pids(marker: str) -> list[int]:
    """Pids of live warm helper processes whose command line names ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = cmdline(int(entry.name))
            except OSError:
                continue
            if "jupyter_percent_agent.runtime.helper" in args and any(marker in a for a in args):
                found.append(int(entry.name))
    return found


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """An ``XDG_RUNTIME_DIR`` of its own, short enough for a Unix socket's path."""
    folder = Path(tempfile.mkdtemp(prefix="pa-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_tce_chat_and_its_warm_helper_in_a_cloned_folder_run_none_of_it(
        hostile_folder, runtime_dir: Path, openai_server: OpenAIServer,
        user_config_dir: Path) -> None:
    runtime = runtime_dir
    # calls that need litellm (a helper serves those; the direct path starts none)
    env = model_env(openai_server, user_config_dir, PERCENT_AGENT_WARM="1",
                    PERCENT_AGENT_WARM_IDLE="60", XDG_RUNTIME_DIR=str(runtime),
                    PERCENT_AGENT_DIRECT="0")
    try:
        first = run_tce("chat", "chat.msg.md", "-m", "Say hello.", cwd=hostile_folder.path, env=env)
        assert first.returncode == 0, first.stderr
        deadline = time.monotonic() + 3 * TIMEOUT  # the helper it started imports litellm
        while not list(runtime.glob("percent-agent/*.sock")) and time.monotonic() < deadline:
            time.sleep(0.2)

        assert list(runtime.glob("percent-agent/*.sock")), hostile_folder.ran()
        (pid,) = helper_pids(str(runtime))
        assert cmdline(pid)[1:3] == ["-P", "-m"]
        second = run_tce("chat", "chat.msg.md", "-m", "Again.", cwd=hostile_folder.path, env=env)
        assert second.returncode == 0, second.stderr
        refused = run_tce("chat", "tools.msg.md", "-m", "A note.", cwd=hostile_folder.path, env=env)
        assert refused.returncode == 6 and "to allow it: tce trust" in refused.stderr
    finally:
        for pid in helper_pids(str(runtime)):
            os.kill(pid, signal.SIGTERM)
    assert len(openai_server.chat_requests) == 2
    assert hostile_folder.ran() == []
    assert hostile_folder.keys_sent(openai_server.requests) == []


def test_tce_run_in_a_cloned_folder_runs_none_of_it(
        hostile_folder, openai_server: OpenAIServer, user_config_dir: Path) -> None:
    openai_server.script("a draft")
    done = run_tce("run", "w/draft", "--sop", "sop", "--context", '{"topic": "spring"}', "--json",
               cwd=hostile_folder.path, env=model_env(openai_server, user_config_dir))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["context"]["draft"] == "a draft"
    assert hostile_folder.ran() == []
    assert hostile_folder.keys_sent(openai_server.requests) == []


# -- no .env -------------------------------------------------------------------------------

def test_litellm_reads_no_dotenv_in_a_cloned_folder(hostile_folder, user_config_dir: Path,
                                                    openai_server: OpenAIServer) -> None:
    """python-dotenv looks in the working folder when ``__main__`` has no file (a kernel,
    ``python -c``), else upwards from litellm's folder (a virtual environment inside a clone)."""
    code = ("import json, os\n"
            "from jupyter_percent_agent.litellm_setup import import_litellm\n"
            "import_litellm()\n"
            "print(json.dumps({k: os.environ.get(k) for k in "
            "('OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'PERCENT_AGENT_API_KEY', "
            "'PERCENT_AGENT_API_BASE')}))\n")
    done = subprocess.run([sys.executable, "-P", "-c", code], cwd=hostile_folder.path,
                          env=model_env(openai_server, user_config_dir), capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None,
                                       "PERCENT_AGENT_API_KEY": None,
                                       "PERCENT_AGENT_API_BASE": openai_server.url}


# -- Dask workers --------------------------------------------------------------------------

def test_a_dask_worker_that_may_import_from_its_folder_runs_no_job(
        hostile_folder, tmp_path: Path, openai_server: OpenAIServer, user_config_dir: Path,
        user_lib: Path) -> None:
    """A worker started without PYTHONSAFEPATH (here: ``python -c``, as multiprocessing starts
    Dask's worker processes), or with an empty entry in its PYTHONPATH, refuses the job and
    says how to start it; one started safely, in a folder that is on its path by the user's
    choice (an absolute entry), runs it."""
    openai_server.script("a draft")
    spec = {"sop": str(hostile_folder.path / "sop"), "task_id": "w/draft", "index": 1,
            "context": {"topic": "spring"}, "runs_dir": str(tmp_path / "runs")}
    code = ("import json, sys\nfrom jupyter_percent_agent.tasks.batch import run_remote\n"
            "print(json.dumps(run_remote(json.loads(sys.argv[1]))))\n")

    def worker(flags: list[str], **env: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, *flags, "-c", code, json.dumps(spec)],
                              cwd=user_lib, env=model_env(openai_server, user_config_dir, **env),
                              capture_output=True, text=True, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    for refused in (worker([]), worker(["-P"], PYTHONPATH=f":{user_lib}")):
        assert refused["status"] == "failed"
        assert refused["error"]["error_type"] == "trust_error"
        assert "start the workers with PYTHONSAFEPATH=1" in refused["error"]["message"]
    assert openai_server.chat_requests == []
    ran = worker(["-P"], PYTHONPATH=str(user_lib))
    assert ran["status"] == "succeeded", ran
    assert len(openai_server.chat_requests) == 1


@pytest.mark.slow
def test_dask_workers_started_as_documented_in_a_cloned_folder_run_none_of_it(
        hostile_folder, local_model: OpenAIServer, dask_cluster) -> None:
    local_model.script("a draft")
    address = dask_cluster(cwd=hostile_folder.path, workers=1)
    inputs = hostile_folder.path / "topics.jsonl"
    inputs.write_text('{"topic": "spring"}\n')
    done = run_tce("run", "w/draft", "--sop", "sop", "--inputs", "topics.jsonl", "--cluster",
               address, "--json", cwd=hostile_folder.path, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "succeeded"
    assert hostile_folder.ran() == []
    assert hostile_folder.keys_sent(local_model.requests) == []
