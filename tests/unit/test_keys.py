"""Stored API keys and the default model (``tce keys``, ``tce models``, ``trust.keys``): a first
run with no key in the environment, keys kept private, and stored keys under the trust rules."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import trust
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.litellm_setup import import_litellm
from jupyter_percent_agent.runtime import helper as warm
from jupyter_percent_agent.runtime import models, routing
from jupyter_percent_agent.runtime.agents import environment_agent
from jupyter_percent_agent.runtime.models import CallSpec
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply

SECRET = "sk-stored-openai-0123456789"
TCE = [sys.executable, "-c", "from jupyter_percent_agent.cli import main; main()"]
MSGS = [{"role": "user", "content": "hi"}]


def tce(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first run: no ``*_API_KEY`` and no ``PERCENT_AGENT_*`` variable but the test's own
    config directory; no retries, no waiting, no warm helper."""
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_API_BASE", "_BASE_URL")) or (
                name.startswith("PERCENT_AGENT_") and name != "PERCENT_AGENT_CONFIG_DIR"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PERCENT_AGENT_WARM", "0")
    monkeypatch.setenv("PERCENT_AGENT_RETRIES", "0")
    monkeypatch.setenv("PERCENT_AGENT_BACKOFF", "0")


def test_keys_set_stores_a_private_file_and_list_names_only_the_source(
        no_keys, user_config_dir: Path) -> None:
    assert "no keys" in tce("keys", "list").output
    r = tce("keys", "set", "openai", input=SECRET + "\n")
    assert r.exit_code == 0, r.output
    path = user_config_dir / "keys.json"
    assert trust.load_keys(path) == {"openai": SECRET}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    r = tce("keys", "list")
    assert r.output == f"openai: config ({path})\n"
    assert SECRET not in r.output


def test_a_key_in_the_environment_wins_over_the_stored_one(
        no_keys, monkeypatch: pytest.MonkeyPatch) -> None:
    trust.set_key("openai", SECRET)
    litellm = import_litellm()
    found = routing.resolve(litellm, "gpt-4o-mini")
    assert (found.key, found.provider) == (SECRET, "openai")
    assert SECRET not in found.key_name and "keys.json" in found.key_name
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("SERPAPI_API_KEY", "not a model provider's")
    found = routing.resolve(litellm, "gpt-4o-mini")
    assert (found.key, found.key_name) == (None, "OPENAI_API_KEY")  # litellm reads it
    assert tce("keys", "list").output == (
        "openai: environment (OPENAI_API_KEY), over the stored key\n")


@pytest.mark.parametrize(("provider", "key", "says"), [
    ("openai", "", "no key given for openai"),
    ("openai", "\n", "no key given for openai"),
    ("openai", "sk-with space", "holds spaces, newlines"),
    ("openai", "sk-two\nlines\n", "holds spaces, newlines"),
    ("openai", "sk-tab\there", "holds spaces, newlines"),
    ("no-such-provider", "sk-fine", "litellm knows no provider 'no-such-provider'"),
    ("../openai", "sk-fine", "is not a provider name"),
])
def test_bad_input_gets_one_line_and_stores_nothing(no_keys, user_config_dir: Path,
                                                    provider: str, key: str, says: str) -> None:
    r = CliRunner().invoke(main, ["keys", "set", provider], input=key)
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and says in r.output, r.output
    assert "Traceback" not in r.output and (not key.strip() or key.split()[0] not in r.output)
    assert not (user_config_dir / "keys.json").exists()


def test_a_broken_keys_file_gets_one_line_naming_it(no_keys, user_config_dir: Path,
                                                    tmp_path: Path) -> None:
    path = user_config_dir / "keys.json"
    path.write_text('{"openai": "' + SECRET)
    path.chmod(0o600)
    for args in (["keys", "list"], ["keys", "set", "groq"], ["keys", "remove", "openai"],
                 ["models"]):
        r = CliRunner().invoke(main, args, input="gsk-fine")
        assert r.exit_code == 2, (args, r.output)
        assert r.output == f"tce: {path}: not a keys file (JSON); fix or remove it, then run " \
                           "tce keys set PROVIDER\n"
    # a run that needs the stored key says the same, in one line, and records no key
    r = CliRunner().invoke(main, ["chat", str(tmp_path / "k"), "-m", "hi"])
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [f"tce: {path}: not a keys file (JSON); fix or "
                                             "remove it, then run tce keys set PROVIDER"]
    assert SECRET not in (tmp_path / "k.msg.md").read_text()
    path.chmod(0o644)  # readable by others: refused, never used
    r = CliRunner().invoke(main, ["keys", "list"])
    assert r.exit_code == 2 and "not a private file of this user" in r.output
    assert SECRET not in r.output


def test_keys_remove_forgets_the_stored_key(no_keys) -> None:
    trust.set_key("anthropic", "sk-ant-stored")
    assert tce("keys", "remove", "anthropic").exit_code == 0
    assert trust.load_keys() == {}
    r = CliRunner().invoke(main, ["keys", "remove", "anthropic"])
    assert (r.exit_code, r.output) == (2, "tce: no stored key for anthropic\n")


@pytest.mark.parametrize(("args", "says"), [(["keys", "set", "openai"], "stored the key"),
                                            (["keys", "list"], "no keys"),
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


def test_provider_names_read_without_litellm_are_litellms_own() -> None:
    from litellm.llms.openai_like.json_loader import JSONProviderRegistry

    from jupyter_percent_agent.litellm_setup import provider_names

    litellm = import_litellm()
    JSONProviderRegistry.load()
    assert provider_names() == {p.value for p in litellm.provider_list} | set(
        JSONProviderRegistry.list_providers())


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "groq", "mistral"])
def test_chat_models_read_without_litellm_are_litellms_own(provider: str) -> None:
    from jupyter_percent_agent.litellm_setup import chat_models

    litellm = import_litellm()
    cost = litellm.model_cost
    theirs = {m for m in litellm.models_by_provider[provider]
              if (cost.get(m) or cost.get(f"{provider}/{m}") or {}).get("mode") == "chat"}
    assert set(chat_models(provider)) == theirs and theirs


def test_models_default_is_used_when_neither_file_nor_environment_names_one(
        no_keys, monkeypatch: pytest.MonkeyPatch) -> None:
    assert tce("models", "default").output == "gpt-4o-mini\n"
    assert tce("models", "default", "claude-sonnet-4-5").exit_code == 0
    assert trust.load_config().default_model == "claude-sonnet-4-5"
    assert environment_agent().models == ["claude-sonnet-4-5"]
    monkeypatch.setenv("PERCENT_AGENT_MODEL", "from-env")
    assert environment_agent().models == ["from-env"]
    assert tce("models", "default").output == "from-env (PERCENT_AGENT_MODEL)\n"
    monkeypatch.delenv("PERCENT_AGENT_MODEL")
    assert CliRunner().invoke(main, ["models", "default", "two words"]).exit_code == 2
    assert tce("models", "default", "--clear").exit_code == 0
    assert environment_agent().models == ["gpt-4o-mini"]


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
        return subprocess.run([*TCE, *args], env=env, input=input, capture_output=True,
                              text=True, timeout=180, cwd=notes)

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


# -- stored keys follow the trust rules: only to their own provider's endpoint ---------------


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


def test_a_stored_key_is_not_lent_to_another_provider(no_keys,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    trust.set_key("openai", SECRET)
    litellm = import_litellm()
    monkeypatch.setenv("GROQ_API_BASE", "http://127.0.0.1:9/v1")  # groq speaks OpenAI's API
    found = routing.resolve(litellm, "groq/llama-3.1-8b-instant")
    assert found.provider == "groq" and found.key == trust.NO_KEY
    trust.set_key("groq", "gsk-stored")
    assert routing.resolve(litellm, "groq/llama-3.1-8b-instant").key == "gsk-stored"
    assert routing.resolve(litellm, "anthropic/claude-sonnet-4-5").key is None


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
