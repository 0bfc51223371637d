"""MCP servers' tools in ATTP code: the user's servers (tce mcp), their tools (tce tools list
-m), a real mcp-server-time called from model code through tce chat, and the trust rules for
servers a file or its folder defines. Real servers from the package registry, the SDK's own
client; nothing mocked at the protocol."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import mcptools
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.testing.environment import tce
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.paths import TEST_DATA

DATA = TEST_DATA / "mcp"
BIN = Path(sys.executable).parent
TIME_SERVER = str(BIN / "mcp-server-time")
STEP = (DATA / "tokyo_step.toml").read_text()
ANSWER = (DATA / "tokyo_answer.toml").read_text()
HEADER = (
    "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [clock]\n"
    "    system_prompt: You tell the time.\n---\n"
)


@pytest.fixture
def clock(user_config_dir: Path) -> str:
    """The user added mcp-server-time as ``clock``."""
    r = tce("mcp", "add", "clock", "--untrusted-ok", "--", TIME_SERVER, "--local-timezone", "UTC")
    assert r.exit_code == 0, r.output
    yield "clock"
    mcptools.stop_all()


def _servers_in(folder: Path) -> set[int]:
    """Live processes whose working folder is ``folder`` (our servers start in the user's
    config folder)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")) == folder.resolve():
                    stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    if stat[0] != "Z":
                        found.add(int(entry.name))
            except OSError:
                continue
    return found


# -- the user's servers ---------------------------------------------------------------------


def test_add_list_remove_keep_servers_in_the_users_config_only(
    user_config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    r = tce("mcp", "add", "clock", "--env", "TZ=UTC", "--", TIME_SERVER, "--local-timezone", "UTC")
    assert r.exit_code == 0, r.output
    r = tce(
        "mcp",
        "add",
        "issues",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--header",
        "Authorization: Bearer t0k",
    )
    assert r.exit_code == 0, r.output
    saved = json.loads((user_config_dir / "mcp.json").read_text())["mcpServers"]
    assert saved["clock"] == {
        "command": TIME_SERVER,
        "args": ["--local-timezone", "UTC"],
        "env": {"TZ": "UTC"},
    }
    assert saved["issues"] == {
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"Authorization": "Bearer t0k"},
    }
    assert (user_config_dir / "mcp.json").stat().st_mode & 0o077 == 0  # it may hold secrets
    assert list(tmp_path.iterdir()) == []  # nothing in the project
    r = tce("mcp", "list")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith(f"clock\tstdio\t{TIME_SERVER} --local-timezone UTC\t2 tools")
    assert lines[1].startswith(
        "issues\thttp\thttp://127.0.0.1:9/mcp\tunreachable: MCP server 'issues'"
    )
    assert tce("mcp", "add", "clock", "--", "other").exit_code == 2  # the name is taken
    assert tce("mcp", "remove", "issues").exit_code == 0
    assert tce("mcp", "remove", "issues").exit_code == 2
    assert list(json.loads((user_config_dir / "mcp.json").read_text())["mcpServers"]) == ["clock"]
    assert _servers_in(user_config_dir) == set()  # tce mcp list stopped what it started


def test_a_bad_server_name_or_entry_is_one_line_and_usage(user_config_dir: Path) -> None:
    r = tce("mcp", "add", "../x", "--", "cmd")
    assert r.exit_code == 2 and "cannot name an MCP server" in r.output
    r = tce("mcp", "add", "both", "--url", "http://x/mcp", "--", "cmd")
    assert r.exit_code == 2
    (user_config_dir / "mcp.json").write_text('{"mcpServers": {"a": {"args": []}}}')
    r = tce("mcp", "list")
    assert r.exit_code == 2 and "'a': needs a command or a url" in r.output


def test_import_adds_the_servers_the_user_confirms(user_config_dir: Path) -> None:
    r = tce("mcp", "import", str(DATA / "claude_desktop_config.json"), input="y\nn\ny\n")
    assert r.exit_code == 0, r.output
    assert "2 of 3 servers added" in r.output
    saved = mcptools.load_servers()
    assert sorted(saved) == ["clock", "issues"]
    assert saved["issues"].headers == {"Authorization": "Bearer t"}
    r = tce("mcp", "import", str(DATA / "claude_desktop_config.json"), "--yes")
    assert "skipped 'clock'" in r.output and "1 of 3 servers added" in r.output
    assert sorted(mcptools.load_servers()) == ["clock", "git", "issues"]
    bad = user_config_dir / "bad.json"
    bad.write_text('{"mcpServers": [1,')
    r = tce("mcp", "import", str(bad))
    assert r.exit_code == 2 and "bad.json, line 1: not JSON" in r.output


def test_import_with_answers_that_run_out_adds_what_was_answered(user_config_dir: Path) -> None:
    """tce mcp import < /dev/null (or answers that run out) ended with click's "Aborted!" and
    exit 1, the code of a failed model call: no more answers is "no" to the rest."""
    config = str(DATA / "claude_desktop_config.json")
    r = tce("mcp", "import", config, input="y\n")
    assert r.exit_code == 0, r.output
    assert "Aborted" not in r.output and "1 of 3 servers added" in r.output
    assert "no more answers on standard input" in r.output
    assert sorted(mcptools.load_servers()) == ["clock"]
    r = tce("mcp", "import", config, input="")
    assert r.exit_code == 0 and "0 of 3 servers added" in r.output


def test_a_config_file_that_is_not_utf8_is_one_line_naming_it(user_config_dir: Path) -> None:
    """A config exported in UTF-16 (as some Windows editors save it) was a
    UnicodeDecodeError traceback from tce mcp import, and from every command reading the
    user's mcp.json."""
    exported = user_config_dir / "exported.json"
    exported.write_bytes('{"mcpServers": {}}'.encode("utf-16"))
    r = tce("mcp", "import", str(exported))
    assert r.exit_code == 2, r.output
    assert "exported.json: not UTF-8 text" in r.output and "Traceback" not in r.output
    (user_config_dir / "mcp.json").write_bytes(b"\xff\xfe{}")
    r = tce("mcp", "list")
    assert r.exit_code == 2 and "mcp.json: not UTF-8 text" in r.output


def test_tools_list_m_shows_a_servers_tools_with_signatures(clock: str) -> None:
    r = tce("tools", "list", "-m", "clock")
    assert r.exit_code == 0, r.output
    assert "def get_current_time(timezone: str):" in r.output
    assert "def convert_time(source_timezone: str, time: str, target_timezone: str):" in r.output
    assert "IANA timezone name" in r.output
    r = tce(
        "tools", "call", "get_current_time", "-m", "clock", "--args", '{"timezone": "Asia/Tokyo"}'
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)["data"]
    assert data["timezone"] == "Asia/Tokyo" and data["datetime"].endswith("+09:00")


# -- the model's ATTP code calls a real server ----------------------------------------------


def test_the_models_code_asks_a_real_time_server_the_time_in_tokyo(
    clock: str, local_model: OpenAIServer, tmp_path: Path, user_config_dir: Path
) -> None:
    """The "done when": in a folder nobody trusted, the model's code calls
    get_current_time, the result reaches the model, and everything is in the file."""
    local_model.script(STEP, ANSWER)
    path = tmp_path / "time.msg.md"
    path.write_text(HEADER)
    r = tce("chat", str(path), "-m", "What time is it in Tokyo?")
    assert r.exit_code == 0, r.output
    first = local_model.chat_requests[0].messages[0]["content"]
    assert "def get_current_time(timezone: str):" in first  # described in the ATTP prompt
    second = local_model.chat_requests[1].messages[-1]["content"]
    assert "Asia/Tokyo 20" in second and "+09:00" in second  # the result reached the model
    (cell,) = hist.conversation_cells(fmt.read(path))
    outs = cell["outputs"]
    assert [fmt.output_kind(o) for o in outs] == ["reply", "tool_call", "tool_result", "reply"]
    assert fmt.output_attrs(outs[1])["name"] == "get_current_time"
    assert 'get_current_time("Asia/Tokyo")' in fmt.output_text(outs[1])
    assert "+09:00" in fmt.output_text(outs[2])
    assert _servers_in(user_config_dir) == set()  # tce chat stopped the server it started


def test_a_server_that_writes_garbage_is_one_error_naming_it_and_the_file_goes_on(
    local_model: OpenAIServer, tmp_path: Path, user_config_dir: Path
) -> None:
    r = tce("mcp", "add", "clock", "--untrusted-ok", "--",
            "/bin/sh", "-c", "echo garbage; echo broke >&2; sleep 60")
    assert r.exit_code == 0, r.output
    path = tmp_path / "time.msg.md"
    path.write_text(HEADER)
    started = time.monotonic()
    r = tce("chat", str(path), "-m", "What time is it in Tokyo?")
    assert time.monotonic() - started < 20  # no waiting out a timeout, no retry loop
    assert r.exit_code == 4  # tools
    assert local_model.chat_requests == []
    (cell,) = hist.conversation_cells(fmt.read(path))
    (out,) = cell["outputs"]
    assert fmt.output_kind(out) == "error"
    assert (
        "MCP server 'clock' did not start: wrote something that is not MCP to its stdout"
        in fmt.output_text(out)
    )
    assert "broke" in fmt.output_text(out)  # the tail of its log
    assert _servers_in(user_config_dir) == set()
    # the conversation goes on: the next message is answered once the server is fixed
    r = tce("mcp", "add", "clock", "--replace", "--untrusted-ok", "--", TIME_SERVER)
    assert r.exit_code == 0
    local_model.script(STEP, ANSWER)
    r = tce("chat", str(path), "-m", "And now?")
    assert r.exit_code == 0, r.output
    mcptools.stop_all()


def test_a_name_that_is_both_a_tool_module_and_a_server_is_refused(
    clock: str, local_model: OpenAIServer, tmp_path: Path, trusted
) -> None:
    trusted(tmp_path)
    (tmp_path / "toolbox").mkdir()
    (tmp_path / "toolbox" / "clock.py").write_text(
        'def tick() -> str:\n    """Tick."""\n    return "tock"\n'
    )
    path = tmp_path / "time.msg.md"
    path.write_text(HEADER)
    r = tce("chat", str(path), "-m", "What time is it?")
    assert r.exit_code == 2
    assert "'clock' is both a tool module and an MCP server: rename one" in r.output
    assert local_model.chat_requests == []


# -- trust: servers a file or its folder defines --------------------------------------------


def _marker_server(tmp_path: Path) -> tuple[dict, Path]:
    marker = tmp_path / "STARTED"
    return {"command": "/bin/sh", "args": ["-c", f"touch {marker}; exec {TIME_SERVER}"]}, marker


@pytest.mark.parametrize("where", ["folder", "file"])
def test_servers_a_cloned_folder_defines_start_nothing_and_the_run_is_refused(
    where: str, local_model: OpenAIServer, tmp_path: Path
) -> None:
    entry, marker = _marker_server(tmp_path)
    path = tmp_path / "time.msg.md"
    if where == "folder":
        (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"clock": entry}}))
        path.write_text(HEADER)
    else:
        path.write_text(
            HEADER.replace(
                "---\nagents:", "---\nmcp:\n  clock: " + json.dumps(entry) + "\nagents:", 1
            )
        )
    r = tce("chat", str(path), "-m", "What time is it in Tokyo?")
    assert r.exit_code == 6, r.output
    assert "refused: MCP server 'clock' (agent 'helper'): defined only by" in r.output
    assert f"to allow it: tce trust {tmp_path}" in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert local_model.chat_requests == []  # no model called
    assert not marker.exists()  # no process started


def test_servers_a_trusted_folder_defines_are_started(
    local_model: OpenAIServer, tmp_path: Path, trusted
) -> None:
    entry, marker = _marker_server(tmp_path)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"clock": entry}}))
    trusted(tmp_path)
    path = tmp_path / "time.msg.md"
    path.write_text(HEADER)
    local_model.script(STEP, ANSWER)
    r = tce("chat", str(path), "-m", "What time is it in Tokyo?")
    assert r.exit_code == 0, r.output
    assert marker.exists()
    assert "+09:00" in local_model.chat_requests[1].messages[-1]["content"]


def test_no_server_outlives_a_killed_tce_chat(
    clock: str, local_model: OpenAIServer, tmp_path: Path, user_config_dir: Path
) -> None:
    """A crash leaves no orphan: the server's stdin closes with us, and it ends."""
    from jupyter_percent_agent.testing.openai_server import Reply

    # the model answers too late: tce chat is killed first
    local_model.script(Reply(STEP, delay=30))
    path = tmp_path / "time.msg.md"
    path.write_text(HEADER)
    proc = subprocess.Popen(
        [str(BIN / "tce"), "chat", str(path), "-m", "Time in Tokyo?"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not _servers_in(user_config_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _servers_in(user_config_dir), "the server never started"
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while _servers_in(user_config_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _servers_in(user_config_dir) == set()


def test_ctrl_c_while_a_server_starts_leaves_no_orphan(
    tmp_path: Path, user_config_dir: Path
) -> None:
    """Ctrl-C while a server that never answers was starting (tce tools list -m, tce mcp
    list, an agent's first message): tce exited and the server ran on, orphaned; the stop at
    exit waited 8 s for a start that was never going to finish, past its own deadline."""
    import signal

    stuck = tmp_path / "stuck.py"
    stuck.write_text("import time\ntime.sleep(600)\n")  # never reads its stdin
    r = tce("mcp", "add", "stuck", "--untrusted-ok", "--", sys.executable, str(stuck))
    assert r.exit_code == 0, r.output
    proc = subprocess.Popen([str(BIN / "tce"), "tools", "list", "-m", "stuck"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _servers_in(user_config_dir):
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    deadline = time.monotonic() + 10
    while _servers_in(user_config_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _servers_in(user_config_dir)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == set()


def test_ctrl_c_in_tce_mcp_list_is_exit_130(tmp_path: Path, user_config_dir: Path) -> None:
    """Ctrl-C while tce mcp list waited on a server ended in click's "Aborted!" and exit 1,
    the code of a failed model call; every command's Ctrl-C is 130."""
    import signal

    stuck = tmp_path / "stuck.py"
    stuck.write_text("import time\ntime.sleep(600)\n")
    r = tce("mcp", "add", "stuck", "--untrusted-ok", "--", sys.executable, str(stuck))
    assert r.exit_code == 0
    proc = subprocess.Popen([str(BIN / "tce"), "mcp", "list"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _servers_in(user_config_dir):
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip() == "tce: interrupted"


def test_ctrl_c_while_an_agents_server_starts_stops_tce_chat_at_once(
    tmp_path: Path, user_config_dir: Path, local_model: OpenAIServer
) -> None:
    """The servers of an agent were started on the event loop's own thread: Ctrl-C (and the
    Agent kernel's interrupt) waited out the 30 s start of a server that never answers, then
    the message was saved with "did not start within 30 s", which the user never saw."""
    import signal

    stuck = tmp_path / "stuck.py"
    stuck.write_text("import time\ntime.sleep(600)\n")
    r = tce("mcp", "add", "stuck", "--untrusted-ok", "--", sys.executable, str(stuck))
    assert r.exit_code == 0
    path = tmp_path / "chat.msg.md"
    path.write_text(HEADER.replace("tools: [clock]", "tools: [stuck]"))
    proc = subprocess.Popen([str(BIN / "tce"), "chat", str(path), "-m", "Hello?"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _servers_in(user_config_dir):
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)  # not the rest of the server's 30 s
    except subprocess.TimeoutExpired:
        pytest.fail("tce chat waited for the server's start after Ctrl-C")
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    text = path.read_text()
    assert "Hello?" in text and "did not start" not in text
    assert not local_model.chat_requests


def test_a_result_too_large_for_the_prompt_is_cut_with_a_marker() -> None:
    from jupyter_percent_agent.outcome import RunStatus
    from jupyter_percent_agent.runtime.attp_loop import (
        PROMPT_RESULT_CHARS,
        result_message,
        result_text,
    )
    from jupyter_percent_agent.sandbox import SandboxResult

    big = [{"commit": f"{i:040x}", "author": "a"} for i in range(5000)]
    res = SandboxResult(status=RunStatus.OK, result=big)
    message = result_message(res)
    assert len(message) < PROMPT_RESULT_CHARS + 1000
    assert "[cut: " in message and "filter it in code]" in message
    assert f"{4999:040x}" in result_text(res)  # the file keeps it whole


def test_with_more_tools_than_the_limit_the_model_searches_for_the_others(
    clock: str, local_model: OpenAIServer, tmp_path: Path
) -> None:
    """Only ``tool_limit`` tools are described (those that fit the message); search_tools
    (words) finds the others, which the model's code can call."""
    local_model.script((DATA / "search_step.toml").read_text(), STEP, ANSWER)
    path = tmp_path / "time.msg.md"
    path.write_text(
        HEADER.replace("    tools: [clock]\n", "    tools: [clock]\n    tool_limit: 1\n")
    )
    r = tce("chat", str(path), "-m", "Convert 12:00 from Paris time to Tokyo time")
    assert r.exit_code == 0, r.output
    first = local_model.chat_requests[0].messages[0]["content"]
    assert "def convert_time(source_timezone: str, time: str, target_timezone: str):" in first
    assert "def get_current_time" not in first
    assert "def search_tools(words: str, limit: int = 5) -> list[str]:" in first
    assert "1 more tools can be" in first
    found = local_model.chat_requests[1].messages[-1]["content"]
    assert "def get_current_time(timezone: str):" in found
    called = local_model.chat_requests[2].messages[-1]["content"]
    assert "Asia/Tokyo" in called and "+09:00" in called


def test_a_tool_name_two_servers_share_is_kept_apart_by_the_servers_names(clock: str) -> None:
    assert tce("mcp", "add", "world", "--untrusted-ok", "--", TIME_SERVER).exit_code == 0
    r = tce("tools", "list", "--names", "-m", "clock", "-m", "world")
    assert r.exit_code == 0, r.output
    assert r.output.split() == [
        "clock_get_current_time",
        "clock_convert_time",
        "world_get_current_time",
        "world_convert_time",
    ]
    r = tce(
        "tools",
        "call",
        "world_get_current_time",
        "-m",
        "clock",
        "-m",
        "world",
        "--args",
        '{"timezone": "Asia/Tokyo"}',
    )
    assert r.exit_code == 0 and "+09:00" in r.output


def test_signatures_are_made_from_input_schemas() -> None:
    from jupyter_percent_agent.mcptools.schema import docstring_of, python_name, signature_of
    from jupyter_percent_agent.tools import Tool, render_tool

    schema = {
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "default": 10, "description": "How many."},
            "query": {"type": "string", "description": "What to find."},
            "mode": {"enum": ["fast", "slow"]},
            "tags": {"anyOf": [{"type": "array"}, {"type": "null"}]},
        },
        "required": ["query"],
    }
    sig, docs = signature_of(schema)
    assert (
        str(sig) == "(query: 'str', limit: 'int' = None, mode: 'str' = None, "
        "tags: 'list | None' = None)"
    )
    assert docs["limit"].description == "How many. Default: 10."
    assert "One of: 'fast', 'slow'." in docs["mode"].description
    odd, _ = signature_of({"properties": {"from": {}, "x-y": {}}})
    assert str(odd) == "(**arguments)"
    assert python_name("get-time.now") == "get_time_now"
    assert python_name("class") == "class_" and python_name("1st") == "_1st"
    doc = docstring_of("Find <b>things</b>", docs, "srv")
    doc_tool = Tool(name="t", func=lambda **k: None, doc=doc, signature=sig)
    shown = render_tool(doc_tool)
    assert "Find <b>things</b>" in shown  # model input, as text
    assert "(MCP server 'srv')" in shown


def test_the_agent_kernel_starts_a_server_once_and_a_restart_leaves_no_orphan(
    clock: str, local_model: OpenAIServer, tmp_path: Path, user_config_dir: Path
) -> None:
    """In the Agent kernel (real, over the Jupyter protocol): two messages use one server
    process; restarting the kernel stops it."""
    from jupyter_percent_agent.testing.kernels import copy_kernelspec, start, stop

    kernels = copy_kernelspec(tmp_path / "kernels")
    notebook = tmp_path / "time.msg.md"
    notebook.write_text(HEADER)
    kenv = {**os.environ, "JPY_SESSION_NAME": str(notebook)}
    km, kc = start(kernels, kenv, timeout=60, cwd=str(tmp_path))
    try:
        seen = []
        for _ in range(2):
            local_model.script(STEP, ANSWER)
            reply = kc.execute_interactive("What time is it in Tokyo?", timeout=120)
            assert reply["content"]["status"] == "ok", reply["content"]
            seen.append(_servers_in(user_config_dir))
        assert "+09:00" in local_model.chat_requests[-1].messages[-1]["content"]
        assert len(seen[0]) == 1 and seen[0] == seen[1]  # one process, started once
        km.restart_kernel(now=False)
        kc.wait_for_ready(timeout=60)
        deadline = time.monotonic() + 15
        while _servers_in(user_config_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _servers_in(user_config_dir) == set()
    finally:
        stop(km, kc)


def test_a_server_gets_its_own_env_and_not_the_users_keys(
    keys: dict[str, str], user_config_dir: Path, tmp_path: Path
) -> None:
    """A stdio server starts in the user's config folder with the SDK's minimal environment
    plus its own ``env``: the keys in the user's environment stay with us."""
    seen = tmp_path / "env.txt"
    r = tce(
        "mcp",
        "add",
        "clock",
        "--env",
        "CLOCK_SETTING=on",
        "--",
        "/bin/sh",
        "-c",
        f"env > {seen}; pwd >> {seen}; exec {TIME_SERVER}",
    )
    assert r.exit_code == 0, r.output
    r = tce("tools", "list", "--names", "-m", "clock")
    assert r.exit_code == 0, r.output
    mcptools.stop_all()
    text = seen.read_text()
    assert "CLOCK_SETTING=on" in text
    assert str(user_config_dir.resolve()) in text.splitlines()[-1]
    for secret in keys.values():
        assert secret not in text


def test_a_call_that_times_out_or_kills_the_server_is_one_error_naming_it(
    user_config_dir: Path,
) -> None:
    spec = mcptools.ServerSpec(
        "faulty", command=sys.executable, args=(str(DATA / "faulty_server.py"),), timeout=1
    )
    try:
        tools = {t.name: t for t in mcptools.server_tools([spec], None)}
        assert tools["slow"].run({"seconds": 0}) == {"data": "late", "instruction": None}
        started = time.monotonic()
        with pytest.raises(mcptools.McpServerError) as late:
            tools["slow"].run({"seconds": 5})
        assert time.monotonic() - started < 4
        assert "MCP server 'faulty' did not answer a call to slow within 1 s" in str(late.value)
        with pytest.raises(mcptools.McpServerError) as died:
            tools["die"].run({})
        assert "MCP server 'faulty'" in str(died.value) and "die" in str(died.value)
        with pytest.raises(mcptools.McpServerError, match="'faulty' is not running"):
            tools["slow"].run({"seconds": 0})
        again = {t.name: t for t in mcptools.server_tools([spec], None)}  # started anew
        assert again["slow"].run({"seconds": 0})["data"] == "late"
    finally:
        mcptools.stop_all()
    assert _servers_in(user_config_dir) == set()


def test_ctrl_c_during_a_servers_call_is_exit_130_without_a_traceback(
    local_model: OpenAIServer, tmp_path: Path, user_config_dir: Path
) -> None:
    """Ctrl-C while the model's code waits on an MCP tool: the call was left running in the
    host's loop, failed when the server was stopped at exit, and asyncio printed its
    traceback ("Task exception was never retrieved") under the interrupted line."""
    import signal

    r = tce("mcp", "add", "faulty", "--untrusted-ok", "--",
            sys.executable, str(DATA / "faulty_server.py"))
    assert r.exit_code == 0, r.output
    step = STEP.replace('get_current_time("Asia/Tokyo")', "slow(60)").replace(
        'now["timezone"] + " " + now["datetime"]', "now")
    local_model.script(step)
    path = tmp_path / "slow.msg.md"
    path.write_text(HEADER.replace("tools: [clock]", "tools: [faulty]"))
    proc = subprocess.Popen(
        [str(BIN / "tce"), "chat", str(path), "-m", "Wait a minute"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (local_model.chat_requests and _servers_in(user_config_dir)):
            assert time.monotonic() < deadline, "the tool was never called"
            time.sleep(0.1)
        time.sleep(1.5)  # the model's code is in slow(60)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "never retrieved" not in err, err
    assert "[interrupted" in err
    assert "Wait a minute" in path.read_text()


def test_the_models_code_counts_commits_by_author_with_a_real_git_server(
    local_model: OpenAIServer, tmp_path: Path, user_config_dir: Path, trusted
) -> None:
    """In a folder the user trusted (git obeys a repository's own .git/config, so the user's
    git server is for trusted folders only: test_red_team_mcp_untrusted)."""
    trusted(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str, author: str = "Ada") -> None:
        who = {
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": f"{author}@example.org",
            "GIT_COMMITTER_NAME": author,
            "GIT_COMMITTER_EMAIL": f"{author}@example.org",
        }
        subprocess.run(
            ["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **who}
        )

    git("init", "-q", "-b", "main")
    for i, author in enumerate(["Ada", "Linus", "Ada"]):
        (repo / "f.txt").write_text(str(i))
        git("add", "f.txt")
        git("commit", "-q", "-m", f"change {i}", author=author)
    assert tce("mcp", "add", "git", "--", str(BIN / "mcp-server-git")).exit_code == 0
    step = (DATA / "authors_step.toml").read_text().replace("REPO", json.dumps(str(repo)))
    local_model.script(step, ANSWER)
    path = tmp_path / "log.msg.md"
    path.write_text(HEADER.replace("tools: [clock]", "tools: [git]"))
    try:
        r = tce("chat", str(path), "-m", "Who committed how often?")
    finally:
        mcptools.stop_all()
    assert r.exit_code == 0, r.output
    first = local_model.chat_requests[0].messages[0]["content"]
    assert "def git_log(repo_path: str, max_count: int = None" in first
    assert '"Ada": 2' in local_model.chat_requests[1].messages[-1]["content"]
    assert '"Linus": 1' in local_model.chat_requests[1].messages[-1]["content"]


# -- images in results --------------------------------------------------------------------

SNAPSHOT_STEP = (DATA / "snapshot_step.toml").read_text()


def _camera_header(vision: bool) -> str:
    return HEADER.replace("tools: [clock]", "tools: [camera]").replace(
        "    system_prompt:", f"    vision: {str(vision).lower()}\n    system_prompt:"
    )


def _chat_with_camera(path: Path, message: str, *, vision: bool) -> dict:
    """``tce chat`` sends ``message`` in a new file at ``path`` whose agent has the camera's
    tools (and takes images when ``vision``); the file's one cell."""
    path.write_text(_camera_header(vision=vision))
    r = tce("chat", str(path), "-m", message)
    assert r.exit_code == 0, r.output
    (cell,) = hist.conversation_cells(fmt.read(path))
    return cell


@pytest.fixture
def camera(user_config_dir: Path) -> str:
    """The user added a server made with the SDK whose tool returns a PNG."""
    r = tce("mcp", "add", "camera", "--untrusted-ok", "--",
            sys.executable, str(DATA / "image_server.py"))
    assert r.exit_code == 0, r.output
    yield "camera"
    mcptools.stop_all()


def _image_parts(content: object) -> list[str]:
    if not isinstance(content, list):
        return []
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


def test_an_image_a_server_returns_is_an_image_output_and_an_image_part_for_a_vision_model(
    camera: str, local_model: OpenAIServer, tmp_path: Path
) -> None:
    from PIL import Image

    local_model.script(SNAPSHOT_STEP, ANSWER)
    path = tmp_path / "picture.msg.md"
    cell = _chat_with_camera(path, "Take a picture.", vision=True)
    outs = cell["outputs"]
    kinds = [fmt.output_kind(o) for o in outs]
    assert kinds == ["reply", "tool_call", "tool_result", "tool_result", "reply"]
    call_id = fmt.output_id(outs[1])
    image = outs[3]
    assert fmt.output_id(image) == f"{call_id}.2"  # an output of the call's record
    assert fmt.output_attrs(image)["name"] == "camera.snapshot"
    b64 = image["data"]["image/png"]
    with Image.open(io.BytesIO(base64.b64decode(b64))) as picture:
        assert picture.size == (8, 6)  # the image as the server sent it
    assert image["data"]["text/plain"] == "[image 1: image/png, from camera.snapshot]"
    # the model's code got a small value standing for it, not the bytes
    value = json.loads(fmt.output_text(outs[2]).split("```json\n", 1)[1].split("\n```")[0])
    assert value == {"type": "image", "mime_type": "image/png", "bytes": value["bytes"], "image": 1}
    assert b64 not in fmt.output_text(outs[2])
    # the next round: the result and the image, as an image part
    sent = local_model.chat_requests[1].messages[-1]["content"]
    assert isinstance(sent, list) and '"image": 1' in sent[0]["text"]
    assert "[image 1: image/png, from camera.snapshot]" in sent[0]["text"]
    assert _image_parts(sent) == [f"data:image/png;base64,{b64}"]
    # a later message: the history read from the file sends the image again
    local_model.script(ANSWER)
    assert tce("chat", str(path), "-m", "What colour was it?").exit_code == 0
    later = local_model.chat_requests[2].messages
    with_image = [m for m in later if _image_parts(m["content"])]
    assert len(with_image) == 1 and _image_parts(with_image[0]["content"]) == [
        f"data:image/png;base64,{b64}"
    ]
    assert "[image 1: image/png, from camera.snapshot]" in with_image[0]["content"][0]["text"]


def test_a_model_without_vision_gets_a_line_in_place_of_a_servers_image(
    camera: str, local_model: OpenAIServer, tmp_path: Path
) -> None:
    local_model.script(SNAPSHOT_STEP, ANSWER)
    cell = _chat_with_camera(tmp_path / "picture.msg.md", "Take a picture.", vision=False)
    assert "image/png" in cell["outputs"][3]["data"]  # the file keeps the image
    sent = local_model.chat_requests[1].messages[-1]["content"]
    assert isinstance(sent, str)
    assert "[image 1: image/png, from camera.snapshot]" in sent
    assert "(The images are not shown: this model takes no images.)" in sent
    assert cell["outputs"][3]["data"]["image/png"] not in sent


def test_images_past_the_users_output_cap_are_a_line_neither_saved_nor_sent(
    camera: str, local_model: OpenAIServer, tmp_path: Path, user_config_dir: Path
) -> None:
    (user_config_dir / "config.toml").write_text("code_output_bytes = 2000\n")
    local_model.script((DATA / "two_pictures_step.toml").read_text(), ANSWER)
    cell = _chat_with_camera(tmp_path / "pictures.msg.md", "Take two pictures.", vision=True)
    outs = cell["outputs"]
    small, large = outs[3], outs[4]
    assert "image/png" in small["data"]
    assert "image/png" not in large["data"]
    said = fmt.output_text(large)
    assert said.startswith("[image 2: image/png, from camera.noise: not kept, ")
    assert "past the cap of 2000 bytes (code_output_bytes in your config)]" in said
    sent = local_model.chat_requests[1].messages[-1]["content"]
    assert _image_parts(sent) == [f"data:image/png;base64,{small['data']['image/png']}"]
    assert '"image": 2' in sent[0]["text"]  # the code's value still names it


def test_outside_a_run_an_image_is_only_described(camera: str) -> None:
    """A call no ATTP run collects (``tce tools call``) gets the image's description; the
    bytes never reach the value."""
    spec = mcptools.load_servers()["camera"]
    tools = {t.name: t for t in mcptools.server_tools([spec], None)}
    value = tools["snapshot"].run({"width": 8, "height": 6})["data"]
    assert value == {"type": "image", "mime_type": "image/png", "bytes": value["bytes"]}
    assert 50 < value["bytes"] < 500


def test_a_malformed_user_mcp_json_during_chat_records_an_error_under_the_message(
    local_model: OpenAIServer, tmp_path: Path, user_config_dir: Path
) -> None:
    """The message was saved and tce exited 2, but nothing under it said why it has no
    reply: every other failed turn records an [error]."""
    (user_config_dir / "mcp.json").write_text('{"mcpServers": {"a": {"args": []}}}')
    path = tmp_path / "time.msg.md"
    path.write_text(HEADER)
    r = tce("chat", str(path), "-m", "What time is it in Tokyo?")
    assert r.exit_code == 2, r.output
    assert "needs a command or a url" in r.output
    cell = hist.conversation_cells(fmt.read(path))[-1]
    assert fmt.message_text(cell).strip() == "What time is it in Tokyo?"
    kinds = [fmt.output_kind(o) for o in cell.get("outputs") or []]
    assert kinds == ["error"]
    assert "needs a command or a url" in fmt.output_text(cell["outputs"][0])
    assert local_model.chat_requests == []
