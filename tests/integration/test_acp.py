"""External agents over ACP through the real ``tce``: the user's agents (tce acp add, list,
remove), a turn with a scripted agent written on the official SDK (a real process speaking
ACP over its pipes: jupyter_percent_agent/testing/scripted_acp_agent.py), what is recorded,
permissions, the client's side confined to the folder, continued sessions, interrupts and
agents that fail. Nothing mocked at the protocol."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.environment import run_tce, tce, tce_on_terminal
from tests.helpers.acp import ACP_DATA, AGENT, HEADER, Scripted


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# -- the user's agents -------------------------------------------------------------------

def test_acp_add_keeps_the_agent_private_in_the_config_folder_and_list_starts_each(
        project: Scripted, user_config_dir: Path) -> None:
    project.add("echo.json", "--permissions", "allow")
    r = tce("acp", "add", "broken", "--", *AGENT, str(ACP_DATA / "start_exit.json"))
    assert r.exit_code == 0
    r = tce("acp", "add", "missing", "--", str(project.folder / "no-such-agent"))
    assert r.exit_code == 0
    stored = user_config_dir / "acp.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    entry = json.loads(stored.read_text())["acpAgents"]["fake"]
    assert entry["permissions"] == "allow" and entry["command"] == sys.executable

    r = tce("acp", "list")
    assert r.exit_code == 0, r.output
    rows = {line.split("\t")[0]: line for line in r.stdout.splitlines()}
    assert "scripted 2.5\tload_session" in rows["fake"]
    assert '"loadSession":true' in rows["fake"]
    assert "could not start" in rows["broken"] and "exited with code 3" in rows["broken"]
    assert "told to fail at start" in rows["broken"]
    assert "could not start" in rows["missing"] and "No such file" in rows["missing"]
    started = project.calls("initialize")
    assert len(started) == 1 and not _alive(started[0]["pid"])  # it did not outlive the list
    # started in an empty folder of its own, not where tce ran (a clone's settings)
    assert os.path.basename(started[0]["cwd"]).startswith("acp-probe-")
    assert not os.path.exists(started[0]["cwd"])

    assert tce("acp", "add", "fake", "--", "other").exit_code == 2  # a name taken
    assert tce("acp", "add", "fake", "--replace", "--", "other").exit_code == 0
    assert tce("acp", "remove", "fake").exit_code == 0
    assert "fake" not in json.loads(stored.read_text())["acpAgents"]
    r = tce("acp", "remove", "fake")
    assert r.exit_code == 2 and "no ACP agent named 'fake'" in r.stderr


@pytest.mark.parametrize("agents", [
    "agents:\n  coder:\n    acp: {command: touch, args: [PWNED]}\n",
    "agents:\n  coder:\n    acp: fake\n    command: touch PWNED\n",
    "agents:\n  coder:\n    acp: fake\n    permissions: allow\n",
])
def test_a_file_can_never_name_the_agents_command_or_settings(project: Scripted,
                                                             agents: str) -> None:
    project.add("permission.json")
    project.path.write_text(f"---\n{agents}---\n\n")
    before = project.path.read_bytes()
    r = tce("chat", str(project.path), "-m", "go")
    assert r.exit_code == 5, r.output
    assert "a file cannot give its command or settings" in r.stderr
    assert project.path.read_bytes() == before
    assert project.calls() == [] and not (project.folder / "PWNED").exists()


def test_a_definition_cell_names_an_acp_agent_like_the_front_matter(project: Scripted) -> None:
    project.add("echo.json")
    project.path.write_text("# %% The coder[^a]\n[^a]: [markdown] definition=\"agent\" "
                            "name=\"coder\"\n\n```yaml\nacp: fake\n```\n")
    r = tce("chat", str(project.path), "-m", "hi", "coder")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("answer to: hi")
    assert project.answer()["acp"] == "fake"


def test_untrusted_folder_refuses_the_turn_and_starts_nothing(tmp_path: Path) -> None:
    scripted = Scripted(tmp_path)
    scripted.add("echo.json")
    before = scripted.path.read_bytes()
    r = tce("chat", str(scripted.path), "-m", "edit my notes")
    assert r.exit_code == 6, r.output
    line = r.stderr.strip()
    assert "\n" not in line
    assert line.startswith("tce: refused: agent 'coder' is the external agent 'fake'")
    assert f"to allow it: tce trust {scripted.folder.resolve()}" in line
    assert scripted.path.read_bytes() == before  # the message is not even written
    assert scripted.calls() == []  # no process was started


def test_an_agent_the_user_never_added_is_one_line_and_nothing_written(
        project: Scripted) -> None:
    before = project.path.read_bytes()
    r = tce("chat", str(project.path), "-m", "hi")
    assert r.exit_code == 2
    assert "no ACP agent named 'fake'" in r.stderr and "tce acp add fake" in r.stderr
    assert project.path.read_bytes() == before


# -- a turn ------------------------------------------------------------------------------

def test_a_turn_streams_and_records_thoughts_tools_diffs_plan_and_usage(
        project: Scripted) -> None:
    project.add("full.json", "--permissions", "allow")
    r = tce("chat", str(project.path), "-m", "tidy my notes")
    assert r.exit_code == 0, r.output
    said = r.stdout
    order = ["Hello world", "permission: allow", "wrote made/new.txt", "read: hello",
             f"terminal exit 0: {project.folder.resolve()}", "All done."]
    assert [said.index(x) for x in order] == sorted(said.index(x) for x in order)
    assert "pondering the notes" in r.stderr and "- [ ] edit them" in r.stderr

    outs = project.outputs()
    kinds = [(fmt.output_kind(o), fmt.output_attrs(o)) for o in outs]
    thought = next(a for k, a in kinds if a.get("thought"))
    assert thought["reasoning"] == 1
    call = next(a for k, a in kinds if k == "tool_call" and a.get("kind") == "edit")
    assert call["title"] == "Edit notes" and call["locations"] == ["notes.txt"]
    result = next(o for o in outs if fmt.output_kind(o) == "tool_result"
                  and fmt.output_attrs(o).get("diff") == ["notes.txt"])
    assert "-hello\n+hello there" in fmt.output_text(result)
    assert fmt.output_attrs(result)["permission"] == "allow_once (setting)"
    assert fmt.output_attrs(result)["status"] == "success"
    names = [a.get("name") for k, a in kinds if k == "tool_call"]
    assert names == ["Edit notes", "write", "read", "terminal"]
    plan = next(o for o in outs if fmt.output_attrs(o).get("plan"))
    assert fmt.output_text(plan) == "- [x] read the notes\n- [ ] edit them (in progress)"

    answer = project.answer()
    assert fmt.output_text(outs[-1]).endswith("0: " + str(project.folder.resolve()) + "All done.")
    assert answer["agent"] == "coder" and answer["acp"] == "fake"
    assert answer["acp_agent"] == "scripted 2.5"
    assert answer["session_id"] == project.calls("new_session")[0]["session_id"]
    assert (answer["tokens_in"], answer["tokens_out"], answer["cost"]) == (321, 45, 0.0125)
    assert (answer["context_used"], answer["context_size"]) == (1200, 200000)
    assert (project.folder / "made" / "new.txt").read_text() == "made by the agent\n"
    caps = project.calls("initialize")[0]["client_capabilities"]
    assert caps["fs"] == {"readTextFile": True, "writeTextFile": True} and caps["terminal"]
    assert not _alive(project.calls("initialize")[0]["pid"])  # it ended with the turn


def test_chunks_reach_the_terminal_as_they_arrive(project: Scripted) -> None:
    project.add("stream.json")
    seen = {}

    def answer(got: bytes, terminal: int, proc: subprocess.Popen) -> bool:
        if b"first chunk" in got:
            seen["second before go"] = b"second chunk" in got
            (project.folder / "go").write_text("")
            return True
        return False

    code, out, answered = tce_on_terminal("chat", str(project.path), "-m", "stream",
                                          env=dict(os.environ), answer=answer)
    assert code == 0 and answered, out
    assert seen == {"second before go": False}
    assert "first chunk second chunk" in out


def test_permission_is_rejected_without_a_person_and_allowed_by_the_users_setting(
        project: Scripted) -> None:
    project.add("permission.json")
    r = tce("chat", str(project.path), "-m", "clean up")  # stdin is no terminal: nobody
    assert r.exit_code == 0, r.output
    assert "permission: reject" in r.stdout
    result = next(o for o in project.outputs() if fmt.output_kind(o) == "tool_result")
    assert fmt.output_attrs(result)["permission"] == "reject_once (no person)"

    project.add("permission.json", "--permissions", "allow", "--replace")
    r = tce("chat", str(project.path), "-m", "clean up again")
    assert "permission: allow" in r.stdout
    result = next(o for o in project.outputs() if fmt.output_kind(o) == "tool_result")
    assert fmt.output_attrs(result)["permission"] == "allow_once (setting)"


def test_the_person_at_the_terminal_answers_a_permission(project: Scripted) -> None:
    project.add("permission.json")

    def answer(got: bytes, terminal: int, proc: subprocess.Popen) -> bool:
        if b"(Enter rejects)" in got:
            assert b"Remove build/ (delete)" in got and b"rm -rf build" in got
            os.write(terminal, b"2\n")  # Always allow
            return True
        return False

    code, out, answered = tce_on_terminal("chat", str(project.path), "-m", "clean",
                                          env=dict(os.environ), answer=answer)
    assert code == 0 and answered, out
    assert "permission: always" in out
    result = next(o for o in project.outputs() if fmt.output_kind(o) == "tool_result")
    assert fmt.output_attrs(result)["permission"] == "allow_always (person)"


def test_the_client_side_stays_inside_the_folder(project: Scripted, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the user's secret\n")
    (project.folder / "link_out.txt").symlink_to(outside / "secret.txt")
    (project.folder / "link_dir").symlink_to(outside)
    project.add("confined.json", "--permissions", "allow")
    before = project.path.read_text()
    r = tce("chat", str(project.path), "-m", "try")
    assert r.exit_code == 0, r.output
    refusals = [line for line in r.stdout.splitlines() if line.startswith("refused:")]
    assert len(refusals) == 7, r.stdout
    assert "outside the conversation's folder" in refusals[0]
    assert ".git, a version-control folder" in refusals[1]
    assert "the open message file itself" in refusals[2]
    assert "the open message file itself" in refusals[3]
    assert "leads out of the file's folder" in refusals[4]
    assert "leads out of the file's folder" in refusals[5]
    assert "outside the conversation's folder" in refusals[6]  # a terminal in /
    assert "the user's secret" not in r.stdout + r.stderr + project.path.read_text()
    assert not (tmp_path / "escape.txt").exists() and not (outside / "planted.txt").exists()
    assert (project.folder / ".git" / "config").read_text() == "[core]\n"
    assert project.path.read_text().startswith(before)  # replies were added; nothing replaced
    errors = [o for o in project.outputs() if fmt.output_kind(o) == "tool_result"]
    assert [fmt.output_attrs(o)["status"] for o in errors] == ["error"] * 7


def test_a_recorded_session_is_continued_unless_the_file_changed_before_it(
        project: Scripted) -> None:
    project.add("echo.json")
    assert tce("chat", str(project.path), "-m", "first").exit_code == 0
    first = project.answer()["session_id"]
    r = tce("chat", str(project.path), "-m", "second")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("answer to: second")  # only the new message, in its session
    assert [c["session_id"] for c in project.calls("load_session")] == [first]
    assert project.answer()["session_id"] == first and "new_session" not in project.answer()
    assert "answer to: first" not in project.path.read_text().split("answer to: second")[1]

    project.path.write_text(project.path.read_text().replace("\nfirst\n", "\nFIRST, edited\n"))
    r = tce("chat", str(project.path), "-m", "third")
    assert r.exit_code == 0, r.output
    answer = project.answer()
    assert answer["session_id"] != first
    assert answer["new_session"] == (f"the cells before this message changed since session "
                                     f"{first}")
    prompt = project.calls("prompt")[-1]["text"]
    assert "FIRST, edited" in prompt and "answer to: second" in prompt
    assert prompt.endswith("[the new message]\nthird")


def test_an_agent_that_cannot_load_sessions_gets_the_files_history(project: Scripted) -> None:
    project.add("no_load.json")
    assert tce("chat", str(project.path), "-m", "first").exit_code == 0
    assert tce("chat", str(project.path), "-m", "second").exit_code == 0
    assert project.calls("load_session") == []
    prompt = project.calls("prompt")[-1]["text"]
    assert "[user]\nfirst" in prompt and prompt.endswith("[the new message]\nsecond")


def test_ctrl_c_cancels_the_session_and_keeps_what_arrived(project: Scripted) -> None:
    project.add("interrupt.json")

    def answer(got: bytes, terminal: int, proc: subprocess.Popen) -> bool:
        if b"and more" in got:
            proc.send_signal(signal.SIGINT)
            return True
        return False

    code, out, answered = tce_on_terminal("chat", str(project.path), "-m", "run it",
                                          env=dict(os.environ), answer=answer)
    assert answered and code == 130, f"{out}\n{project.calls()}"
    said = f"{out}\n{project.calls()}\n{project.path.read_text()}"  # shown if it fails
    assert [c["method"] for c in project.calls()][-1] == "cancel", said
    outs = project.outputs()
    tool = next(o for o in outs if fmt.output_kind(o) == "tool_result")
    assert fmt.output_attrs(tool)["status"] == "interrupted", said
    assert fmt.output_attrs(tool)["tool_status"] == "in_progress", said
    assert [fmt.output_text(o) for o in outs if fmt.output_kind(o) == "reply"] == [
        "partial answer", "and more"], said
    assert fmt.output_attrs(outs[-1])["interrupted"] is True, said  # it was streaming
    sid = project.calls("new_session")[0]["session_id"]
    assert fmt.output_attrs(outs[-1])["session_id"] == sid, said
    assert "never said" not in project.path.read_text(), said
    assert not _alive(project.calls("initialize")[0]["pid"]), said


@pytest.mark.parametrize(("script", "says"), [
    ("start_exit.json", "exited with code 3 while starting: scripted agent: told to fail at "
                        "start"),
    ("start_garbage.json", "wrote something that is not ACP (JSON-RPC) while starting: "
                           "'Welcome! This is not JSON-RPC.'"),
    ("dies.json", "exited with code 7 while answering"),
])
def test_an_agent_that_fails_says_so_in_one_line(project: Scripted, script: str,
                                                 says: str) -> None:
    project.add(script)
    p = run_tce("chat", str(project.path), "-m", "hi", env=dict(os.environ), timeout=120)
    assert p.returncode == 1, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.startswith("tce:")]
    assert len(lines) == 1 and says in lines[0], p.stderr
    assert "Traceback" not in p.stderr
    error = project.outputs()[-1]
    assert error["output_type"] == "error" and says in error["evalue"]
    if script == "dies.json":  # what arrived is kept, marked as cut off
        kept = project.outputs()[-2]
        assert fmt.output_text(kept) == "half an answer"
        assert fmt.output_attrs(kept)["incomplete"] is True


def test_tce_and_the_runtime_start_without_the_sdk(tmp_path: Path) -> None:
    code = ("import sys\nsys.argv = ['tce', 'acp', 'list']\n"
            "from jupyter_percent_agent.cli import main\n"
            "import jupyter_percent_agent.runtime.turn, jupyter_percent_agent.acp\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in ('acp', 'pydantic') if m in sys.modules))\n")
    env = {**os.environ, "PERCENT_AGENT_CONFIG_DIR": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert "HEAVY []" in p.stdout and "no ACP agents" in p.stdout


def test_kept_sessions_run_one_agent_for_the_open_conversation(project: Scripted) -> None:
    """The Agent kernel's way (``RunOptions.acp_sessions``): one process across turns, the
    session it has open continued without loading, ended when the conversation closes."""
    import asyncio

    from jupyter_percent_agent import acp
    from jupyter_percent_agent.runtime.conversation import FileConversation, send
    from jupyter_percent_agent.runtime.turn import RunOptions

    project.add("echo.json")
    kept = acp.AcpSessions()
    options = RunOptions(base_dir=project.folder, path=project.path, acp_sessions=kept)

    async def two_turns() -> list[str]:
        replies = []
        for text in ("first", "second"):
            run = await send(FileConversation(project.path, text), options)
            replies.append(run.reply)
        await kept.close()
        return replies

    assert asyncio.run(two_turns()) == ["answer to: first", "answer to: second"]
    started = project.calls("initialize")
    assert len(started) == 1 and not _alive(started[0]["pid"])
    assert project.calls("load_session") == [] and len(project.calls("new_session")) == 1
    assert [c["text"] for c in project.calls("prompt")] == ["first", "second"]


def test_terminals_run_in_the_folder_capped_timed_and_ended_with_the_turn(
        project: Scripted, user_config_dir: Path) -> None:
    config = user_config_dir / "config.toml"  # the project's trust is kept there too
    config.write_text("code_output_bytes = 2000\ntool_timeout = 2\n" + config.read_text())
    project.add("terminals.json")
    r = tce("chat", str(project.path), "-m", "run things")
    assert r.exit_code == 0, r.output
    results = [o for o in project.outputs() if fmt.output_kind(o) == "tool_result"]
    capped, timed, left = (fmt.output_text(o) for o in results)
    assert capped.startswith("exit 0; output cut to its last 2000 bytes\n")
    assert capped.endswith("xEND\n") and len(capped) < 2100
    assert timed.startswith("stopped at the time limit")
    assert fmt.output_attrs(results[1])["status"] == "error"
    assert left.startswith("signal SIGKILL")  # still running as the turn ended: ended with it
    assert not _alive(int((project.folder / "left.pid").read_text()))


def test_ctrl_c_at_a_permission_question_withdraws_it(project: Scripted) -> None:
    project.add("permission.json")

    def answer(got: bytes, terminal: int, proc: subprocess.Popen) -> bool:
        if b"(Enter rejects)" in got:
            proc.send_signal(signal.SIGINT)
            return True
        return False

    code, out, answered = tce_on_terminal("chat", str(project.path), "-m", "clean",
                                          env=dict(os.environ), answer=answer)
    assert answered and code == 130, out
    assert [c["method"] for c in project.calls()][-1] == "cancel"
    outs = project.outputs()
    # the agent heard "cancelled" for its question (not a kill): it said so, and it was kept
    assert fmt.output_text(outs[-1]) == "permission: cancelled"
    assert fmt.output_attrs(outs[-1])["interrupted"] is True
    result = next(o for o in outs if fmt.output_kind(o) == "tool_result")
    assert fmt.output_attrs(result)["permission"] == "cancelled"


def test_tce_exec_runs_an_external_agents_message_with_nobody_to_ask(
        project: Scripted) -> None:
    project.add("permission.json")
    project.path.write_text(HEADER.format(name="fake")
                            + "# %% Clean up[^m1]\n[^m1]: [markdown]\n\nclean up\n")
    p = run_tce("exec", str(project.path), env=dict(os.environ), input="")
    assert p.returncode == 0, p.stderr
    assert "permission: reject" in p.stdout
    result = next(o for o in project.outputs() if fmt.output_kind(o) == "tool_result")
    assert fmt.output_attrs(result)["permission"] == "reject_once (no person)"
    assert project.answer()["acp_agent"] == "scripted 2.5"
    assert not _alive(project.calls("initialize")[0]["pid"])


def test_a_new_session_gets_the_history_the_files_rules_select(project: Scripted) -> None:
    project.add("echo.json")
    project.path.write_text(
        HEADER.format(name="fake")
        + "# %% Private[^a]\n[^a]: [markdown] history=\"exclude\"\n\ndo not send this\n\n"
        + "# %% Context[^b]\n[^b]: [markdown]\n\nsend this\n\n"
        + "# %% Aside[^c]\n[^c]: [markdown]\n\nnot this either\n")
    r = tce("chat", str(project.path), "-m", "now", "-e", "3")
    assert r.exit_code == 0, r.output
    prompt = project.calls("prompt")[0]["text"]
    assert "do not send this" not in prompt and "not this either" not in prompt
    assert "[user]\nsend this" in prompt and prompt.endswith("[the new message]\nnow")


def test_tce_list_shows_where_an_external_agents_turns_go(project: Scripted) -> None:
    project.add("echo.json", "--permissions", "reject")
    r = tce("list", f"{project.path}/agent", "--json")
    assert r.exit_code == 0, r.output
    coder = next(json.loads(x) for x in r.stdout.splitlines() if '"coder"' in x)
    assert coder["routes"] == [{"model": "acp:fake", "provider": "acp",
                                "endpoint": " ".join([*AGENT, str(ACP_DATA / "echo.json")]),
                                "key": "permissions=reject"}]
    assert project.calls() == []  # listing starts nothing


def test_a_session_streams_events_as_an_async_iterator(project: Scripted) -> None:
    import asyncio

    from jupyter_percent_agent import acp

    project.add("echo.json")
    told: list = []

    async def turn() -> list:
        async with acp.AcpSession(acp.find_agent("fake"), project.folder,
                                  on_event=told.append) as session:
            await session.open()
            return [item async for item in session.stream("hi")]

    items = asyncio.run(turn())
    assert items[:-1] == [acp.MessageChunk("answer to: "), acp.MessageChunk("hi")]
    assert items[-1] == acp.PromptResult("end_turn", None)
    assert told == []  # the iterator had them instead


def test_var_mentions_send_the_code_kernels_value_to_an_external_agent(
        project: Scripted) -> None:
    project.add("echo.json")
    project.path.write_text(
        HEADER.format(name="fake")
        + "# %% Compute[^c1]\n[^c1]: [code]\n\n```python\nx = 41 + 1\n```\n\n"
        + "# %% Ask[^m1]\n[^m1]: [markdown]\n\nthe answer is @var:x\n")
    p = run_tce("exec", str(project.path), env=dict(os.environ), input="")
    assert p.returncode == 0, p.stderr
    prompt = project.calls("prompt")[0]["text"]
    assert "@var:x" in prompt and "42" in prompt
    assert "the answer is @var:x\n" in project.path.read_text()  # the file keeps the text


def test_an_external_agents_turn_never_imports_the_model_client(project: Scripted) -> None:
    """tce chat warms litellm up for a model's turn; an ACP turn calls no model, and the import
    would only compete with the agent for the processor."""
    project.add("echo.json")
    probe = ("import sys\nsys.argv = ['tce', 'chat', sys.argv[1], '-m', 'hi']\n"
             "from jupyter_percent_agent.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n"
             "    print('LITELLM' if 'litellm' in sys.modules else 'NO-LITELLM', file=sys.stderr)\n"
             "    raise\n")
    p = subprocess.run([sys.executable, "-c", probe, str(project.path)], env=dict(os.environ),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("answer to: hi") and "NO-LITELLM" in p.stderr
