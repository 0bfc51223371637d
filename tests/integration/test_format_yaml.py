"""The YAML alias bomb against a real ``tce chat`` process (under a memory limit) and the
contents server."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import time
from pathlib import Path

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_percent_agent.testing.environment import tce_command
from tests.paths import TEST_DATA

BOMB = TEST_DATA / "format" / "yaml" / "alias_bomb.msg.md"
BOMB_IN_AGENTS = TEST_DATA / "format" / "yaml" / "alias_bomb_agents.msg.md"


def _limit_memory() -> None:
    # Before the fix, the bomb filled the machine's memory: a test that fails must not do that.
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.parametrize("bomb", [BOMB, BOMB_IN_AGENTS], ids=["jupyter-entry", "agents"])
def test_tce_chat_on_the_bomb_is_exit_3_on_one_line(tmp_path: Path, bomb: Path) -> None:
    path = tmp_path / "bomb.msg.md"
    path.write_bytes(bomb.read_bytes())
    env = {**os.environ, "PERCENT_AGENT_API_BASE": "http://127.0.0.1:9/v1",
           "PERCENT_AGENT_MODEL": "test-model", "PERCENT_AGENT_WARM": "0"}
    start = time.monotonic()
    done = subprocess.run(tce_command("chat", str(path), "-m", "hello"), env=env,
                          capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory)
    assert time.monotonic() - start < 30
    assert done.returncode == 3, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"tce: {path}:4: ")
    assert "anchors and aliases are refused" in lines[0]
    assert "Traceback" not in done.stderr
    assert path.read_bytes() == bomb.read_bytes()


async def test_the_contents_server_answers_the_bomb_with_a_400_naming_the_line(
    jp_fetch, jp_root_dir: Path
) -> None:
    # The jupyter: entry is the notebook's metadata, read on every open. (The front matter's
    # other keys are not read to open a file: the kernel reads them, through load_yaml.)
    (jp_root_dir / "bomb.msg.md").write_bytes(BOMB.read_bytes())
    start = time.monotonic()
    with pytest.raises(HTTPClientError) as info:
        await jp_fetch("api", "contents", "bomb.msg.md", method="GET", request_timeout=20)
    assert time.monotonic() - start < 10
    assert info.value.code == 400
    message = json.loads(info.value.response.body)["message"]
    assert message.startswith("bomb.msg.md:4: ")  # the line tce names it with, too
    assert "anchors and aliases are refused" in message
    assert "Traceback" not in message
