"""Stored API keys and the default model (``tce keys``, ``tce models``, ``trust.keys``): a first
run with no key in the environment, keys kept private, and stored keys under the trust rules."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from jupyter_percent_agent import trust
from jupyter_percent_agent.cli import main
from jupyter_percent_agent.litellm_setup import import_litellm
from jupyter_percent_agent.runtime import routing
from jupyter_percent_agent.runtime.agents import environment_agent
from jupyter_percent_agent.testing.environment import tce
from tests.helpers.keys import SECRET


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


# -- stored keys follow the trust rules: only to their own provider's endpoint ---------------


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


