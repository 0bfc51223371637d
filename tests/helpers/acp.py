"""The scripted ACP agent as the user's agent in a conversation folder, for the tests that run
it through the real ``tce`` (the agent: jupyter_percent_agent/testing/scripted_acp_agent.py,
its scripts: tests/data/acp)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.testing.environment import tce
from tests.paths import TEST_DATA

ACP_DATA = TEST_DATA / "acp"
"""The scripted agent's scripts, and the files the ACP tests give it."""
AGENT = [sys.executable, "-m", "jupyter_percent_agent.testing.scripted_acp_agent"]
"""The command that starts the scripted agent (its script's path follows)."""
HEADER = "---\nagents:\n  coder:\n    acp: {name}\n---\n\n"
"""Front matter whose agent ``coder`` is the user's ACP agent ``{name}``."""


class Scripted:
    """A conversation folder (``tmp_path/project``, a git repository) with a message file
    whose agent ``coder`` is the scripted agent the user added as ``fake``; ``calls()``: what
    the agent answered, from its log."""

    def __init__(self, tmp_path: Path) -> None:
        self.folder = tmp_path / "project"
        (self.folder / ".git").mkdir(parents=True)
        (self.folder / ".git" / "config").write_text("[core]\n")
        (self.folder / "notes.txt").write_text("hello\n")
        self.path = self.folder / "chat.msg.md"
        self.path.write_text(HEADER.format(name="fake"))
        self.log = tmp_path / "calls.jsonl"

    def add(self, script: str, *options: str, name: str = "fake") -> None:
        """``tce acp add NAME``: the scripted agent running ``script`` (in tests/data/acp),
        logging its calls; ``options`` go to ``tce acp add``."""
        r = tce("acp", "add", name, "--env", f"SCRIPTED_ACP_LOG={self.log}", *options, "--",
                *AGENT, str(ACP_DATA / script))
        assert r.exit_code == 0, r.output

    def calls(self, method: str | None = None) -> list[dict]:
        """The calls the agent answered (those of ``method`` only, when given)."""
        if not self.log.exists():
            return []
        rows = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [r for r in rows if method is None or r["method"] == method]

    def outputs(self, index: int = -1) -> list[dict]:
        """The outputs of the conversation cell ``index`` as saved."""
        return list(hist.conversation_cells(fmt.read(self.path))[index].get("outputs") or [])

    def answer(self, index: int = -1) -> dict:
        """The attributes of the last output of the conversation cell ``index``."""
        return fmt.output_attrs(self.outputs(index)[-1])

