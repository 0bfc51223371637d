"""Stored API keys through real processes and the local model server: what reaches which
server, the warm helper and the sandbox, the modules ``tce keys`` and ``tce models`` import."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import trust
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.runtime import helper as warm
from jupyter_percent_agent.runtime import models
from jupyter_percent_agent.runtime.agents import environment_agent
from jupyter_percent_agent.runtime.models import CallSpec
from jupyter_percent_agent.testing.environment import run_tce, tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply
from tests.helpers.keys import SECRET

MSGS = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(("args", "says"), [(["keys", "set", "openai"], "stored the key"),
                                            (["keys", "list"], "no keys"),
                                            (["keys", "server"], "no server"),
                                            (["models", "default", "gpt-4o"], "default model"),
                                            (["models"], "default: gpt-4o-mini")])
def test_keys_and_models_default_do_not_import_litellm(no_keys, args: list[str],
                                                       says: str) -> None:
    code = (f"import sys\nsys.argv = ['tce', *{args!r}]\n"
            "from jupyter_percent_agent.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in ('litellm', 'nbformat', 'jupytext', 'openai') "
            "if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, input=SECRET)
    assert "HEAVY []" in p.stdout and says in p.stdout, p.stderr


def test_models_lists_providers_with_a_key_and_the_users_server(
        no_keys, monkeypatch: pytest.MonkeyPatch) -> None:
    trust.set_key("anthropic", "sk-ant-stored")
    with OpenAIServer(models=["llama3.1:8b", "qwen3"]) as server:
        monkeypatch.setenv("PERCENT_AGENT_API_BASE", server.url)
        monkeypatch.setenv("PERCENT_AGENT_API_KEY", "sk-for-my-server")
        r = tce("models")
        assert r.exit_code == 0, r.output
        lines = r.output.splitlines()
        assert f"llama3.1:8b  ({server.url})" in lines and f"qwen3  ({server.url})" in lines
        assert any(line.startswith("claude") and line.endswith("(anthropic)") for line in lines)
        assert not any("(openai)" in line for line in lines)  # openai has no key
        assert lines[-1] == "default: gpt-4o-mini"
        (request,) = server.requests
        assert request.headers["authorization"] == "Bearer sk-for-my-server"
        assert server.received({"stored": "sk-ant-stored"}) == []
    r = CliRunner().invoke(main, ["models"])  # the server is gone: one line, after the rest
    assert r.exit_code == 1 and r.output.splitlines()[-1].startswith(
        f"tce: cannot list the models at {server.url} (PERCENT_AGENT_API_BASE): ")


def test_first_run_keys_set_default_model_then_chat_sends_the_stored_key(
        tmp_path: Path, openai_server: OpenAIServer) -> None:
    """The issue's "done when": no key and no PERCENT_AGENT_* in the environment; the key on
    standard input; then ``tce chat`` sends it to the provider's endpoint (here the user's
    OPENAI_BASE_URL) with the default model, and the key is in no file but the keys file and
    in no output."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("_API_KEY", "_API_BASE", "_BASE_URL"))
           and not k.startswith("PERCENT_AGENT_")}
    env.update(XDG_CONFIG_HOME=str(home / ".config"), OPENAI_BASE_URL=openai_server.url,
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    notes = tmp_path / "notes"
    notes.mkdir()

    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_tce(*args, env=env, input=input, cwd=notes)

    out = [run("keys", "set", "openai", input=SECRET + "\n"),
           run("models", "default", "gpt-4o-mini"),
           run("keys", "list")]
    openai_server.script(Reply("Hello from the stored key"))
    out.append(run("chat", "first", "-m", "Hello"))
    out.append(run("list", "first/agent"))  # which key a call sends: named, never shown
    assert [p.returncode for p in out] == [0, 0, 0, 0, 0], [p.stderr for p in out]
    assert "your stored openai key" in out[-1].stdout
    assert "Hello from the stored key" in out[-2].stdout
    (request,) = [r for r in openai_server.requests if r.path.endswith("/chat/completions")]
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.body["model"] == "gpt-4o-mini"
    keys_file = home / ".config" / "jupyter-percent-agent" / "keys.json"
    holding = [p for p in tmp_path.rglob("*") if p.is_file() and SECRET in p.read_text()]
    assert holding == [keys_file]
    assert not any(SECRET in p.stdout + p.stderr for p in out)


def test_the_warm_helper_uses_a_key_stored_after_it_started(
        no_keys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        openai_server: OpenAIServer) -> None:
    """Saving a key (the terminal or JupyterLab) needs no restart: the process that calls
    the model reads the keys file at each call."""
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url)
    monkeypatch.setenv("PERCENT_AGENT_WARM_TEST", str(tmp_path))
    path = warm.socket_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "jupyter_percent_agent.runtime.helper",
                             str(path)], env={**os.environ, "PERCENT_AGENT_WARM_IDLE": "60"})
    try:
        deadline = time.monotonic() + 180  # it imports litellm first: slow on a busy machine
        while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert path.exists(), "the helper did not start"  # else request() would start one
        spec = CallSpec(models=["gpt-4o-mini"], messages=MSGS, retries=0, timeout=10)
        first = asyncio.run(warm.request(spec, lambda e: None))
        assert first is not None and first.error_type == "AuthenticationError", first
        assert "tce keys set openai" in (first.error or "")
        trust.set_key("openai", SECRET)
        openai_server.script(Reply("now it works"))
        second = asyncio.run(warm.request(spec, lambda e: None))
        assert second is not None and second.text == "now it works", second
        assert openai_server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # a busy machine: SIGTERM can land mid-import
            proc.kill()
            proc.wait(10)


def test_a_stored_key_never_goes_to_the_users_own_server(
        no_keys, monkeypatch: pytest.MonkeyPatch, openai_server: OpenAIServer) -> None:
    trust.set_key("openai", SECRET)
    monkeypatch.setenv("PERCENT_AGENT_API_BASE", openai_server.url)
    spec = models.spec_for(environment_agent(model="gpt-4o-mini"), MSGS)
    res = asyncio.run(models.complete(spec))
    assert res.error is None, res.error
    assert openai_server.received({"stored": SECRET}) == []
    assert openai_server.requests[-1].headers["authorization"] == f"Bearer {trust.NO_KEY}"


def test_a_stored_key_never_goes_to_a_files_api_base(
        no_keys, tmp_path: Path, trusted, openai_server: OpenAIServer) -> None:
    trust.set_key("openai", SECRET)
    trusted(tmp_path)
    (tmp_path / "t.msg.md").write_text(
        f"---\nagents:\n  mine:\n    api_base: {openai_server.url}\n    models: [gpt-4o-mini]\n"
        "default_agent: mine\n---\n")
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "t"), "-m", "hi"])
    assert r.exit_code == 0, r.output
    assert openai_server.received({"stored": SECRET}) == []
    assert SECRET not in (tmp_path / "t.msg.md").read_text()


def test_the_sandbox_sees_no_stored_key(no_keys, user_config_dir: Path) -> None:
    from jupyter_percent_agent.sandbox import execute

    trust.set_key("openai", SECRET)
    assert SECRET not in os.environ.values()  # nothing a child process could inherit
    path = user_config_dir / "keys.json"
    r = execute(f"__result__ = open({str(path)!r}).read()")
    assert r.status == "error" and SECRET not in repr(r)


def test_a_failure_that_quotes_the_stored_key_is_masked(
        no_keys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        openai_server: OpenAIServer) -> None:
    trust.set_key("openai", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url)
    openai_server.responder = lambda body: Reply.http_error(400, f"bad request for {SECRET}")
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "m"), "--model", "gpt-4o-mini",
                                  "-m", "hi"])
    assert r.exit_code == 1
    assert "bad request for ***" in r.output and SECRET not in r.output
    assert SECRET not in (tmp_path / "m.msg.md").read_text()
