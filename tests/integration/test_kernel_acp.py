"""An external ACP agent in the Agent kernel, over the real Jupyter protocol: a kernel started
from the project's kernelspec by jupyter_client, the scripted agent on the official ACP SDK
(``testing/scripted_acp_agent.py``) as the user's agent ``scripted``, in a trusted folder.

One agent process per open conversation, kept from message to message and ended with the
kernel; chunks streaming into the cell's output; permission requests asked over the stdin
channel when the front end has a person (``allow_stdin``), rejected without asking when it
has none; interrupt sending ``session/cancel`` and keeping what arrived; an untrusted folder
refused with the "Trust this folder?" marker before any process starts.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.kernel._permission import PERMISSION_KEY
from jupyter_percent_agent.testing.kernels import open_live_comm, send_live_state, told

if TYPE_CHECKING:
    from tests.integration.conftest import AcpKernel

TIMEOUT = 30


class Scripted:
    """The scripted agent as the kernel's ``coder``, and the calls it answered."""

    def __init__(self, kernel: AcpKernel, log: Path) -> None:
        self.kernel, self.log = kernel, log

    def calls(self, method: str) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [c for c in map(json.loads, lines) if c["method"] == method]


@pytest.fixture
def scripted(acp_kernel: Callable[..., AcpKernel], tmp_path: Path
             ) -> Callable[..., tuple[AcpKernel, Scripted]]:
    """An Agent kernel whose agent runs ``script`` (the scripted agent's JSON)."""

    def start(script: dict[str, Any], **options: Any) -> tuple[AcpKernel, Scripted]:
        log = tmp_path / "agent-calls.jsonl"
        script_file = tmp_path / "script.json"
        script_file.write_text(json.dumps({**script, "log": str(log)}), encoding="utf-8")
        kernel = acp_kernel([sys.executable, "-m", "jupyter_percent_agent.testing."
                            "scripted_acp_agent", str(script_file)], name="scripted", **options)
        return kernel, Scripted(kernel, log)

    return start


def test_chunks_stream_into_the_cell_and_the_agent_stays_for_the_next_message(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    k, agent = scripted({"prompts": [[{"say": "Hello"}, {"sleep": 0.5}, {"say": " world."}]]})
    texts: list[tuple[float, str]] = []

    def seen(m: dict) -> None:
        data = m["content"].get("data") or {}
        if "text/markdown" in data:
            texts.append((time.monotonic(), data["text/markdown"]))

    reply, iopub = k.until_idle(k.send("Say hello.", "q2"), seen)
    assert reply["content"]["status"] == "ok", reply["content"]
    # the first chunk was on screen before the second was sent
    assert any(text == "Hello" for _, text in texts), texts
    answer = k.answer_of(iopub)
    assert fmt.output_text(answer) == "Hello world."
    attrs = fmt.output_attrs(answer)
    assert attrs["agent"] == "coder" and attrs["acp"] == "scripted"
    assert attrs["acp_agent"] == "scripted 1.0" and attrs["session_id"]
    (process,) = k.agents()

    reply, iopub = k.run("And again.", "q3")
    assert reply["content"]["status"] == "ok", reply["content"]
    # streamed again, into this cell: the kept agent's chunks name this request as parent
    opened = [m for m in iopub if m["msg_type"] == "display_data"]
    assert opened and opened[0]["content"]["data"]["text/markdown"] == "Hello"
    assert k.agents() == [process]  # the same process, kept while the conversation is open
    assert len(agent.calls("initialize")) == 1
    assert [c["session_id"] for c in agent.calls("prompt")] == [attrs["session_id"]] * 2


def test_no_agent_process_outlives_the_kernel_restart_or_shutdown(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    k, _agent = scripted({"prompts": [[{"say": "ok"}]]})
    assert k.run("Say hello.", "q2")[0]["content"]["status"] == "ok"
    (first,) = k.agents()
    k.km.restart_kernel()
    k.kc.wait_for_ready(timeout=TIMEOUT)
    first.wait(TIMEOUT)  # ended with the kernel it belonged to
    assert k.run("Once more.", "q3")[0]["content"]["status"] == "ok"
    (second,) = k.agents()
    assert second.pid != first.pid
    k.km.shutdown_kernel()  # as JupyterLab shuts a kernel down: it is asked, not killed
    second.wait(TIMEOUT)
    assert not second.is_running()


def test_a_permission_request_is_asked_over_stdin_with_the_tool_and_the_options(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    k, _agent = scripted({"prompts": [[
        {"permission": {"id": "t1", "title": "Run the tests", "kind": "execute"}}]]})
    msg_id = k.send("Run the tests.", "q2", allow_stdin=True)
    request = k.kc.get_stdin_msg(timeout=TIMEOUT)
    assert request["msg_type"] == "input_request"
    asked = request["content"][PERMISSION_KEY]
    assert asked["agent"] == "coder" and asked["title"] == "Run the tests"
    assert asked["kind"] == "execute"
    assert [o["id"] for o in asked["options"]] == ["allow", "always", "reject"]
    # a front end that knows nothing of it shows the prompt: the request and its options
    assert "Run the tests (execute)" in request["content"]["prompt"]
    assert "1: Allow once, 2: Always allow, 3: Reject" in request["content"]["prompt"]
    k.kc.input("always")  # the dialog answers with the option's id
    reply, iopub = k.until_idle(msg_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "permission: always" in fmt.output_text(k.answer_of(iopub))


def test_without_a_person_a_permission_request_is_rejected_without_asking(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    """nbclient and papermill send allow_stdin false: nobody is asked, the agent is told no."""
    k, _agent = scripted({"prompts": [[
        {"permission": {"id": "t1", "title": "Delete the build", "kind": "delete"}}]]})
    reply, iopub = k.run("Clean up.", "q2")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "permission: reject" in fmt.output_text(k.answer_of(iopub))
    assert not k.kc.stdin_channel.msg_ready()


def test_the_users_allow_setting_answers_without_a_person(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    k, _agent = scripted({"prompts": [[
        {"permission": {"id": "t1", "title": "Build", "kind": "execute"}}]]},
        permissions="allow")
    reply, iopub = k.run("Build it.", "q2")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "permission: allow" in fmt.output_text(k.answer_of(iopub))


def test_interrupt_sends_session_cancel_and_keeps_what_arrived_marked_interrupted(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    k, agent = scripted({"prompts": [[{"say": "Working on it"}, {"sleep": 60}, {"say": "never"}],
                                [{"say": "Back."}]]})
    arrived: list[str] = []

    def seen(m: dict) -> None:
        data = m["content"].get("data") or {}
        if "Working on it" in data.get("text/markdown", "") and not arrived:
            arrived.append("yes")
            k.km.interrupt_kernel()

    reply, iopub = k.until_idle(k.send("Do the long thing.", "q2"), seen)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    kept = k.shown(iopub)[-1]
    assert fmt.output_text(kept) == "Working on it"
    assert fmt.output_attrs(kept).get("interrupted") is True
    assert len(agent.calls("cancel")) == 1
    # the agent stays: the next message goes to the same process
    (process,) = k.agents()
    assert k.run("Are you there?", "q3")[0]["content"]["status"] == "ok"
    assert k.agents() == [process]


def test_interrupt_while_a_permission_question_is_open_ends_the_turn(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    k, _agent = scripted({"prompts": [[
        {"permission": {"id": "t1", "title": "Deploy", "kind": "execute"}}]]})
    msg_id = k.send("Deploy.", "q2", allow_stdin=True)
    assert k.kc.get_stdin_msg(timeout=TIMEOUT)["msg_type"] == "input_request"
    k.km.interrupt_kernel()  # nobody answers: the stop button
    reply, _ = k.until_idle(msg_id)
    assert reply["content"]["ename"] == "KeyboardInterrupt"


def test_an_untrusted_folder_starts_no_agent_and_offers_to_trust_it(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    k, agent = scripted({"prompts": [[{"say": "never"}]]}, trusted=False)
    nonce = send_live_state(k.kc, open_live_comm(k.kc), "q2", None)  # as JupyterLab does
    reply, iopub = k.run("Say hello.", "q2")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "UntrustedFolder"
    (said,) = told(iopub)  # JupyterLab's "Trust this folder?" dialog opens on it
    assert said["nonce"] == nonce
    assert said["untrusted_folder"]["folder"] == str(k.folder.resolve())
    assert k.agents() == [] and not agent.log.exists()


def test_text_before_a_tool_finishes_is_a_step_not_a_reply_left_streaming(
        scripted: Callable[..., tuple[AcpKernel, Scripted]]) -> None:
    """Text that streams while a tool runs, then the tool's result: the text is kept as a
    step before the result, never left on screen as a reply still marked incomplete (which
    a save would write into the file) and said again in the answer."""
    k, _agent = scripted({"prompts": [[
        {"tool": {"id": "t1", "title": "Build", "kind": "execute", "status": "in_progress"}},
        {"say": "Halfway there."},
        {"update": {"id": "t1", "status": "completed"}},
        {"say": "Done."}]]})
    reply, iopub = k.run("Build it.", "q2")
    assert reply["content"]["status"] == "ok", reply["content"]
    outs = k.shown(iopub)
    assert not [o for o in outs if fmt.output_attrs(o).get("incomplete")]
    kinds = [(fmt.output_kind(o), fmt.output_text(o)) for o in outs]
    step = kinds.index(("reply", "Halfway there."))
    assert kinds[step + 1][0] == "tool_result"
    assert fmt.output_text(k.answer_of(iopub)) == "Done."
