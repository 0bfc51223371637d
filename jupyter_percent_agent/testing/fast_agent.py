"""fast-agent, a real third-party ACP agent, driven by the local model server.

fast-agent needs Python 3.12+, so `make setup` installs it (exactly
``requirements/fast-agent.txt``) into its own ``.venv-acp`` beside ``.venv``
(``scripts/setup-acp.sh``). :func:`fast_agent_for` writes the agent's config into a folder of
the test's (its log off, tracing off, its home with its sessions there, never in the
conversation's folder) and gives the command line ``tce acp add`` takes; its ``generic.*``
model reads ``GENERIC_BASE_URL``, the local server, which a test scripts with
``Reply(content="", tool_calls=[{"name": "read_text_file", "arguments": {"path": ...}}])``
(fast-agent's file tools, served by the ACP client: ``read_text_file``, ``write_text_file``;
each asks permission first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FAST_AGENT_ENV", "FastAgent", "fast_agent_executable", "fast_agent_for"]

FAST_AGENT_ENV = "PERCENT_AGENT_FAST_AGENT"
"""Names the ``fast-agent-acp`` to use instead of ``.venv-acp/bin/fast-agent-acp``."""

MODEL = "generic.test-model"

_CONFIG = """\
# fast-agent for the tests: the local model server (GENERIC_BASE_URL), nothing written beside
# the conversation, nothing sent anywhere else.
default_model: {model}
logger:
  type: none
  progress_display: false
otel:
  enabled: false
"""


@dataclass
class FastAgent:
    """fast-agent as an ACP agent: the command that starts it, and what it needs set."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    home: Path | None = None
    """fast-agent's own folder (its sessions): the test's, not the conversation's."""

    def acp_add_args(self, name: str = "coder", *options: str) -> list[str]:
        """``tce``'s arguments that add this agent as ``name`` (``options`` such as
        ``--permissions allow`` go before the command)."""
        env = [arg for key, value in self.env.items() for arg in ("--env", f"{key}={value}")]
        return ["acp", "add", name, *env, *options, "--", *self.command]


def fast_agent_executable(root: Path) -> Path | None:
    """The ``fast-agent-acp`` that ``make setup`` installed under ``root`` (or the one
    ``$PERCENT_AGENT_FAST_AGENT`` names), or None when there is none."""
    named = os.environ.get(FAST_AGENT_ENV)
    path = Path(named) if named else root / ".venv-acp" / "bin" / "fast-agent-acp"
    return path if os.access(path, os.X_OK) else None


def fast_agent_for(executable: Path, base_url: str, folder: Path) -> FastAgent:
    """fast-agent on the model server at ``base_url``, its config and home in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "fastagent.config.yaml"
    config.write_text(_CONFIG.format(model=MODEL), encoding="utf-8")
    home = folder / "home"
    command = [str(executable), "--config-path", str(config), "--model", MODEL,
               "--home", str(home)]
    return FastAgent(command=command, env={"GENERIC_BASE_URL": base_url}, home=home)
