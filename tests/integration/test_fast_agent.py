"""A real third-party ACP agent: fast-agent (``make setup`` installs it, pinned, in
``.venv-acp``) as the user's agent ``coder`` in a trusted folder, its model the local server
scripted to call fast-agent's own file tools (OpenAI ``tool_calls``), which fast-agent serves
through this client: it asks permission first, reads and writes through the client's
confined file access, and sends the edit as a diff.

In the Agent kernel (as JupyterLab runs it: a person at the front end) and through ``tce chat``
(a real process, the user's ``--permissions allow`` answering). Without fast-agent these
tests skip, and fail under ``CI=true`` (the ``fast_agent`` fixture).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.kernel._permission import PERMISSION_KEY
from jupyter_percent_agent.testing.environment import run_tce, tce
from jupyter_percent_agent.testing.fast_agent import FastAgent
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply

if TYPE_CHECKING:
    from tests.integration.conftest import AcpKernel

ANSWER = "Updated notes.txt; the file outside this folder is out of my reach."


def _script(server: OpenAIServer, folder: Path, outside: Path) -> None:
    """Read notes.txt, write it anew, try a file outside the folder, then answer."""
    notes = str(folder / "notes.txt")
    server.script(
        Reply("", tool_calls=[{"name": "read_text_file", "arguments": {"path": notes}}]),
        Reply("", tool_calls=[{"name": "write_text_file",
                               "arguments": {"path": notes, "content": "new line\n"}}]),
        Reply("", tool_calls=[{"name": "read_text_file", "arguments": {"path": str(outside)}}]),
        Reply(ANSWER, chunk_size=4, chunk_delay=0.01))


def _outside(tmp_path: Path) -> Path:
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the secret\n", encoding="utf-8")
    return secret


def test_fast_agent_in_the_kernel_asks_edits_with_a_diff_and_stays_in_its_folder(
        acp_kernel: Callable[..., AcpKernel], fast_agent: FastAgent,
        local_model: OpenAIServer, tmp_path: Path) -> None:
    k = acp_kernel(fast_agent.command, name="fast", env=fast_agent.env,
                   marker="fast-agent-acp")
    (k.folder / "notes.txt").write_text("old line\n", encoding="utf-8")
    outside = _outside(tmp_path)
    _script(local_model, k.folder, outside)
    asked: list[dict[str, Any]] = []
    texts: list[str] = []

    def answer(request: dict) -> str:
        asked.append(request["content"][PERMISSION_KEY])
        return "allow_once"  # what the dialog sends: the option's id

    def seen(m: dict) -> None:
        text = (m["content"].get("data") or {}).get("text/markdown")
        if text is not None and not (m["content"].get("metadata") or {}).get("reasoning"):
            texts.append(text)

    reply, iopub = k.until_idle(k.send("Update my notes.", "q2", allow_stdin=True), seen,
                                answer)
    assert reply["content"]["status"] == "ok", reply["content"]

    # streamed: the answer was on screen in pieces before it was whole
    final = k.answer_of(iopub)
    assert fmt.output_text(final) == ANSWER
    assert any(ANSWER.startswith(t) and t != ANSWER for t in texts if t), texts
    attrs = fmt.output_attrs(final)
    assert attrs["acp"] == "fast" and attrs["acp_agent"] == "fast-agent-acp 0.10.48"

    # the person was asked before each tool ran, the edit shown as a diff
    assert [a["title"] for a in asked][:2] == ["read_text_file", "write_text_file"]
    write = asked[1]
    assert write["kind"] == "edit"
    assert [o["kind"] for o in write["options"]][:2] == ["allow_once", "allow_always"]
    assert "+new line" in write["diffs"][0]["diff"]
    assert (k.folder / "notes.txt").read_text(encoding="utf-8") == "new line\n"

    # the tool calls are recorded, the edit as a diff; the file outside was never read
    outs = k.shown(iopub)
    results = [fmt.output_text(o) for o in outs if fmt.output_kind(o) == "tool_result"]
    assert any("-old line" in r and "+new line" in r for r in results), results
    assert not any("the secret" in fmt.output_text(o) for o in outs)
    assert any(r.startswith(f"refused: '{outside}' is outside the conversation's folder")
               for r in results), results


def test_fast_agent_through_tce_chat_streams_and_records_its_edit(
        fast_agent: FastAgent, local_model: OpenAIServer, tmp_path: Path,
        trusted: Callable[[Path], Path], env: dict[str, str]) -> None:
    """``tce acp add`` with the fixture's command line, the user's ``--permissions allow``
    answering (no terminal), and the turn written into the file."""
    added = tce(*fast_agent.acp_add_args("coder", "--permissions", "allow"))
    assert added.exit_code == 0, added.output
    folder = tmp_path / "work"
    folder.mkdir()
    trusted(folder)
    (folder / "notes.txt").write_text("old line\n", encoding="utf-8")
    chat = folder / "chat.msg.md"
    chat.write_text("---\nagents:\n  coder: {acp: coder}\ndefault_agent: coder\n---\n",
                    encoding="utf-8")
    _script(local_model, folder, _outside(tmp_path))
    done = run_tce("chat", str(chat), "-m", "Update my notes.", env=env, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert ANSWER in done.stdout
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "new line\n"
    text = chat.read_text(encoding="utf-8")
    assert "-old line" in text and "+new line" in text
    assert "the secret" not in text
    assert 'acp_agent="fast-agent-acp 0.10.48"' in text
