"""External agents over ACP without a process: the user's agents as acp.json keeps them, the
rule that a file names an agent and never a command, what continuing a session checks, the
folder rules the client's side follows, and how events read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_percent_agent import acp, trust
from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.acp.confine import Folder
from jupyter_percent_agent.masking import mask
from jupyter_percent_agent.runtime.acp_turn import recorded_session, session_hash
from jupyter_percent_agent.runtime.agents import AgentError, agent_from_mapping


@pytest.mark.parametrize(("entry", "says"), [
    ({}, "needs a command"),
    ({"command": "x", "args": "not a list"}, "args must be a list of strings"),
    ({"command": "x", "env": {"K": 1}}, "env must map names to strings"),
    ({"command": "x", "permissions": "always"}, "permissions must be one of ask, allow, reject"),
])
def test_a_wrong_entry_says_which_agent_and_what(entry: dict, says: str) -> None:
    with pytest.raises(acp.AcpConfigError, match=says):
        acp.spec_from_json("coder", entry)


def test_names_follow_the_mcp_servers_rule() -> None:
    with pytest.raises(acp.AcpConfigError, match="cannot name an ACP agent"):
        acp.check_name("../coder")
    assert acp.check_name("claude-code_2") == "claude-code_2"


def test_agents_are_kept_private_and_their_secrets_masked(user_config_dir: Path) -> None:
    spec = acp.AcpAgentSpec("coder", "codex-acp", ("--x",), {"CODEX_API_TOKEN": "tok-98765xyz"},
                            "allow")
    path = acp.add_agent(spec)
    assert path == user_config_dir / "acp.json"
    assert path.stat().st_mode & 0o777 == 0o600
    assert acp.load_agents() == {"coder": spec}
    assert "tok-98765xyz" not in mask("the agent said tok-98765xyz")
    assert "CODEX_API_TOKEN=***" in spec.described
    with pytest.raises(acp.AcpConfigError, match="exists"):
        acp.add_agent(spec)
    with pytest.raises(acp.AcpConfigError, match="tce acp add other"):
        acp.find_agent("other")
    assert acp.remove_agent("coder") and acp.load_agents() == {}


@pytest.mark.parametrize("props", [
    {"acp": {"command": "touch", "args": ["PWNED"]}},
    {"acp": "coder", "command": "touch PWNED"},
    {"acp": "coder", "args": ["-x"]},
    {"acp": "coder", "env": {"PATH": "/tmp"}},
    {"acp": "coder", "permissions": "allow"},
    {"acp": ["coder"]},
    {"acp": ""},
])
def test_a_file_names_an_external_agent_never_its_command(props: dict) -> None:
    with pytest.raises(AgentError, match="a file cannot give its command or settings"):
        agent_from_mapping("coder", props, source="preset")


def test_a_file_names_an_external_agent_by_name() -> None:
    assert agent_from_mapping("coder", {"acp": "claude"}, source="preset").acp == "claude"


def _turn(cid: str, text: str, reply: str, **attrs: object) -> dict:
    cell = fmt.new_message(text, cell_id=cid)
    cell["outputs"] = [fmt.reply_output(reply, agent="coder", out_id=f"{cid}.1",
                                        attrs={"agent": "coder", **attrs})]
    return cell


def test_a_session_is_continued_only_when_nothing_before_the_message_changed() -> None:
    from jupyter_percent_agent.runtime.agents import Agent

    agent = Agent("coder", acp="claude")
    first = fmt.new_message("first", cell_id="a")
    sealed = session_hash([], "first", ["answer"])
    first["outputs"] = [fmt.reply_output("answer", agent="coder", out_id="a.1", attrs={
        "agent": "coder", "acp": "claude", "session_id": "s1", "session_hash": sealed})]
    assert recorded_session([first], agent) == ("s1", "")

    edited = {**first, "source": "first, edited"}
    assert recorded_session([edited], agent) == (
        None, "the cells before this message changed since session s1")
    later = fmt.new_message("a note of the user's", cell_id="b")
    assert recorded_session([first, later], agent)[1] == (
        "cells were added after session s1's last reply")
    other = Agent("coder", acp="codex")
    assert recorded_session([first], other)[1] == "session s1 was another ACP agent's"
    assert recorded_session([fmt.new_message("x", cell_id="c")], agent) == (None, "")


def test_the_folder_rules_for_the_client_side(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)
    (folder / "src").mkdir()
    (folder / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("secret")
    (folder / "out").symlink_to(tmp_path / "secret.txt")
    message = folder / "chat.msg.md"
    message.write_text("")
    rules = Folder(folder, protected=(message,))
    assert rules.read(str(folder / "src" / "a.py")) == "x = 1\n"
    assert rules.read("src/a.py", line=1, limit=1) == "x = 1\n"
    for path, says in [(str(tmp_path / "secret.txt"), "outside the conversation's folder"),
                       ("../secret.txt", "leads out of the file's folder"),
                       ("out", "leads out of the file's folder"),
                       (".git/config", "version-control folder"),
                       (str(message), "the open message file itself")]:
        with pytest.raises(trust.TrustError, match=says):
            rules.check(path, "write")
    os.link(tmp_path / "secret.txt", folder / "hard.txt")  # another name, outside
    with pytest.raises(trust.TrustError, match="hard links"):
        rules.read("hard.txt")
    rules.write("hard.txt", "replaced\n")  # the name is replaced, not the shared content
    assert (tmp_path / "secret.txt").read_text() == "secret"
    written = rules.write(str(folder / "new" / "b.txt"), "made\n")
    assert written.read_text() == "made\n" and os.path.dirname(written) == str(
        (folder / "new").resolve())


def test_events_read_as_a_diff_and_a_checklist() -> None:
    diff = acp.FileDiff("notes.txt", "hello\n", "hello there\n")
    assert diff.unified() == ("--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-hello\n"
                              "+hello there\n")
    assert acp.FileDiff("new.txt", None, "x").unified().startswith("--- /dev/null\n")
    plan = acp.PlanUpdate((acp.PlanEntry("read", "completed"), acp.PlanEntry("edit", "pending")))
    assert plan.checklist() == "- [x] read\n- [ ] edit"
