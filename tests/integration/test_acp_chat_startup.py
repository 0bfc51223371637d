"""``tce chat`` whose agent is external starts the agent, not litellm (``cli/chat.py``'s
``WarmingUp``), for a user whose model litellm routes (no endpoint of their own, so the
warm-up would import litellm itself, seconds of CPU beside the agent's start); a model's turn
still imports it. Measured with ``-X importtime`` of the real command
(benchmarks/bench_acp.py times the first chunk)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from jupyter_percent_agent.testing.environment import run_tce, tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.paths import TEST_DATA

CHAT = "---\nagents:\n  coder: {acp: scripted}\ndefault_agent: coder\n---\n"


def _modules(stderr: str) -> set[str]:
    """The modules ``-X importtime`` says were imported."""
    return {line.split("|")[-1].strip() for line in stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def _imported(stderr: str) -> set[str]:
    """The top-level packages ``-X importtime`` says were imported."""
    return {name.split(".")[0] for name in _modules(stderr)}


def _scripted_chat(tmp_path: Path, trusted: Callable[[Path], Path], turn: list) -> Path:
    """A conversation in a trusted folder whose agent is the scripted ACP agent ``scripted``,
    added for the user, answering one prompt with ``turn``."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"prompts": [turn]}))
    assert tce("acp", "add", "scripted", "--", sys.executable, "-m",
               "jupyter_percent_agent.testing.scripted_acp_agent", str(script)).exit_code == 0
    folder = tmp_path / "work"
    folder.mkdir()
    trusted(folder)
    chat = folder / "chat.msg.md"
    chat.write_text(CHAT, encoding="utf-8")
    return chat


def test_tce_chat_with_an_external_agent_never_imports_litellm(
        tmp_path: Path, trusted: Callable[[Path], Path], env: dict[str, str]) -> None:
    chat = _scripted_chat(tmp_path, trusted, [{"sleep": 2}, {"say": "Hello."}])
    # the user's environment names a model litellm routes (no endpoint of their own)
    user = {k: v for k, v in env.items() if k != "PERCENT_AGENT_API_BASE"}
    done = run_tce("chat", str(chat), "-m", "Hi",
                   env={**user, "PERCENT_AGENT_MODEL": "gpt-4o-mini", "PERCENT_AGENT_WARM": "0",
                        "PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Hello." in done.stdout
    imported = _imported(done.stderr)
    assert "acp" in imported  # the measure works: the ACP SDK's import is seen
    assert "litellm" not in imported


def test_tce_chat_with_an_external_agent_imports_no_mcp_or_tool_modules(
        tmp_path: Path, trusted: Callable[[Path], Path], env: dict[str, str]) -> None:
    """An external agent's turn has no MCP servers nor tools of ours: their modules (the
    tool registry reads package metadata) stay out of the time before the agent starts."""
    chat = _scripted_chat(tmp_path, trusted, [{"say": "Hello."}])
    done = run_tce("chat", str(chat), "-m", "Hi",
                   env={**env, "PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Hello." in done.stdout
    modules = _modules(done.stderr)
    assert "jupyter_percent_agent.mcptools.config" in modules  # the measure works
    assert "jupyter_percent_agent.mcptools.host" not in modules
    assert "jupyter_percent_agent.tools" not in modules


def test_tce_chat_with_a_model_agent_still_imports_litellm_while_it_plans(
        tmp_path: Path, local_model: OpenAIServer, env: dict[str, str]) -> None:
    """The import overlaps building the history, as before: a model turn needs it."""
    local_model.script("Hi there.")
    done = run_tce("chat", str(tmp_path / "chat.msg.md"), "-m", "Hi",
                   env={**env, "PERCENT_AGENT_WARM": "0", "PERCENT_AGENT_DIRECT": "0",
                        "PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Hi there." in done.stdout
    assert "litellm" in _imported(done.stderr)


def test_tce_chat_starts_the_external_agent_before_importing_the_acp_sdk(
        tmp_path: Path, trusted: Callable[[Path], Path], env: dict[str, str]) -> None:
    """The SDK's pydantic models take a quarter of a second of processor or more to build:
    the agent is started first, so its own start-up runs beside that import (issue 38's
    first chunk within 50 ms of a bare SDK client). The order is told by an audit hook
    (``tests/data/acp/process_order/sitecustomize.py``) in the real command."""
    chat = _scripted_chat(tmp_path, trusted, [{"say": "Hello."}])
    done = run_tce("chat", str(chat), "-m", "Hi",
                   env={**env, "PYTHONPATH": str(TEST_DATA / "acp" / "process_order")})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Hello." in done.stdout
    started = [line for line in done.stderr.splitlines()
               if line.startswith("started-process:") and "scripted_acp_agent" in line]
    assert len(started) == 1, done.stderr[-2000:]  # the measure works: the start is seen
    assert "sdk_imported=False" in started[0]
