"""Agents: presets, definition cells, resolution order, errors."""

from __future__ import annotations

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import set_cell_attrs
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.agents import (
    AgentError,
    agent_from_mapping,
    known_agents,
    resolve_agent,
    split_definition,
)
from tests.paths import TEST_DATA

DATA = TEST_DATA / "runtime"


@pytest.fixture
def basic() -> dict:
    return fmt.read(DATA / "basic.msg.md")


@pytest.fixture
def defs() -> dict:
    return fmt.read(DATA / "agents.msg.md")


def test_presets(basic: dict) -> None:
    agents = known_agents(basic)
    assert list(agents) == ["planner", "critic"]
    assert agents["planner"].system_prompt == "You plan carefully."
    assert agents["planner"].models == ["test-model"]


def test_definition_cells(defs: dict) -> None:
    agents = known_agents(defs)
    rev = agents["reviewer"]
    assert rev.models == ["review-model", "backup-model"]
    assert rev.context_window == 4000 and rev.max_output_tokens == 500
    assert rev.temperature == 0.1
    assert rev.system_prompt.startswith("You review plans.")
    bare = agents["bare"]
    assert bare.models == ["bare-model"] and bare.use_temperature is False
    assert bare.system_prompt == "You are bare."


def test_resolution_order(basic: dict) -> None:
    cell = hist.conversation_cells(basic)[3]
    env = {"PERCENT_AGENT_MODEL": "env-model"}
    assert resolve_agent(basic, cell, env=env).name == "planner"  # default_agent
    assert resolve_agent(basic, cell, cli_agent="critic", env=env).name == "critic"
    set_cell_attrs(cell, {"agent": "planner"})
    assert resolve_agent(basic, cell, cli_agent="critic", env=env).name == "planner"


def test_first_preset_then_first_cell_then_environment(basic: dict, defs: dict) -> None:
    fmt.set_front_matter(basic, "default_agent", None)
    env = {"PERCENT_AGENT_MODEL": "env-a,env-b"}
    assert resolve_agent(basic, None, env=env).name in ("planner",)
    assert resolve_agent(defs, None, env=env).name == "reviewer"
    empty = fmt.reads("## %% hi[^x]\n\n[^x]: [markdown]\n\nhello\n", path="e.msg.md")
    agent = resolve_agent(empty, None, env=env)
    assert agent.name == "default" and agent.models == ["env-a", "env-b"]
    assert resolve_agent(empty, None, env=env, model="cli-model").models == ["cli-model"]


def test_unknown_agent_lists_known(basic: dict) -> None:
    with pytest.raises(AgentError, match="known agents: critic, planner"):
        resolve_agent(basic, None, cli_agent="nobody")


def test_unknown_agent_lists_default_as_a_known_agent(basic: dict) -> None:
    with pytest.raises(AgentError, match=r"known agents: critic, planner, default$"):
        resolve_agent(basic, None, cli_agent="nobody")
    empty = fmt.reads("## %% hi[^x]\n\n[^x]: [markdown]\n\nhello\n", path="e.msg.md")
    with pytest.raises(AgentError, match=r"unknown agent 'nosuch'; known agents: default$"):
        resolve_agent(empty, None, cli_agent="nosuch")
    assert resolve_agent(empty, None, cli_agent="default").name == "default"


def test_model_override(basic: dict) -> None:
    assert resolve_agent(basic, None, model="x,y").models == ["x", "y"]


def test_bad_properties() -> None:
    with pytest.raises(AgentError, match="models"):
        agent_from_mapping("a", {"models": 3}, source="preset")
    with pytest.raises(AgentError, match="context_window"):
        agent_from_mapping("a", {"context_window": "big"}, source="preset")


def test_split_definition_forms() -> None:
    assert split_definition("```yaml\nmodels: [a]\n```\nPrompt") == ("models: [a]", "Prompt")
    assert split_definition("---\nmodels: [a]\n---\nPrompt") == ("models: [a]", "Prompt")
    assert split_definition("just a prompt") == ("", "just a prompt")
