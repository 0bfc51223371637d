"""Real clients and careless hands: what a new user does in a terminal, with the real ``tce``
command, ``jupyter_client``, ``jupyter run`` and the ``jupytext`` command, loses nothing and
surprises no one. One test (or a few) per item of the checklist:

1. validate first, write once: a refused or failed command leaves the file byte-identical;
2. an id-shaped argument that matches nothing asks "did you mean ...?" and runs nothing;
3. the agent kernel under nbclient (``jupytext --execute``, papermill, ``jupyter nbconvert
   --execute``) runs each cell by its kind, and the saved file is the one ``tce exec`` writes;
   a trusted folder's trust applies only when a message file there holds the cells;
4. the kernel's outputs carry ``text/plain`` beside rich types (the file keeps its form);
5. warm helpers are bounded, listed and stopped;
6. ``--resume`` takes any path form; a batch resumes without doing an input twice;
7. errors name their real cause, the same one line in ``tce`` and ``jupytext``;
8. sensitive values are masked wherever text leaves the process.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
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

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.environment import model_env, run_tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.paths import TEST_DATA

DATA = TEST_DATA
TCE = [sys.executable, "-c", "from jupyter_percent_agent.cli import main; main()"]


# -- 8. sensitive values are masked ----------------------------------------------------------

VAULT_HEADER = "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [vault]\n---\n"


def _tool_step(call: str) -> str:
    return (
        f'thought = """I fetch it."""\n\n[tool_call]\nstatus = "success"\n'
        f"target = \"fetch\"\ncode = '''\n__result__ = {call}\n'''\n"
    )


def _answer(text: str) -> str:
    return f'thought = """Done."""\n\n[final_answer]\nstatus = "success"\ncontent = """{text}"""\n'


@pytest.fixture
def vault_file(tmp_path: Path, trusted) -> Path:
    folder = tmp_path / "work"
    (folder / "toolbox").mkdir(parents=True)
    shutil.copy(DATA / "clients" / "vault.py", folder / "toolbox" / "vault.py")
    trusted(folder)
    path = folder / "v.msg.md"
    path.write_text(VAULT_HEADER)
    return path


@pytest.mark.parametrize(
    ("call", "name", "value", "store"),
    [
        ("service_token()", "MY_SERVICE_TOKEN", "tok-9f8e7d6c5b4a3210", False),
        ("stored_openai_key()", "OPENAI_API_KEY", "sk-stored-0123456789abcdef", True),
    ],
)
def test_a_key_a_trusted_tool_returns_is_masked_in_the_file_the_request_and_the_terminal(
    vault_file: Path,
    env: dict[str, str],
    openai_server: OpenAIServer,
    call: str,
    name: str,
    value: str,
    store: bool,
) -> None:
    if store:
        p = run_tce("keys", "set", "openai", env=env, input=value + "\n")
        assert p.returncode == 0, p.stderr
        env = {k: v for k, v in env.items() if k != "OPENAI_API_KEY"}
    else:
        env = {**env, name: value}
    openai_server.script(_tool_step(call), _answer("Here it is."))
    p = run_tce("chat", str(vault_file), "-m", "Fetch my secret, please.", env=env)
    assert p.returncode == 0, p.stderr
    masked = f"[masked {name}]"
    # the tool did return the value: its result, masked, reached the model
    second = openai_server.chat_requests[1].messages
    assert masked in second[-1]["content"]
    assert all(value not in str(r.messages) for r in openai_server.chat_requests)
    text = vault_file.read_text()
    assert masked in text and value not in text
    assert value not in p.stdout and value not in p.stderr
    assert masked in p.stderr  # the tool step shown on the terminal, masked
    # and the next turn sends the history (read from the file) still masked
    openai_server.script("Fine.")
    p = run_tce("chat", str(vault_file), "-m", "Thanks.", env=env)
    assert p.returncode == 0, p.stderr
    assert value not in str(openai_server.chat_requests[-1].messages)


def test_a_key_streamed_in_pieces_never_reaches_the_terminal(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    """A reply streams a few characters at a time: the key is split across pieces, and the
    terminal still shows it masked, and no piece of it."""
    from jupyter_percent_agent.testing.openai_server import Reply

    key = "sk-streamed-9a8b7c6d5e4f"
    openai_server.script(Reply(f"Your key is {key}, keep it safe.", chunk_size=3))
    p = run_tce("chat", str(tmp_path / "s"), "-m", "my key?", env={**env, "MY_API_KEY": key})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "Your key is [masked MY_API_KEY], keep it safe."
    assert key[:6] not in p.stdout + p.stderr
    assert key not in (tmp_path / "s.msg.md").read_text()


ENCODED_TOKEN = "tok-9f8e7d6c5b4a3210>>?"  # 23 characters: its base64 holds "+" and "="


def _encoded(value: str, form: str) -> str:
    import base64

    raw = value.encode()
    return {"base64": base64.b64encode(raw).decode(),
            "urlsafe": base64.urlsafe_b64encode(raw).decode().rstrip("="),
            "hex": raw.hex(), "HEX": raw.hex().upper()}[form]


@pytest.mark.parametrize("form", ["base64", "urlsafe", "hex", "HEX"])
def test_a_key_a_trusted_tool_returns_encoded_is_masked_in_the_file_the_request_and_the_terminal(
    vault_file: Path, env: dict[str, str], openai_server: OpenAIServer, form: str
) -> None:
    encoded = _encoded(ENCODED_TOKEN, form)
    openai_server.script(_tool_step(f"encoded_service_token({form!r})"), _answer("Here it is."))
    p = run_tce("chat", str(vault_file), "-m", "Fetch my secret, please.",
            env={**env, "MY_SERVICE_TOKEN": ENCODED_TOKEN})
    assert p.returncode == 0, p.stderr
    assert "Authorization: Basic [masked MY_SERVICE_TOKEN]" in str(
        openai_server.chat_requests[1].messages)
    assert all(encoded not in str(r.messages) for r in openai_server.chat_requests)
    text = vault_file.read_text()
    assert "Basic [masked MY_SERVICE_TOKEN]" in text and encoded not in text
    assert encoded not in p.stdout + p.stderr


@pytest.mark.parametrize("form", ["base64", "hex"])
def test_an_encoded_key_streamed_in_pieces_never_reaches_the_terminal(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer, form: str
) -> None:
    from jupyter_percent_agent.testing.openai_server import Reply

    encoded = _encoded(ENCODED_TOKEN, form)
    openai_server.script(Reply(f"Send Basic {encoded} as the header.", chunk_size=3))
    p = run_tce("chat", str(tmp_path / "s"), "-m", "the header?",
            env={**env, "MY_API_KEY": ENCODED_TOKEN})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "Send Basic [masked MY_API_KEY] as the header."
    assert encoded[:6] not in p.stdout + p.stderr
    assert encoded not in (tmp_path / "s.msg.md").read_text()


@pytest.mark.parametrize("name", ["talk.msg.md", "talk.msg.py"])
def test_every_message_file_form_is_masked_when_written(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The format writer is the one masking step for files: a script message file too."""
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-9f8e7d6c5b4a3210")
    nb = fmt.reads("# %%[^a]\n[^a]: [markdown]\n\nmy token is tok-9f8e7d6c5b4a3210\n")
    text = fmt.writes(nb, path=name)
    assert "[masked MY_SERVICE_TOKEN]" in text and "tok-9f8e7d6c5b4a3210" not in text


def test_short_values_and_other_names_are_not_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_percent_agent import masking

    monkeypatch.setenv("SHORT_TOKEN", "abc1234")  # 7 characters: would mask ordinary words
    monkeypatch.setenv("HOME_DIRECTORY", "/home/someone-else")
    monkeypatch.setenv("DB_PASSWORD", "correct horse battery")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_" + "x" * 20)
    text = "abc1234 /home/someone-else correct horse battery ghp_" + "x" * 20
    assert masking.mask(text) == (
        "abc1234 /home/someone-else [masked DB_PASSWORD] [masked GITHUB_TOKEN]"
    )
    path = tmp_path / "m.msg.md"
    nb = fmt.reads(
        "# %% Note[^a1]\n\n[^a1]: [markdown]\n\nmy password: correct horse battery\n",
        path=str(path),
    )
    fmt.write(nb, path)
    assert "[masked DB_PASSWORD]" in path.read_text()
    assert "correct horse battery" not in path.read_text()


# -- 4. the kernel speaks plain text too; 8. and masks ----------------------------------------

TOKEN = "tok-kernel-5a4b3c2d1e0f"


@pytest.fixture
def kernel_home(
    tmp_path: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> tuple[Path, dict[str, str]]:
    """A Jupyter data folder holding the project's kernelspec, and the environment a kernel
    started by any client gets (the local model, a token in the environment)."""
    from jupyter_percent_agent.testing.kernels import copy_kernelspec

    data = tmp_path / "jupyter-data"
    copy_kernelspec(data / "kernels")
    env = model_env(
        openai_server,
        user_config_dir,
        JUPYTER_PATH=str(data),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        PERCENT_AGENT_PRELOAD="0",
        MY_SERVICE_TOKEN=TOKEN,
    )
    return data, env


def _iopub_until_idle(kc, msg_id: str) -> list[dict]:
    got = []
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return got
        got.append(m)


@contextlib.contextmanager
def _agent_kernel(kernel_home: tuple[Path, dict[str, str]], cwd: Path) -> Iterator[Any]:
    """A client of the Agent kernel started by jupyter_client from ``kernel_home``'s
    kernelspec in ``cwd``, ready; the kernel is shut down on leaving."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    from jupyter_percent_agent.kernel import KERNEL_NAME

    data, env = kernel_home
    km = KernelManager(
        kernel_name=KERNEL_NAME,
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(data / "kernels")]),
    )
    km.start_kernel(env=env, cwd=str(cwd))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_kernel_outputs_carry_plain_text_and_masked_values_over_jupyter_client(
    tmp_path: Path, kernel_home: tuple[Path, dict[str, str]], openai_server: OpenAIServer
) -> None:
    folder = tmp_path / "chat"
    folder.mkdir()
    openai_server.script(f"Your **token** is {TOKEN}.")
    with _agent_kernel(kernel_home, folder) as kc:
        msg_id = kc.execute("What is my token?")
        got = _iopub_until_idle(kc, msg_id)
    shown = [m["content"] for m in got if m["msg_type"] in ("display_data", "update_display_data")]
    assert shown
    assert all("text/plain" in c["data"] for c in shown)
    final = shown[-1]
    assert final["data"]["text/plain"] == "Your **token** is [masked MY_SERVICE_TOKEN]."
    assert TOKEN not in str(got)
    # what JupyterLab would save: the file's own form, no plain copy, no mark
    out = {"output_type": "display_data", "data": final["data"], "metadata": final["metadata"]}
    nb = fmt.reads("# %% Q[^q1]\n\n[^q1]: [markdown]\n\nWhat is my token?\n")
    nb["cells"][0]["outputs"] = [out]
    plain = fmt.reads(fmt.writes(nb))
    assert fmt.writes(plain) == fmt.writes(nb)
    (back,) = plain["cells"][0]["outputs"]
    assert list(back["data"]) == ["text/markdown"]
    assert "plain_copy" not in str(back["metadata"])


def test_jupyter_run_shows_the_reply_as_text(
    tmp_path: Path, kernel_home: tuple[Path, dict[str, str]], openai_server: OpenAIServer
) -> None:
    """``jupyter run`` (jupyter_client's own terminal client) prints only ``text/plain``."""
    from jupyter_percent_agent.kernel import KERNEL_NAME

    _data, env = kernel_home
    question = tmp_path / "question.md"
    question.write_text("Capital of Italy?\n")
    openai_server.script("It is *Rome*.")
    jupyter = Path(sys.executable).with_name("jupyter")
    p = subprocess.run(
        [str(jupyter), "run", f"--kernel={KERNEL_NAME}", str(question)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "It is *Rome*." in p.stdout


# -- 1. validate everything first, then write once --------------------------------------------

CONVERSATION = "# %% Hi[^a1]\n[^a1]: [markdown]\n\nhello\n"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-i", "missing.msg.md/[1]"], "missing.msg.md"),
        (["-i", "[9]"], "selects no cell"),
        (["-i", "other/[5]"], "selects no cell"),
        (["-i", "other/[1"], "not closed"),
        (["-e", "[x]"], "not an index"),
        (["--save", "-i", "missing/[1]"], "missing"),
        (["nobody-agent"], "nobody-agent"),
    ],
)
def test_a_command_that_fails_its_validation_leaves_the_file_byte_identical(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer, args: list[str], says: str
) -> None:
    path = tmp_path / "a.msg.md"
    path.write_bytes(CONVERSATION.encode())  # not the canonical form: any write would show
    (tmp_path / "other.msg.md").write_text(fmt.writes(fmt.reads(CONVERSATION)))
    agent = [a for a in args if not a.startswith(("-", "[")) and "/" not in a]
    options = [a for a in args if a not in agent]
    p = run_tce("chat", str(path), *agent, "-m", "a new message", *options, env=env, cwd=tmp_path)
    assert p.returncode != 0
    assert says in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert path.read_bytes() == CONVERSATION.encode()
    assert not openai_server.chat_requests


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        (
            "talk.ipynb",
            '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n',
            "a Jupyter notebook",
        ),
        ("notes.txt", "my notes\n", "not a Markdown file"),
        ("data.md", "\x00\x01binary", "not a text file"),
    ],
)
def test_tce_never_writes_into_a_file_it_cannot_read_as_markdown(
    tmp_path: Path,
    env: dict[str, str],
    openai_server: OpenAIServer,
    name: str,
    content: str,
    says: str,
    force: bool,
) -> None:
    path = tmp_path / name
    path.write_text(content)
    p = run_tce("chat", str(path), "-m", "hello", *(["--force"] if force else []), env=env)
    assert p.returncode != 0
    (line,) = p.stderr.strip().splitlines()
    assert says in line and name in line
    for args in (["set-default", str(path), "default"], ["list", str(path)]):
        p = run_tce(*args, env=env)
        assert p.returncode == 3 and p.stderr.strip().splitlines() == [line], p.stderr
    assert path.read_text() == content
    assert not openai_server.chat_requests


def test_force_adds_a_discussion_to_a_plain_markdown_file_only_with_the_message(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nSome text.\n")
    p = run_tce("chat", str(path), "-m", "hello", "--force", "-i", "[4]", env=env)
    assert p.returncode == 2 and "selects no cell" in p.stderr
    assert path.read_text() == "# Notes\n\nSome text.\n"  # no Discussion added before the check
    openai_server.script("Hi there.")
    p = run_tce("chat", str(path), "-m", "hello", "--force", env=env)
    assert p.returncode == 0, p.stderr
    text = path.read_text()
    assert "## Discussion" in text and "Some text." in text and "Hi there." in text


# -- 2. an id-shaped argument that matches nothing: "did you mean", nothing runs -------------


@pytest.fixture
def blog(tmp_path: Path, trusted) -> Path:
    shutil.copytree(DATA / "sop" / "seed_blog", tmp_path / "blog")
    trusted(tmp_path / "blog")
    return tmp_path / "blog"


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("blog/generate_blgo", "blog/generate_blog"),
        ("blog/generate-blog", "blog/generate_blog"),
        ("generate_blog", "blog/generate_blog"),
    ],
)
def test_a_task_id_with_a_typo_is_refused_with_did_you_mean_and_nothing_runs(
    blog: Path, env: dict[str, str], openai_server: OpenAIServer, typo: str, meant: str
) -> None:
    p = run_tce("run", typo, "--sop", str(blog / "sop"), "--context", "{}", env=env, cwd=blog)
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert f"no task {typo!r}" in line and f"did you mean {meant}" in line
    assert "the index picks" not in p.stderr
    assert not (blog / "sop" / "runs").exists() and not (blog / "runs").exists()
    assert not openai_server.chat_requests


def test_a_request_in_words_with_no_plan_to_pick_is_one_usage_line(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    """With no plan in the folder, a request in words was reported as a problem of a file
    named after it ("write a blog.md: task_id: no document ...", exit 3)."""
    sop = tmp_path / "sop"
    sop.mkdir()
    (sop / "draft.md").write_text(
        "---\ntask_id: draft\ntask_type: execute\n---\n\n## parameters.prompt\nDraft.\n")
    p = run_tce("run", "write a blog", "--sop", str(sop), env=env, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line == ("tce: no task 'write a blog' in " + str(sop) + ", and no plan in it for "
                    "a request in words; nothing was run")
    assert not openai_server.chat_requests


def test_an_agent_name_with_a_typo_is_refused_with_did_you_mean(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    path = tmp_path / "a.msg.md"
    path.write_text("---\nagents:\n  writer:\n    models: [test-model]\n---\n")
    before = path.read_bytes()
    p = run_tce("chat", str(path), "wrtier", "-m", "hello", env=env)
    assert p.returncode == 5
    assert "unknown agent 'wrtier' (did you mean writer?)" in p.stderr
    assert path.read_bytes() == before and not openai_server.chat_requests
    p = run_tce("set-default", str(path), "wrtier", env=env)
    assert p.returncode == 5 and "did you mean writer?" in p.stderr
    assert path.read_bytes() == before


# -- 5. warm helpers are bounded, listed and stopped ------------------------------------------


def test_one_helper_per_interpreter_and_key_relevant_environment() -> None:
    from jupyter_percent_agent.runtime import helper as warm

    base = {"HOME": "/home/u", "OPENAI_API_KEY": "sk-a", "PATH": "/usr/bin"}
    same = warm.socket_path(base)
    # another terminal, working folder, prompt or unrelated tool setting: the same helper
    assert (
        warm.socket_path(
            {
                **base,
                "PWD": "/elsewhere",
                "TERM": "screen",
                "TMUX": "/t,1",
                "EDITOR": "vim",
                "SSH_TTY": "/dev/pts/3",
                "PATH": "/x",
            }
        )
        == same
    )
    # another key, endpoint, proxy or setting: another helper
    for name, value in [
        ("OPENAI_API_KEY", "sk-b"),
        ("PERCENT_AGENT_API_BASE", "http://h/v1"),
        ("HTTPS_PROXY", "http://proxy:3128"),
        ("SSL_CERT_FILE", "/ca.pem"),
        ("LITELLM_LOG", "DEBUG"),
        ("PERCENT_AGENT_TIMEOUT", "5"),
    ]:
        assert warm.socket_path({**base, name: value}) != same, name


def _helper_env(tmp_path: Path, openai_server: OpenAIServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(
        {
            "TMPDIR": str(tmp_path),
            "PERCENT_AGENT_WARM": "1",
            "PERCENT_AGENT_WARM_MAX": "2",
            "PERCENT_AGENT_WARM_IDLE": "300",
            "PERCENT_AGENT_API_BASE": openai_server.url,
            "PERCENT_AGENT_MODEL": "test-model",
        }
    )
    env.update(extra)
    return env


def _start_helper(env: dict[str, str]) -> Path:
    """Start this environment's helper the way tce does (``helper.start``) and wait for it."""
    code = (
        "from jupyter_percent_agent.runtime import helper as h; h.start(); print(h.socket_path())"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0, p.stderr
    sock = Path(p.stdout.strip())
    deadline = time.monotonic() + 120
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sock.exists(), "the helper did not start"
    return sock


def _status(env: dict[str, str]) -> list[dict]:
    p = run_tce("helper", "status", "--json", env=env)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines()]


def _gone(pid: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    return False


@pytest.fixture
def helpers_dir() -> Iterator[Path]:
    """A private TMPDIR for helper sockets, outside pytest's own temporary folders (a pytest
    session elsewhere on the machine may prune those while a helper still listens)."""
    folder = Path(tempfile.mkdtemp(prefix="helpers-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_warm_helpers_are_capped_listed_stopped_and_exit_when_idle(
    helpers_dir: Path, openai_server: OpenAIServer
) -> None:
    tmp_path = helpers_dir
    envs = [
        _helper_env(tmp_path, openai_server, PERCENT_AGENT_TIMEOUT=str(10 + i)) for i in range(3)
    ]
    pids: list[int] = []
    try:
        for env in envs:
            sock = _start_helper(env)
            (mine,) = [h for h in _status(env) if h["socket"] == str(sock)]
            pids.append(mine["pid"])
            time.sleep(0.05)  # distinct last-used times
        # the third start stopped the one idle the longest (the first): two run
        assert _gone(pids[0])
        shown = _status(envs[0])
        assert sorted(h["pid"] for h in shown) == sorted(pids[1:])
        assert all(h["rss"] and h["rss"] > 0 and not h["active"] for h in shown)
        text = run_tce("helper", "status", env=envs[0]).stdout
        assert "2 of at most 2" in text and str(pids[1]) in text
        p = run_tce("helper", "stop", env=envs[0])
        assert p.returncode == 0 and "stopped 2 warm helpers" in p.stdout
        assert all(_gone(pid) for pid in pids[1:])
        assert _status(envs[0]) == []
        # an idle one exits by itself
        idle_env = _helper_env(tmp_path, openai_server, PERCENT_AGENT_WARM_IDLE="1")
        sock = _start_helper(idle_env)
        (info,) = _status(idle_env)
        pids.append(info["pid"])
        assert _gone(info["pid"])
        assert not sock.exists()
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


# -- 7. errors name their real cause, in the same one line everywhere -------------------------

MALFORMED = "# %% Hi[^a1]\n[^a1]: [markdown] x=\n\nhello\n"


def test_a_malformed_file_is_the_same_one_line_in_tce_jupytext_and_the_contents_manager(
    tmp_path: Path, env: dict[str, str]
) -> None:
    from jupyter_server.services.contents.filemanager import FileContentsManager
    from tornado.web import HTTPError

    from jupyter_percent_agent.contents.manager import build_message_contents_manager_class

    path = tmp_path / "bad.msg.md"
    path.write_text(MALFORMED)
    p = run_tce("list", "bad.msg.md", env=env, cwd=tmp_path)
    assert p.returncode == 3
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("tce: bad.msg.md:2: ")
    what = line.removeprefix("tce: ")
    jupytext = Path(sys.executable).with_name("jupytext")
    for args in (["--to", "ipynb"], ["--to", "py:percent"], ["--sync"]):
        p = subprocess.run(
            [str(jupytext), *args, "bad.msg.md"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 3, p.stderr
        assert "Traceback" not in p.stderr
        assert f"jupytext: {what}" in p.stderr.splitlines()
    assert path.read_text() == MALFORMED and sorted(os.listdir(tmp_path)) == ["bad.msg.md"]
    manager = build_message_contents_manager_class(FileContentsManager)(root_dir=str(tmp_path))
    with pytest.raises(HTTPError) as info:
        manager.get("bad.msg.md")
    assert info.value.status_code == 400 and info.value.log_message == what


# -- 6. --resume takes any path form; a killed batch goes on, no input done twice -------------

MAKE = (
    "---\ntask_id: t/make\ntask_type: execute\ninput:\n  topic: $.topic\noutput:\n"
    "  $.title: $.title\n---\n\n## parameters.prompt\nMAKE a title for {topic} as JSON\n"
)


def _title_model(slow: set[str], asked: list[str]):
    from jupyter_percent_agent.testing.openai_server import Reply

    def respond(body: dict) -> object:
        prompt = str(body["messages"][-1]["content"])
        topic = prompt.split("MAKE a title for ", 1)[1].split()[0]
        asked.append(topic)
        answer = json.dumps({"title": f"T-{topic}"})
        return Reply(answer, delay=60) if topic in slow else answer

    return respond


def test_a_killed_batch_resumes_where_it_stopped_and_does_no_input_twice(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    (tmp_path / "sop" / "t").mkdir(parents=True)
    (tmp_path / "sop" / "t" / "make.md").write_text(MAKE)
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"topic": t}) + "\n" for t in ("alpha", "beta", "gamma"))
    )
    asked: list[str] = []
    slow = {"beta"}
    openai_server.responder = _title_model(slow, asked)
    proc = subprocess.Popen(
        [*TCE, "run", "t/make", "--sop", "sop", "--inputs", "in.jsonl", "--concurrency", "1"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while "beta" not in asked and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert "beta" in asked, proc.stderr.read() if proc.poll() is not None else ""
        proc.kill()  # a kill, not Ctrl-C: nothing gets to tidy up
    finally:
        proc.kill()
        proc.wait(30)
    (log,) = (tmp_path / "runs").glob("*-batch.jsonl")
    (results,) = (tmp_path / "runs").glob("*-results.jsonl")
    assert [json.loads(x)["input"] for x in results.read_text().splitlines()] == [1]
    slow.clear()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # from another folder, by a relative path
    p = run_tce("run", "--resume", os.path.relpath(log, elsewhere), env=env, cwd=elsewhere)
    assert p.returncode == 0, p.stderr
    assert "1 inputs done, 2 to go (1 from their transcripts)" in p.stderr
    lines = [json.loads(x) for x in results.read_text().splitlines()]
    assert sorted(x["input"] for x in lines) == [1, 2, 3]
    assert all(x["status"] == "succeeded" for x in lines)
    assert asked.count("alpha") == 1 and asked.count("gamma") == 1
    assert asked.count("beta") == 2  # the step the kill cut short, and only it, again
    # resuming again does nothing more
    p = run_tce("run", "--resume", str(log), env=env, cwd=elsewhere)
    assert p.returncode == 0, p.stderr
    assert len(results.read_text().splitlines()) == 3 and len(asked) == 4


def test_resume_takes_the_paths_a_shell_gives(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer
) -> None:
    (tmp_path / "sop" / "t").mkdir(parents=True)
    (tmp_path / "sop" / "t" / "make.md").write_text(MAKE)
    asked: list[str] = []
    openai_server.responder = _title_model(set(), asked)
    for topic in ("one", "two"):
        p = run_tce(
            "run",
            "t/make",
            "--sop",
            "sop",
            "--context",
            json.dumps({"topic": topic}),
            env=env,
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stderr
    runs = sorted((tmp_path / "runs").glob("*.msg.md"))
    assert len(runs) == 2
    other = tmp_path / "other"
    other.mkdir()
    forms = [
        [str(runs[0]), str(runs[1])],  # what the shell makes of runs/*.msg.md
        [os.path.relpath(runs[0], other), os.path.relpath(runs[1], other)],
        [os.path.relpath(tmp_path / "runs", other) + "/*.msg.md"],  # a quoted glob
        [os.path.relpath(tmp_path / "runs", other)],  # the folder
        [str(runs[0]).removesuffix(".msg.md"), str(runs[1])],  # no extension
    ]
    for form in forms:
        p = run_tce("run", "--resume", *form, "--json", env=env, cwd=other)
        assert p.returncode == 0, (form, p.stderr)
        assert sorted(json.loads(x)["context"]["title"] for x in p.stdout.splitlines()) == [
            "T-one",
            "T-two",
        ], form
    assert len(asked) == 2  # ended runs are reported, never run again
    p = run_tce("run", "--resume", "runs/nothing-here.msg.md", env=env, cwd=tmp_path)
    assert p.returncode == 2 and "no such transcript" in p.stderr


def test_jupyter_console_shows_the_reply_as_text(
    tmp_path: Path, kernel_home: tuple[Path, dict[str, str]], openai_server: OpenAIServer
) -> None:
    """``jupyter console`` in a terminal (a pty, driven by pexpect): the reply is shown as
    text, a secret in it masked."""
    import pexpect

    from jupyter_percent_agent.kernel import KERNEL_NAME

    _data, env = kernel_home
    openai_server.script(f"Rome, and your token is {TOKEN}.")
    jupyter = Path(sys.executable).with_name("jupyter")
    child = pexpect.spawn(
        str(jupyter),
        [
            "console",
            f"--kernel={KERNEL_NAME}",
            "--ZMQTerminalInteractiveShell.confirm_exit=False",
            "--simple-prompt",
        ],
        env={**env, "TERM": "dumb"},
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=120,
        dimensions=(40, 200),
    )
    try:
        child.expect(r"In \[1\]: ")
        child.sendline("Capital of Italy?")
        child.expect(r"In \[2\]: ")
        shown = child.before
        assert "Rome, and your token is [masked MY_SERVICE_TOKEN]." in shown
        assert TOKEN not in shown
        child.sendeof()
        if child.expect([r"exit \(\[y\]/n\)\?", pexpect.EOF]) == 0:
            child.sendline("y")
            child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


@pytest.mark.parametrize("direct", ["1", "0"])  # straight to the server, and through litellm
def test_a_malformed_stream_is_named_as_such_and_a_cut_one_as_a_lost_connection(
    tmp_path: Path, env: dict[str, str], openai_server: OpenAIServer, direct: str
) -> None:
    from jupyter_percent_agent.testing.openai_server import Reply

    env = {**env, "PERCENT_AGENT_DIRECT": direct}
    openai_server.script(Reply.garbage())
    p = run_tce("chat", str(tmp_path / "g"), "-m", "hi", env=env)
    assert p.returncode == 1
    assert "sent a reply chunk that is not JSON" in p.stderr
    assert "connection was lost" not in p.stderr
    openai_server.script(Reply("one two three four", chunk_size=4, disconnect_after=2))
    p = run_tce("chat", str(tmp_path / "g"), "-m", "again", env=env)
    assert p.returncode == 1
    assert "broke off mid-reply (the connection was lost)" in p.stderr


def test_a_save_through_the_contents_manager_keeps_the_files_form_and_masks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What JupyterLab saves after a run: the kernel's outputs, with the text/plain copy it
    added for plain-text clients, and (say) a token a cell printed."""
    from jupyter_server.services.contents.filemanager import FileContentsManager

    from jupyter_percent_agent.contents.manager import build_message_contents_manager_class

    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)
    path = tmp_path / "chat.msg.md"
    path.write_text("# %% Q[^q1]\n[^q1]: [markdown]\n\nWhat is my token?\n")
    manager = build_message_contents_manager_class(FileContentsManager)(root_dir=str(tmp_path))
    model = manager.get("chat.msg.md")
    reply = fmt.reply_output(f"It is {TOKEN}.", agent="a", out_id="q1.1")
    model["content"]["cells"][0]["outputs"] = [fmt.with_plain_text(reply)]
    manager.save({"type": "notebook", "format": "json", "content": model["content"]}, "chat.msg.md")
    text = path.read_text()
    assert "It is [masked MY_SERVICE_TOKEN]." in text and TOKEN not in text
    assert "text/plain" not in text and "plain_copy" not in text
    back = fmt.read(path)
    (out,) = back["cells"][0]["outputs"]
    assert list(out["data"]) == ["text/markdown"]


# -- 3. every cell by its kind under nbclient; the file tce exec writes -----------------------

RUN_ME = DATA / "clients" / "conversation.msg.md"
BIN = Path(sys.executable).parent
REPLIES = ("Four.", "Yes: 40 is ten times 4.")


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{cmd}:\n{done.stdout}\n{done.stderr}"


def _jupytext_execute(folder: Path, env: dict[str, str]) -> Path:
    _run([str(BIN / "jupytext"), "--execute", "x.msg.md"], folder, env)
    return folder / "x.msg.md"


def _papermill(folder: Path, env: dict[str, str]) -> Path:
    """The paired notebook executed by papermill, beside its message file, and brought back."""
    _run([str(BIN / "jupytext"), "--to", "ipynb", "x.msg.md"], folder, env)
    _run([str(BIN / "papermill"), "x.msg.ipynb", "x.msg.ipynb", "--cwd", "."], folder, env)
    _run([str(BIN / "jupytext"), "--to", ".msg.md", "-o", "x.msg.md", "x.msg.ipynb"], folder, env)
    return folder / "x.msg.md"


def _nbconvert(folder: Path, env: dict[str, str]) -> Path:
    """The converted notebook alone in its folder, executed by nbconvert, brought back."""
    _run([str(BIN / "jupytext"), "--to", "ipynb", "x.msg.md"], folder, env)
    (folder / "x.msg.md").unlink()
    cmd = ["nbconvert", "--execute", "--to", "notebook", "--output", "y.ipynb", "x.msg.ipynb"]
    _run([str(BIN / "jupyter"), *cmd], folder, env)
    _run([str(BIN / "jupytext"), "--to", ".msg.md", "-o", "x.msg.md", "y.ipynb"], folder, env)
    return folder / "x.msg.md"


def _steady(text: str) -> str:
    """The file without what differs between any two runs: when, and how long."""
    text = re.sub(r'time="[^"]*"', 'time="T"', text)
    return re.sub(r"duration=[0-9.]+", "duration=D", text)


@pytest.mark.parametrize(
    ("client", "confirmed"),
    [(_jupytext_execute, True), (_papermill, True), (_nbconvert, False)],
    ids=["jupytext", "papermill", "nbconvert"],
)
def test_nbclient_runs_each_cell_by_its_kind_and_saves_what_tce_exec_saves(
    tmp_path: Path,
    kernel_home: tuple[Path, dict[str, str]],
    openai_server: OpenAIServer,
    trusted,
    client,
    confirmed: bool,
) -> None:
    """In a trusted folder, a runner that names no file runs the cells as ``tce exec`` runs
    the message file the kernel finds them in (jupytext on it, papermill on its notebook
    beside it). A notebook alone (nbconvert on a converted ``.ipynb``) never confirms the
    conversation's file (a runner may have written it): it runs as ``tce exec`` runs the file
    in a folder not trusted, the ``[code]`` cell in the sandbox."""
    _data, env = kernel_home
    env = {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}
    sent = {}
    for name in ("tce", "client"):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(RUN_ME, folder / "x.msg.md")
        if name == "client" or confirmed:
            trusted(folder)  # confirmed: the [code] cell runs in a real kernel
        openai_server.reset()
        openai_server.script(*REPLIES)
        if name == "tce":
            done = run_tce("exec", str(folder / "x.msg.md"), env=env)
            assert done.returncode == 0, done.stderr
            expected = (folder / "x.msg.md").read_text(encoding="utf-8")
        else:
            got = client(folder, env).read_text(encoding="utf-8")
        sent[name] = [r.messages for r in openai_server.chat_requests]
    # the model saw the same conversations: the code cell's output in the second, the note
    # in neither, and the code cell never as a message
    assert sent["client"] == sent["tce"] and len(sent["tce"]) == 2
    assert "total 4" in json.dumps(sent["tce"][1]) and "never sent" not in json.dumps(sent)
    nb = fmt.reads(expected)
    code = nb["cells"][1]
    assert (code["execution_count"] == 1) is confirmed and "stdout> total 4" in expected
    # the same file: no runner metadata, no agent-kernel counts, the user's tags kept (a
    # sandbox run's stdout is a stream, which nbformat keeps no attributes for)
    if not confirmed:
        expected = re.sub(r' status="success" duration=[0-9.]+', "", expected, count=1)
    assert _steady(got) == _steady(expected)
    for runner in ("execution=", "papermill", "language_info", "ExecuteTime", "tags=[]"):
        assert runner not in got
    assert 'tags=["review"]' in got


def test_a_cell_the_kernel_cannot_place_is_one_line_and_runs_nothing(
    tmp_path: Path, kernel_home: tuple[Path, dict[str, str]], openai_server: OpenAIServer
) -> None:
    """nbclient sends only a cell's text: in two conversations that hold it (a copy edited
    since), the kernel cannot tell which one runs, says so in one line, and asks no model."""
    text = RUN_ME.read_text(encoding="utf-8")
    (tmp_path / "x.msg.md").write_text(text, encoding="utf-8")
    edited = text.replace("Is the value above", "Is the number above")
    (tmp_path / "copy.msg.md").write_text(edited, encoding="utf-8")
    with _agent_kernel(kernel_home, tmp_path) as kc:
        msg_id = kc.execute("What is two plus two?")
        reply = kc.get_shell_msg(timeout=60)
        # wait_for_ready asks kernel_info once a second: a slow start leaves a reply behind
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = kc.get_shell_msg(timeout=60)
        got = _iopub_until_idle(kc, msg_id)
    assert reply["content"]["status"] == "error"
    line = reply["content"]["evalue"]
    assert "2 conversations" in line and "copy.msg.md, x.msg.md" in line and "\n" not in line
    assert [m["content"]["evalue"] for m in got if m["msg_type"] == "error"] == [line]
    assert openai_server.chat_requests == []


def test_the_kernel_finds_a_cell_in_twins_and_by_the_cells_run_before(tmp_path: Path) -> None:
    from jupyter_percent_agent.kernel._finder import AmbiguousCell, find_conversation

    text = RUN_ME.read_text(encoding="utf-8")
    nb = fmt.reads(text)
    (tmp_path / "x.msg.md").write_text(text, encoding="utf-8")
    (tmp_path / "notes.md").write_text("What is two plus two?\n", encoding="utf-8")
    (tmp_path / "x.msg.py").write_text(fmt.writes(nb, path="x.msg.py"), encoding="utf-8")
    ask = "What is two plus two?"
    # paired twins (and identical copies) are one conversation; a plain .md is none
    assert find_conversation(tmp_path, ask) == tmp_path / "x.msg.md"
    other = text.replace("Is the value above", "Is the number above")
    (tmp_path / "other.msg.md").write_text(other, encoding="utf-8")
    with pytest.raises(AmbiguousCell, match="2 conversations"):
        find_conversation(tmp_path, ask)
    # the cells run before in this session tell them apart
    later = "Is the number above ten times the total?"
    assert find_conversation(tmp_path, later, [ask]) == tmp_path / "other.msg.md"
    assert find_conversation(tmp_path, ask, [later]) == tmp_path / "other.msg.md"
    assert find_conversation(tmp_path, "not in any file") is None


def test_papermill_in_out_beside_the_notebook_runs_it_as_papermills_readme_shows(
    tmp_path: Path, kernel_home: tuple[Path, dict[str, str]], openai_server: OpenAIServer
) -> None:
    """``papermill x.ipynb out.ipynb``: papermill writes out.ipynb (the same cells) before
    it runs the first one, so the kernel found the cell in two notebooks of the folder and
    refused every cell (AmbiguousCell); so did a second ``nbconvert --execute --output``.
    Copies of one notebook are one conversation, as copies of a message file are."""
    _data, env = kernel_home
    shutil.copy(RUN_ME, tmp_path / "x.msg.md")
    _run([str(BIN / "jupytext"), "--to", "ipynb", "-o", "x.ipynb", "x.msg.md"], tmp_path, env)
    (tmp_path / "x.msg.md").unlink()  # the notebook alone, as it was sent to someone
    openai_server.script(*REPLIES)
    _run([str(BIN / "papermill"), "x.ipynb", "out.ipynb"], tmp_path, env)
    out = json.loads((tmp_path / "out.ipynb").read_text(encoding="utf-8"))
    texts = json.dumps([c.get("outputs") for c in out["cells"]])
    assert REPLIES[0] in texts and REPLIES[1] in texts and "AmbiguousCell" not in texts
    openai_server.reset()
    openai_server.script(*REPLIES)
    _run([str(BIN / "papermill"), "x.ipynb", "out.ipynb"], tmp_path, env)  # out.ipynb ran
    assert len(openai_server.chat_requests) == 2


def _cloned_notebook(tmp_path: Path, marker: Path) -> Path:
    """A notebook converted from a cloned message file, in the clone's (untrusted) folder: one
    ``[code]`` cell that, run as the user, writes the user's key into ``marker``."""
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "x.msg.md").write_text(
        "# %% Run[^c1]\n[^c1]: [code]\n\n```python\nimport os\n"
        f"open({str(marker)!r}, 'w').write(os.environ.get('MY_SERVICE_TOKEN', ''))\n```\n",
        encoding="utf-8")
    return clone / "x.msg.md"


def test_papermill_from_a_trusted_folder_runs_a_cloned_notebooks_code_in_the_sandbox_only(
    tmp_path: Path, kernel_home: tuple[Path, dict[str, str]], trusted
) -> None:
    """papermill starts the kernel in its working folder and writes its output copy there
    before the first cell runs: run from a trusted project on a notebook converted from a
    cloned message file, the kernel found the cell in the copy, took the project for the
    conversation's folder, and ran the clone's ``[code]`` cell in the user's python3 kernel
    with the user's environment. A notebook never confirms the conversation's file: the cell
    runs untrusted (the sandbox refuses it), and one line says why and how to run it trusted."""
    _data, env = kernel_home
    project = tmp_path / "project"
    project.mkdir()
    trusted(project)
    marker = project / "stolen"
    cloned = _cloned_notebook(tmp_path, marker)
    _run([str(BIN / "jupytext"), "--to", "ipynb", "-o", "x.ipynb", cloned.name],
         cloned.parent, env)
    done = subprocess.run([str(BIN / "papermill"), str(cloned.parent / "x.ipynb"), "out.ipynb"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert not marker.exists(), "the cloned cell ran as the user"
    assert done.returncode != 0  # the cell was refused: papermill stops there
    said = [line for line in done.stderr.splitlines() if "percent-agent: " in line]
    assert len(said) == 1 and "runs untrusted" in said[0] and "out.ipynb" in said[0]
    assert "to run it trusted: tce exec" in said[0]
    out = (project / "out.ipynb").read_text(encoding="utf-8")
    assert "refused: cell c1 needs a real kernel" in out and "to run it trusted" in out
    assert f"tce trust {project}" not in out  # the project is trusted: that would not help


def test_the_kernel_confirms_a_conversation_only_by_a_message_file_of_its_folder(
    tmp_path: Path,
) -> None:
    """The one rule for runners that name no file: the message file of the working folder that
    holds the cells confirms it; a notebook (what runners write), a link to a file of another
    folder, or no file at all does not."""
    from jupyter_percent_agent.kernel._finder import conversation_by_text

    ask = "What is two plus two?"
    folder, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    shutil.copy(RUN_ME, elsewhere / "x.msg.md")
    (folder / "x.msg.md").symlink_to(elsewhere / "x.msg.md")
    assert conversation_by_text(folder, ask)[0] is None  # a link out is never read
    (folder / "x.msg.md").unlink()
    assert conversation_by_text(folder, ask)[1] is not None  # no file: unconfirmed
    nb = fmt.reads(RUN_ME.read_text(encoding="utf-8"))
    cells = [{"cell_type": "code", "id": c["id"], "metadata": c.get("metadata", {}),
              "source": fmt.message_text(c), "outputs": [], "execution_count": None}
             for c in nb["cells"] if c.get("cell_type") == "code"]
    (folder / "out.ipynb").write_text(json.dumps({
        "cells": cells, "metadata": {"kernelspec": dict(fmt.DEFAULT_KERNELSPEC)},
        "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    found, withheld = conversation_by_text(folder, ask)
    assert found == folder / "out.ipynb" and "out.ipynb" in str(withheld)
    shutil.copy(RUN_ME, folder / "x.msg.md")  # the message file beside its copy: confirmed
    assert conversation_by_text(folder, ask) == (folder / "x.msg.md", None)


def test_jupytext_execute_on_a_script_message_file_saves_what_tce_exec_saves(
    tmp_path: Path,
    kernel_home: tuple[Path, dict[str, str]],
    openai_server: OpenAIServer,
    trusted,
) -> None:
    _data, env = kernel_home
    saved = {}
    for name in ("tce", "jupytext"):
        folder = tmp_path / name
        folder.mkdir()
        shutil.copy(DATA / "clients" / "analysis.msg.py", folder / "analysis.msg.py")
        trusted(folder)
        openai_server.script("Three.")
        if name == "tce":
            done = run_tce("exec", str(folder / "analysis.msg.py"), env=env)
            assert done.returncode == 0, done.stderr
        else:
            _run([str(BIN / "jupytext"), "--execute", "analysis.msg.py"], folder, env)
        saved[name] = (folder / "analysis.msg.py").read_text(encoding="utf-8")
    assert "# stdout> loaded 3" in saved["tce"] and "execution_count=1" in saved["tce"]
    assert _steady(saved["jupytext"]) == _steady(saved["tce"])


def test_executing_a_conversation_again_sends_this_runs_replies_not_the_saved_ones(
    tmp_path: Path, kernel_home: tuple[Path, dict[str, str]], openai_server: OpenAIServer
) -> None:
    """nbclient runs every cell again and saves at the end: the second message's history has
    the first message's new reply (as ``tce exec --all`` sends), not the one in the file."""
    _data, env = kernel_home
    shutil.copy(RUN_ME, tmp_path / "x.msg.md")  # untrusted: the code cell in the sandbox
    openai_server.script("Four.", "First answer.")
    _jupytext_execute(tmp_path, env)
    openai_server.reset()
    openai_server.script("Four, again.", "Second answer.")
    saved = _jupytext_execute(tmp_path, env).read_text(encoding="utf-8")
    second = json.dumps(openai_server.chat_requests[1].messages)
    assert "Four, again." in second and "Four." not in second.replace("Four, again.", "")
    assert "Four, again." in saved and "Second answer." in saved and "First answer." not in saved
