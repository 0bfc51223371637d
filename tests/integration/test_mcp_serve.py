"""tce mcp serve: another agent lists, reads and continues conversations through the SDK's own
client, over stdio and over HTTP (127.0.0.1, bearer token, Origin checked)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.paths import TEST_DATA

BIN = Path(sys.executable).parent
DATA = TEST_DATA
CHAT = """---
agents:
  writer: {models: [test-model]}
default_agent: writer
---

## %% Hello[^h1]
[^h1]: [markdown]

Say hello.
"""


@pytest.fixture
def served(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "hello.msg.md").write_text(CHAT)
    (tmp_path / "secret.msg.md").write_text(CHAT)  # outside the folder served
    return folder


def _env(openai_server: OpenAIServer, user_config_dir: Path) -> dict[str, str]:
    return {
        "PERCENT_AGENT_CONFIG_DIR": str(user_config_dir),
        "PERCENT_AGENT_API_BASE": openai_server.url,
        "PERCENT_AGENT_MODEL": "test-model",
        "PERCENT_AGENT_RETRIES": "0",
        "PERCENT_AGENT_BACKOFF": "0",
        "PERCENT_AGENT_WARM": "0",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


def _serve_params(served: Path, openai_server: OpenAIServer, user_config_dir: Path) -> object:
    """``tce mcp serve FOLDER`` over stdio, started in the folder it serves."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=str(BIN / "tce"),
        args=["mcp", "serve", str(served)],
        env=_env(openai_server, user_config_dir),
        cwd=str(served),
    )


def _stdio(params) -> object:
    """The SDK's stdio transport, the server's stderr to a file of its own (not this
    process's stderr, which a test runner may have replaced)."""
    from mcp.client.stdio import stdio_client

    log = open(os.devnull, "w")
    return stdio_client(params, errlog=log)


async def _converse(client) -> dict:
    """What another agent does: list, read, continue a conversation, try to leave."""
    tools = {t.name for t in (await client.list_tools()).tools}
    listed = (await client.call_tool("list_conversations", {})).structured_content
    read = await client.call_tool("read_conversation", {"path": "notes/sub/hello.msg.md"})
    sent = await client.call_tool(
        "send_message", {"path": "notes/sub/hello.msg.md", "message": "And in French?"}
    )
    out = await client.call_tool("read_conversation", {"path": "notes/../secret.msg.md"})
    return {
        "tools": tools,
        "listed": listed,
        "read": read.content[0].text,
        "sent": sent.structured_content,
        "out": out,
    }


def _check(result: dict, served: Path) -> None:
    assert {
        "list_conversations",
        "read_conversation",
        "send_message",
        "run_task",
        "search_sops",
    } <= result["tools"]
    assert result["listed"]["result"] == [{"path": "sub/hello.msg.md", "messages": 1}]
    assert "Say hello." in result["read"]
    sent = result["sent"]
    assert sent["status"] == "ok" and sent["reply"] == "Bonjour !"
    assert list(sent)[:6] == ["path", "cell", "agent", "status", "reply", "error"]
    cells = hist.conversation_cells(fmt.read(served / "sub" / "hello.msg.md"))
    assert fmt.message_text(cells[-1]).strip() == "And in French?"
    assert fmt.output_text(cells[-1]["outputs"][-1]) == "Bonjour !"
    out = result["out"]
    assert out.is_error and "refused: path '../secret.msg.md' leads out of" in out.content[0].text


def _serve(folders: list[Path], openai_server: OpenAIServer, user_config_dir: Path) -> object:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=str(BIN / "tce"),
                                 args=["mcp", "serve", *map(str, folders)],
                                 env=_env(openai_server, user_config_dir), cwd=str(folders[0]))


def _read_all(params: object, paths: list[str]) -> list[tuple[bool, str]]:
    """read_conversation of each path over the SDK's client: (is an error, its text)."""
    from mcp import Client

    async def go() -> list[tuple[bool, str]]:
        async with Client(_stdio(params), read_timeout_seconds=60) as client:
            out = []
            for path in paths:
                r = await client.call_tool("read_conversation", {"path": path})
                out.append((r.is_error, r.content[0].text))
            return out

    return asyncio.run(go())


def test_with_one_folder_paths_are_relative_to_it_and_the_prefixed_form_still_works(
    served: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    """Other agents wrote ``sub/hello.msg.md`` on their first call, and were told paths
    start with the folder's name; now that is the path, and ``notes/...`` still is."""
    (served / "sub" / "link.msg.md").symlink_to(served.parent / "secret.msg.md")
    (served / "sub" / "dirlink").symlink_to(served.parent)
    got = _read_all(_serve([served], openai_server, user_config_dir), [
        "sub/hello.msg.md", "./sub/hello.msg.md", "notes/sub/hello.msg.md",
        str(served / "sub" / "hello.msg.md"),
        "../secret.msg.md", "sub/../../secret.msg.md", "notes/../secret.msg.md",
        str(served.parent / "secret.msg.md"), "/etc/passwd.md",
        "sub/link.msg.md", "sub/dirlink/secret.msg.md",
    ])
    assert [err for err, _ in got[:4]] == [False] * 4, got
    assert all("Say hello." in text for _, text in got[:4])
    refused = [text for _, text in got[4:]]
    assert all(err for err, _ in got[4:]) and len(refused) == 7
    assert all(text.count("\n") == 0 and "refused: path" in text for text in refused), refused
    assert "Say hello." not in "".join(refused)
    assert "outside the served folder" in refused[3] and "outside the served folder" in refused[4]


def test_with_several_folders_paths_start_with_the_folders_name(
    served: Path, tmp_path: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "hi.msg.md").write_text(CHAT)
    got = _read_all(_serve([served, other], openai_server, user_config_dir), [
        "notes/sub/hello.msg.md", "other/hi.msg.md", "sub/hello.msg.md",
        "notes/../other/hi.msg.md"])
    assert [err for err, _ in got] == [False, False, True, True], got
    assert got[2][1].endswith("'sub/hello.msg.md': paths start with a served folder's name "
                              "(notes, other)")
    assert "refused: path '../other/hi.msg.md' leads out of" in got[3][1]


def test_another_agent_reads_and_continues_a_conversation_over_stdio(
    served: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    from mcp import Client

    openai_server.script("Bonjour !")
    params = _serve_params(served, openai_server, user_config_dir)

    async def go() -> dict:
        async with Client(_stdio(params), read_timeout_seconds=60) as client:
            return await _converse(client)

    _check(asyncio.run(go()), served)


@pytest.fixture
def http_server(served: Path, openai_server: OpenAIServer, user_config_dir: Path, free_port):
    port = free_port()
    proc = subprocess.Popen(
        [str(BIN / "tce"), "mcp", "serve", "--http", "--port", str(port), str(served)],
        env={**os.environ, **_env(openai_server, user_config_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        token = line.split("bearer token: ")[1].split()[0]
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url, token
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_http_server_binds_localhost_and_wants_the_token_and_a_known_origin(
    http_server, served: Path, openai_server: OpenAIServer
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url, token = http_server
    assert url.startswith("http://127.0.0.1:")
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"accept": "application/json, text/event-stream"}
    assert httpx.post(url, json=body, headers=headers).status_code == 401
    assert (
        httpx.post(url, json=body, headers={**headers, "authorization": "Bearer nope"}).status_code
        == 401
    )
    evil = httpx.post(
        url,
        json=body,
        headers={**headers, "authorization": f"Bearer {token}", "origin": "http://evil.example"},
    )
    assert evil.status_code == 403
    openai_server.script("Bonjour !")

    async def go() -> dict:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(
                streamable_http_client(url, http_client=http), read_timeout_seconds=60
            ) as client:
                return await _converse(client)

    _check(asyncio.run(go()), served)


def test_another_agent_runs_a_task_document_and_searches_the_sops(
    served: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    from mcp import Client

    shutil.copytree(DATA / "index" / "sop", served / "sop")
    doc = served / "tasks" / "greet" / "hello.md"
    doc.parent.mkdir(parents=True)
    doc.write_text(
        "---\ntask_id: greet/hello\ntask_type: execute\n---\n\n## parameters.prompt\nSay hello.\n"
    )
    openai_server.script("Hello from the task.")
    params = _serve_params(served, openai_server, user_config_dir)

    async def go() -> tuple:
        async with Client(_stdio(params), read_timeout_seconds=120) as client:
            ran = await client.call_tool(
                "run_task", {"sop": "notes/tasks", "task_id": "greet/hello"}
            )
            found = await client.call_tool(
                "search_sops", {"sop": "notes/sop", "k": 3, "query": "检查提纲是否合格"}
            )
            return ran, found

    ran, found = asyncio.run(go())
    assert not ran.is_error, ran.content
    assert ran.structured_content["status"] == "succeeded"
    assert ran.structured_content["transcript"].startswith("runs/greet")
    assert "blog/validate_outline" in [h["task_id"] for h in found.structured_content["result"]]


def test_an_empty_search_is_one_line_saying_so(
    served: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    """An agent searching for "" got only "Error executing tool search_sops" (the index's
    ValueError was no error of ours, so the SDK hid it) and a traceback in the log."""
    from mcp import Client

    shutil.copytree(DATA / "index" / "sop", served / "sop")
    params = _serve_params(served, openai_server, user_config_dir)

    async def go() -> object:
        async with Client(_stdio(params), read_timeout_seconds=120) as client:
            return await client.call_tool("search_sops", {"sop": "notes/sop", "query": "  "})

    found = asyncio.run(go())
    assert found.is_error
    assert found.content[0].text.endswith("search_sops: the query is empty")


def test_the_users_saved_token_is_used(user_config_dir: Path) -> None:
    from jupyter_percent_agent import mcpserve

    token, source = mcpserve.serve_token(env={})
    assert source is None and len(token) > 30
    saved = user_config_dir / mcpserve.TOKEN_NAME
    saved.write_text("my-own-token\n")
    assert mcpserve.serve_token() == ("my-own-token", str(saved))
    assert json.dumps(token)  # printable as is


def test_a_token_file_comes_first_then_the_environment_then_the_saved_token(
    user_config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_percent_agent import mcpserve

    (user_config_dir / mcpserve.TOKEN_NAME).write_text("saved-token\n")
    monkeypatch.setenv("PERCENT_AGENT_MCP_TOKEN", "env-token")
    assert mcpserve.serve_token() == ("env-token", "PERCENT_AGENT_MCP_TOKEN")
    given = tmp_path / "token"
    given.write_text("  file-token+/==\n")
    assert mcpserve.serve_token(token_file=given) == ("file-token+/==", str(given))


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read the token"),
        ("", "no token (it is empty)"),
        ("two words\n", "not a bearer token"),
        ("one\nline\n", "not a bearer token"),
    ],
)
def test_a_token_file_without_a_bearer_token_is_one_line_and_usage(
    user_config_dir: Path, tmp_path: Path, content: str | None, says: str
) -> None:
    from click.testing import CliRunner

    from jupyter_percent_agent.cli import main

    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    r = CliRunner().invoke(main, ["mcp", "serve", "--http", "--token-file", str(path)])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tce: {path}: ") and says in lines[0]
    assert not content or content.strip() not in r.output  # what the file holds is not shown


def test_token_file_is_refused_without_http(user_config_dir: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jupyter_percent_agent.cli import main

    (tmp_path / "token").write_text("a-token\n")
    r = CliRunner().invoke(main, ["mcp", "serve", "--token-file", str(tmp_path / "token")])
    assert r.exit_code == 2 and "--token-file is for --http" in r.output


def test_the_http_server_takes_the_users_token_from_a_file_and_never_prints_it(
    served: Path, openai_server: OpenAIServer, user_config_dir: Path, free_port, tmp_path: Path
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    token = "users-own-token-0123456789abcdef"
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    port = free_port()
    args = ["mcp", "serve", "--http", "--port", str(port), "--token-file", str(token_file)]
    proc = subprocess.Popen(
        [str(BIN / "tce"), *args, str(served)],
        env={**os.environ, **_env(openai_server, user_config_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert f"bearer token from {token_file}" in line and token not in line
        assert token not in Path(f"/proc/{proc.pid}/cmdline").read_text()
        url = f"http://127.0.0.1:{port}/mcp"
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"accept": "application/json, text/event-stream"}
        deadline = time.monotonic() + 30
        while True:
            try:
                assert httpx.post(url, json=body, headers=headers, timeout=1).status_code == 401
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.1)

        async def tools() -> list[str]:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
                async with Client(
                    streamable_http_client(url, http_client=http), read_timeout_seconds=60
                ) as client:
                    return [t.name for t in (await client.list_tools()).tools]

        assert "read_conversation" in asyncio.run(tools())
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_url_server_the_user_added_is_reached_over_http_with_its_headers(
    http_server, user_config_dir: Path
) -> None:
    """The client side over streamable HTTP: tce serving notes/ is itself a server the user
    adds with --url and a header, and calls like any other."""
    from click.testing import CliRunner

    from jupyter_percent_agent import mcptools
    from jupyter_percent_agent.cli import main

    url, token = http_server
    runner = CliRunner()
    r = runner.invoke(
        main, ["mcp", "add", "notes", "--url", url, "--header", f"Authorization: Bearer {token}"]
    )
    assert r.exit_code == 0, r.output
    try:
        r = runner.invoke(main, ["tools", "list", "-m", "notes"])
        assert r.exit_code == 0, r.output
        assert "def read_conversation(path: str):" in r.output
        assert "str: the result" in r.output  # {"result": ...} unwrapped
        r = runner.invoke(main, ["tools", "call", "list_conversations", "-m", "notes"])
        assert r.exit_code == 0, r.output
        assert json.loads(r.output)["data"] == [{"path": "sub/hello.msg.md", "messages": 1}]
        runner.invoke(main, ["mcp", "add", "notes", "--replace", "--url", url])
        r = runner.invoke(main, ["tools", "list", "-m", "notes"])
        assert r.exit_code == 4 and "MCP server 'notes' did not start" in r.output
    finally:
        mcptools.stop_all()


def test_ctrl_c_stops_the_http_server_with_exit_130(
    served: Path, openai_server: OpenAIServer, user_config_dir: Path, free_port
) -> None:
    """Ctrl-C is 130 and 'tce: interrupted' for every command: the HTTP server exited 0."""
    import signal

    port = free_port()
    proc = subprocess.Popen(
        [str(BIN / "tce"), "mcp", "serve", "--http", "--port", str(port), str(served)],
        env={**os.environ, **_env(openai_server, user_config_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        proc.stderr.readline()
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(20) == 130, rest
        assert rest.strip().splitlines()[-1] == "tce: interrupted", rest
        assert "Traceback" not in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_port_in_use_is_one_line_and_the_usage_exit_code(
    served: Path, openai_server: OpenAIServer, user_config_dir: Path
) -> None:
    """A port another program listens on is a bad --port: uvicorn logged its own line and
    tce exited 3, the code of a malformed file."""
    import socket

    from jupyter_percent_agent.errors import Kind, exit_code

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [str(BIN / "tce"), "mcp", "serve", "--http", "--port", str(port), str(served)],
            env={**os.environ, **_env(openai_server, user_config_dir)},
            capture_output=True, text=True, timeout=60,
        )
    assert proc.returncode == exit_code(Kind.USAGE), proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"tce: 127.0.0.1:{port}: "), proc.stderr
    assert "in use" in last.lower(), proc.stderr
    assert "Traceback" not in proc.stderr
