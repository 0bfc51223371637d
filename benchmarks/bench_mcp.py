"""MCP: ATTP code mode against JSON tool calls, and the cost of one call from ATTP code.

1. **Round trips and tokens.** The task: count the commits by author in five repositories,
   with a real ``mcp-server-git`` (five ``git_log`` calls and filtering). ATTP code mode is
   ``tce chat``'s own turn (the model's code calls ``git_log`` five times in the sandbox and
   counts; only the counts reach the model). The peer is the same model driving the same
   server with JSON function calls through litellm (the tools' input schemas sent as
   ``tools``; each result goes back into the conversation), as one call per round trip and
   as five parallel calls in one round trip. Both models are scripted on the local test
   server; the prompt and completion tokens are the server's own counts (words of what it
   received: messages, function calls, tool schemas), the round trips its requests.
2. **Call overhead.** One ``get_current_time`` call to a warm ``mcp-server-time``: made
   directly with the SDK's ``Client``, through our ``Tool`` (the host's loop), and from
   ATTP code in the sandbox (20 calls in one run, minus the same run with no call; per call).
   Medians of several runs.

Run: ``.venv/bin/python -m benchmarks mcp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("PERCENT_AGENT_WARM", "0")
os.environ.setdefault("PERCENT_AGENT_BACKOFF", "0")

from benchmarks._timing import median_seconds, print_table

BIN = Path(sys.executable).parent
AUTHORS = ["Ada <ada@example.org>", "Linus <linus@example.org>", "Grace <grace@example.org>"]
REPOS = ["api", "web", "billing", "search", "auth"]
SIZES = (40, 200)  # commits per repository

ATTP_STEP = """thought = \"\"\"Five repositories: git_log for each, count the authors in code.\"\"\"

[tool_call]
status = "success"
target = "Commits by author in five repositories"
code = '''
counts = {}
for repo in REPOS:
    for line in git_log(repo, max_count=1000).splitlines():
        if line.startswith("Author: "):
            counts[line[8:]] = counts.get(line[8:], 0) + 1
__result__ = counts
'''
"""
ANSWER = 'thought = "done"\nanswer = """Commits by author: Ada 70, Linus 65, Grace 65."""\n'
FINAL = "Commits by author: Ada 70, Linus 65, Grace 65."
QUESTION = "Count the commits by author in our five repositories."


def _git(repo: Path) -> Any:
    def run(*args: str, **env: str) -> None:
        subprocess.run(
            ["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **env}
        )

    return run


def make_repos(root: Path, commits: int) -> list[str]:
    """Five git repositories with commits by three authors (the git CLI, no network)."""
    paths = []
    for name in REPOS:
        repo = root / name
        repo.mkdir(parents=True)
        run = _git(repo)
        run("init", "-q", "-b", "main")
        for i in range(commits):
            name_, mail = AUTHORS[i % 3].rstrip(">").split(" <")
            (repo / "log.txt").write_text(f"change {i}\n")
            run("add", "log.txt")
            run(
                "commit",
                "-q",
                "-m",
                f"{repo.name}: change {i}\n\nA longer body of the change.",
                GIT_AUTHOR_NAME=name_,
                GIT_AUTHOR_EMAIL=mail,
                GIT_COMMITTER_NAME=name_,
                GIT_COMMITTER_EMAIL=mail,
            )
        paths.append(str(repo))
    return paths


def _totals(server: Any, since: int) -> dict[str, int]:
    chats = [r for r in server.requests[since:] if r.path.endswith("/chat/completions")]
    return {
        "round_trips": len(chats),
        "prompt": sum((r.usage or {}).get("prompt_tokens", 0) for r in chats),
        "completion": sum((r.usage or {}).get("completion_tokens", 0) for r in chats),
    }


def attp_mode(server: Any, folder: Path, repos: list[str], ada: int) -> dict[str, int]:
    """tce chat's turn: the model's code calls git_log five times and counts."""
    from jupyter_percent_agent.cli.chat import run_chat

    path = folder / "count.msg.md"
    path.write_text("---\nagents:\n  dev:\n    models: [test-model]\n    tools: [git]\n---\n")
    step = ATTP_STEP.replace("for repo in REPOS:", f"for repo in {json.dumps(repos)}:")
    server.script(step, ANSWER)
    since = len(server.requests)
    with contextlib.redirect_stdout(io.StringIO()):
        code = run_chat(path, QUESTION, as_json=True)
    assert code == 0, f"tce chat exited {code}"
    assert f'"Ada": {ada}' in server.chat_requests[-1].messages[-1]["content"]
    return _totals(server, since)


async def json_mode(server: Any, repos: list[str], *, parallel: bool) -> dict[str, int]:
    """The same model and server with JSON function calls through litellm."""
    import litellm
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=str(BIN / "mcp-server-git"))
    async with Client(params) as client:
        listed = (await client.list_tools()).tools
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in listed
        ]
        calls = [
            {"name": "git_log", "arguments": {"repo_path": r, "max_count": 1000}} for r in repos
        ]
        from jupyter_percent_agent.testing.openai_server import Reply

        script = (
            [Reply("", tool_calls=calls)]
            if parallel
            else [Reply("", tool_calls=[c]) for c in calls]
        )
        server.script(*script, Reply(FINAL))
        since = len(server.requests)
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        kwargs = {"api_base": server.url, "api_key": "not-needed", "num_retries": 0}
        while True:
            res = await litellm.acompletion(
                model="openai/test-model", messages=messages, tools=tools, **kwargs
            )
            msg = res.choices[0].message
            if not msg.tool_calls:
                assert msg.content == FINAL
                break
            messages.append(msg.model_dump(exclude_none=True))
            for call in msg.tool_calls:
                out = await client.call_tool(
                    call.function.name, json.loads(call.function.arguments)
                )
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": "\n".join(c.text for c in out.content if c.type == "text"),
                    }
                )
        return _totals(server, since)


def overhead(folder: Path) -> list[tuple[str, float]]:
    """Milliseconds per get_current_time call: direct SDK, our Tool, ATTP code."""
    from mcp import Client, StdioServerParameters

    from jupyter_percent_agent import mcptools, sandbox

    spec = mcptools.ServerSpec("clock", command=str(BIN / "mcp-server-time"))
    (tool, *_) = [t for t in mcptools.server_tools([spec], folder) if t.name == "get_current_time"]
    args = {"timezone": "Asia/Tokyo"}
    n = 20

    async def direct_runs() -> float:
        params = StdioServerParameters(command=str(BIN / "mcp-server-time"))
        async with Client(params) as client:
            await client.call_tool("get_current_time", args)
            samples = []
            for _ in range(7):
                start = time.perf_counter()
                for _ in range(n):
                    await client.call_tool("get_current_time", args)
                samples.append((time.perf_counter() - start) / n)
            return sorted(samples)[3]

    direct = asyncio.run(direct_runs())
    ours = median_seconds(lambda: [tool.run(args) for _ in range(n)]) / n
    tools = {"get_current_time": tool}
    calls = f'for _ in range({n}):\n    get_current_time("Asia/Tokyo")\n__result__ = 1\n'
    sandbox.warm_pool()
    with_calls = median_seconds(lambda: sandbox.execute(calls, tools=tools, timeout=60))
    without = median_seconds(
        lambda: sandbox.execute(
            f"for _ in range({n}):\n    pass\n__result__ = 1\n", tools=tools, timeout=60
        )
    )
    in_code = (with_calls - without) / n
    mcptools.stop_all()
    return [
        ("direct SDK Client.call_tool (peer)", direct * 1000),
        ("our Tool (host loop)", ours * 1000),
        ("from ATTP code in the sandbox", in_code * 1000),
    ]


def main() -> None:
    from jupyter_percent_agent import mcptools
    from jupyter_percent_agent.testing.openai_server import OpenAIServer

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["PERCENT_AGENT_CONFIG_DIR"] = str(root / "config")
        mcptools.add_server(mcptools.ServerSpec("git", command=str(BIN / "mcp-server-git")))
        from jupyter_percent_agent import trust

        trust.trust_folder(root)  # the user's git server acts in trusted folders only
        rows = []
        for commits in SIZES:
            repos = make_repos(root / f"repos{commits}", commits)
            with OpenAIServer() as server:
                os.environ["PERCENT_AGENT_API_BASE"] = server.url
                os.environ["PERCENT_AGENT_MODEL"] = "test-model"
                attp = attp_mode(server, root, repos, 5 * ((commits + 2) // 3))
                mcptools.stop_all()
                seq = asyncio.run(json_mode(server, repos, parallel=False))
                par = asyncio.run(json_mode(server, repos, parallel=True))
            for label, t in (
                ("ATTP code mode", attp),
                ("JSON tool calls, one a round trip", seq),
                ("JSON tool calls, five in parallel", par),
            ):
                total = t["prompt"] + t["completion"]
                rows.append(
                    (
                        commits,
                        label,
                        t["round_trips"],
                        t["prompt"],
                        t["completion"],
                        total,
                        total / (attp["prompt"] + attp["completion"]),
                    )
                )
        print_table(
            "Five git_log calls and a count by author (local test server's counts)",
            rows,
            [
                "commits/repo",
                "mode",
                "round trips",
                "prompt tokens",
                "completion tokens",
                "total",
                "x ATTP",
            ],
        )
        print_table(
            "One get_current_time call, server warm (median ms per call)",
            overhead(root),
            ["path", "ms per call"],
        )


if __name__ == "__main__":
    main()
