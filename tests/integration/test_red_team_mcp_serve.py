"""Red team: another agent, over ``tce mcp serve``, writes nothing outside the folders served.

The agent on the other end of the protocol may be prompt-injected. It names a SOP folder to
run; naming the served folder itself makes that folder's parent the place of the run's
``runs/`` and ``toolbox/``, outside what the user served. The real ``tce mcp serve`` over
stdio, the SDK's client, the local model server as the model.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from jupyter_percent_agent.testing.environment import model_env
from jupyter_percent_agent.testing.openai_server import OpenAIServer

BIN = Path(sys.executable).parent


def test_a_served_folder_itself_is_no_sop_folder_whose_runs_go_above_it(
    tmp_path: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    served = tmp_path / "notes"
    doc = served / "greet" / "hello.md"
    doc.parent.mkdir(parents=True)
    doc.write_text(
        "---\ntask_id: greet/hello\ntask_type: execute\n---\n\n## parameters.prompt\nSay hello.\n"
    )
    openai_server.script("Hello from the task.")
    params = StdioServerParameters(
        command=str(BIN / "tce"),
        args=["mcp", "serve", str(served)],
        env=model_env(openai_server, user_config_dir),
        cwd=str(served),
    )

    async def go() -> object:
        log = open(os.devnull, "w")
        try:
            async with Client(stdio_client(params, errlog=log), read_timeout_seconds=120) as c:
                return await c.call_tool("run_task", {"sop": "notes", "task_id": "greet/hello"})
        finally:
            log.close()

    ran = asyncio.run(go())
    assert not (tmp_path / "runs").exists()
    assert ran.is_error
    assert openai_server.chat_requests == []
