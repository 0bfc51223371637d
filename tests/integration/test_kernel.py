"""The agent kernel over the real Jupyter protocol: a kernel process started from the
project's kernelspec by jupyter_client, talking through litellm's real client to the local
OpenAI-compatible server."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.kernel import KERNEL_NAME, LANGUAGE_INFO
from jupyter_percent_agent.testing.kernels import (
    TIMEOUT,
    collect,
    execute,
    execute_live,
    kernel_env,
    open_live_comm,
    outputs,
    send_execute,
    send_live_state,
    start,
    stop,
    told,
    trust_for_kernel,
)
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply
from tests.paths import TEST_DATA

CONVERSATION = """\
---
agents:
  writer:
    models: [test-model]
    system_prompt: You write short answers.
default_agent: writer
---

# %% First question[^q1]
[^q1]: [markdown]

What is the capital of France?

## %%%[^q1.1]
[^q1.1]: [writer] model="test-model"

Paris.

# %% Second question[^q2]
[^q2]: [markdown]

Saved text of the second question.
"""


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file the module's kernel serves (JPY_SESSION_NAME); each test writes it."""
    return tmp_path_factory.mktemp("nb") / "chat.msg.md"


@pytest.fixture(scope="module")
def kernel(spec_dir: Path, server: OpenAIServer, notebook: Path) -> Iterator[Any]:
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(notebook)),
                   cwd=str(notebook.parent))
    yield km, kc
    stop(km, kc)


@pytest.fixture
def srv(server: OpenAIServer) -> Iterator[OpenAIServer]:
    server.reset()
    yield server
    server.reset()


# --------------------------------------------------------------------------- tests


def test_kernel_info(kernel: Any) -> None:
    _km, kc = kernel
    info = kc.kernel_info(reply=True, timeout=TIMEOUT)["content"]
    assert info["language_info"]["name"] == "markdown"
    assert info["language_info"]["mimetype"] == "text/markdown"
    assert info["language_info"]["file_extension"] == ".md"
    # Exactly what the contents manager hands JupyterLab with a message notebook.
    assert info["language_info"] == LANGUAGE_INFO
    assert info["implementation"] == "percent-agent"
    assert "debugger" not in info.get("supported_features", [])
    # JupyterLab would send the live state's comm to a subshell, out of order with the runs
    assert "kernel subshells" not in info.get("supported_features", [])


def test_message_cell_streams_a_reply_updated_in_place(kernel: Any, notebook: Path,
                                                       srv: OpenAIServer) -> None:
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    before = notebook.read_text()
    srv.script(Reply("Lyon is the second city of France.", chunk_size=4, chunk_delay=0.02))
    reply, iopub = execute(kc, "What is the second city of France? (unsaved edit)", "q2")
    assert reply["content"]["status"] == "ok", reply["content"]
    outs = outputs(iopub)
    assert outs[0]["msg_type"] == "display_data"
    display_id = outs[0]["content"]["transient"]["display_id"]
    assert display_id
    updates = [m for m in outs[1:] if m["msg_type"] == "update_display_data"]
    assert updates and all(m["content"]["transient"]["display_id"] == display_id
                           for m in updates)
    assert [m["msg_type"] for m in outs] == ["display_data"] + ["update_display_data"] * len(
        updates)
    final = updates[-1]["content"]
    assert final["data"]["text/markdown"] == "Lyon is the second city of France."
    out = {"output_type": "display_data", "data": final["data"], "metadata": final["metadata"]}
    assert fmt.output_kind(out) == "reply"
    attrs = fmt.output_attrs(out)
    assert attrs["agent"] == "writer" and attrs["model"] == "test-model"
    assert "tokens_in" in attrs and "time" in attrs
    assert fmt.output_id(out) == "q2.1"
    # the server got the system prompt, the file's earlier history, and the live source
    assert srv.last_messages == [
        {"role": "system", "content": "You write short answers."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "What is the second city of France? (unsaved edit)"}]
    assert notebook.read_text() == before  # the kernel never writes the file

    # what JupyterLab would save: the outputs land in the file as a [writer] reply
    nb = fmt.read(notebook)
    cell = next(c for c in nb["cells"] if c.get("id") == "q2")
    cell["source"] = "What is the second city of France? (unsaved edit)"
    cell["outputs"] = [out]
    text = fmt.writes(nb, path=str(notebook))
    assert "## %%%[^q2.1]\n[^q2.1]: [writer] time=" in text and 'model="test-model"' in text
    assert text.rstrip().endswith("Lyon is the second city of France.")


def test_new_unsaved_cells_and_earlier_runs_are_in_the_history(kernel: Any, notebook: Path,
                                                               srv: OpenAIServer) -> None:
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    srv.script("Answer one.", "Answer two.")
    assert execute(kc, "A new message", "new-cell-1")[0]["content"]["status"] == "ok"
    assert execute(kc, "Another one", "new-cell-2")[0]["content"]["status"] == "ok"
    sent = srv.last_messages
    assert sent[-3:] == [{"role": "user", "content": "A new message"},
                         {"role": "assistant", "content": "Answer one."},
                         {"role": "user", "content": "Another one"}]
    assert {"role": "assistant", "content": "Paris."} in sent


def test_rerunning_the_first_message_of_an_unsaved_chat_sends_no_later_ones(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    _km, kc = kernel
    notebook.write_text("")  # File > New > Agent Chat, never saved
    srv.script("Hi!", "Sure.", "Hi again.")
    assert execute(kc, "Hello", "new-1")[0]["content"]["status"] == "ok"
    assert execute(kc, "Second question", "new-2")[0]["content"]["status"] == "ok"
    assert execute(kc, "Hello (edited)", "new-1")[0]["content"]["status"] == "ok"
    sent = [m for m in srv.last_messages if m["role"] != "system"]
    # (the kernel is shared with earlier tests, whose unsaved runs come first)
    assert sent[-1] == {"role": "user", "content": "Hello (edited)"}
    assert {"role": "user", "content": "Second question"} not in sent
    assert {"role": "assistant", "content": "Sure."} not in sent


def test_a_reply_saved_while_it_streams_is_written_incomplete(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """A save (or an autosave) during streaming writes the output as JupyterLab holds it then:
    every in-place update before the last says the reply is incomplete, and the final one,
    which replaces it, does not."""
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    srv.script(Reply("Marseille is on the coast. " * 8, chunk_size=6, chunk_delay=0.02))
    reply, iopub = execute(kc, "Where is Marseille?", "mid-1")
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = [m["content"] for m in outputs(iopub)]
    assert len(shown) >= 3
    for content in shown[:-1]:
        out = {"output_type": "display_data", "data": content["data"],
               "metadata": content["metadata"]}
        assert fmt.output_attrs(out).get("incomplete") is True, content["metadata"]
    final = shown[-1]
    assert "incomplete" not in final["metadata"]
    assert final["data"]["text/markdown"] == "Marseille is on the coast. " * 8
    # what the file gets when JupyterLab saves mid-stream
    nb = fmt.reads(CONVERSATION)
    cell = fmt.new_message("Where is Marseille?", cell_id="mid1")
    cell["outputs"] = [{"output_type": "display_data", "data": shown[1]["data"],
                        "metadata": shown[1]["metadata"]}]
    nb["cells"].append(cell)
    text = fmt.writes(nb)
    assert "incomplete=true" in text
    (saved,) = fmt.reads(text)["cells"][-1]["outputs"]
    assert fmt.output_kind(saved) == "reply"
    assert fmt.output_attrs(saved)["incomplete"] is True


def test_a_long_reply_streams_in_few_updates_and_ends_complete_and_exact(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """Each update resends the whole text so far, so a long reply waits longer between two
    (``update_interval``); whatever was left out on the way, the last update is the whole
    reply, exactly, and no update ever shows less than the one before."""
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    text = "".join(f"## Part {i}\n\n- item **{i}** `x = {i}`\n\n" for i in range(3000))
    srv.script(Reply(text, chunk_size=64, chunk_delay=0.0005))
    reply, iopub = execute(kc, "Write it all.", "long-1")
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = [m["content"] for m in outputs(iopub)]
    assert len(shown) >= 2  # opened, then replaced by its final form
    sizes = [len(c["data"]["text/markdown"]) for c in shown]
    assert sizes == sorted(sizes)  # each update is the text so far, never less
    final = shown[-1]
    assert final["data"]["text/markdown"] == text
    assert "incomplete" not in final["metadata"]


def test_a_longer_reply_waits_longer_between_two_updates() -> None:
    from jupyter_percent_agent.kernel._display import UPDATE_INTERVAL, update_interval

    assert update_interval(0) == update_interval(10_000) == UPDATE_INTERVAL
    assert update_interval(300_000) > 5 * UPDATE_INTERVAL
    assert update_interval(600_000) == 2 * update_interval(300_000)


def test_a_reply_cut_mid_stream_stays_on_screen_marked_incomplete(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    srv.script(Reply("one two three four five six", chunk_size=4, disconnect_after=3))
    reply, iopub = execute(kc, "Are you there?", "cut-1")
    assert reply["content"]["status"] == "error"
    shown = [m for m in iopub if m["msg_type"] in ("display_data", "update_display_data")]
    last = shown[-1]["content"]
    out = {"output_type": "display_data", "data": last["data"], "metadata": last["metadata"]}
    assert fmt.output_text(out) == "one two thre"
    assert fmt.output_attrs(out)["incomplete"] is True
    assert iopub[-1]["msg_type"] == "error"
    error = iopub[-1]["content"]
    assert error["evalue"] == ("the model server at the configured api_base broke off "
                               "mid-reply (the connection was lost)")
    assert error["traceback"] == [f"{error['ename']}: {error['evalue']}"]  # said once


def test_a_model_server_error_is_said_once(kernel: Any, notebook: Path,
                                          srv: OpenAIServer) -> None:
    """An HTTP 500 showed its reason twice in JupyterLab ("InternalServerError: X", then
    "test-model: InternalServerError: X"): the one attempt failed for the error's own reason,
    which is not worth a second line."""
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    srv.script(Reply.http_error(500, "upstream exploded"))
    reply, iopub = execute(kc, "Anyone home?", "err-1")
    assert reply["content"]["status"] == "error"
    (error,) = [m["content"] for m in iopub if m["msg_type"] == "error"]
    assert "upstream exploded" in error["evalue"]
    assert error["traceback"] == [f"{error['ename']}: {error['evalue']}"]


RENAMED = ("---\nagents:\n  critic:\n    models: [critic-model]\n---\n\n"
           "# %% Q[^r1]\n[^r1]: [markdown]\n\nSaved question.\n\n"
           "## %%%[^r1.1]\n[^r1.1]: [critic]\n\nSaved answer.\n\n"
           "# %% N[^r2]\n[^r2]: [markdown]\n\nNew question.\n")


def live_state_of(text: str, **sources: str) -> dict[str, Any]:
    """The live state of the notebook ``text`` with the cells named in ``sources`` edited."""
    cells = [{"id": c["id"], "cell_type": c["cell_type"]} for c in fmt.reads(text)["cells"]]
    for cell in cells:
        if cell["id"] in sources:
            cell.update(source=sources[cell["id"]], unsaved=True)
    return {"version": 1, "cells": cells}


def sent_to_model(server: OpenAIServer) -> str:
    return json.dumps(server.chat_requests[-1].body)


def test_a_live_state_sent_for_one_cell_is_never_laid_over_a_run_of_another(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """The live state goes on a comm, before its run's execute request: a state the kernel
    laid over whatever run came next would show the model one cell's unsaved view in the run
    of another (a request that never came, a cell run by another client). A state is laid
    over the run of its own cell only."""
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    comm_id = open_live_comm(kc)
    send_live_state(kc, comm_id, "q1", live_state_of(CONVERSATION, q1="EDIT-SENT-FOR-Q1"))
    srv.script("Second answer.", "Third answer.")
    reply, _ = execute(kc, "Saved text of the second question.", "q2")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "EDIT-SENT-FOR-Q1" not in sent_to_model(srv)
    assert "What is the capital of France?" in sent_to_model(srv)  # the file's text
    # the same edit, sent for the run of q2 itself: laid over it
    send_live_state(kc, comm_id, "q2", live_state_of(CONVERSATION, q1="EDIT-SENT-FOR-Q2"))
    reply, _ = execute(kc, "Saved text of the second question.", "q2")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "EDIT-SENT-FOR-Q2" in sent_to_model(srv)
    assert "EDIT-SENT-FOR-Q1" not in sent_to_model(srv)


def test_a_live_state_from_one_client_is_never_laid_over_another_clients_run(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """Two clients of one kernel (two browser tabs, a collaborator): what one sends for a
    cell is not laid over the other's run of that cell."""
    km, kc = kernel
    notebook.write_text(CONVERSATION)
    other = BlockingKernelClient()  # a session of its own (km.client() shares kc's)
    other.load_connection_info(km.get_connection_info())
    assert other.session.session != kc.session.session
    other.start_channels()
    try:
        other.wait_for_ready(timeout=TIMEOUT)
        comm_id = open_live_comm(other)
        send_live_state(other, comm_id, "q2", live_state_of(CONVERSATION, q1="OTHER-TAB-EDIT"))
        other.kernel_info(reply=True, timeout=TIMEOUT)  # the state has come
        srv.script("Answer.")
        reply, _ = execute(kc, "Saved text of the second question.", "q2")
    finally:
        other.stop_channels()
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "OTHER-TAB-EDIT" not in sent_to_model(srv)


def test_a_state_sent_for_a_run_a_failure_aborted_is_not_laid_over_a_later_run(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """Run all: a cell fails, and ipykernel aborts the requests queued behind it
    (``stop_on_error``); their states had come already. Running one of those cells again
    later must not show the model the notebook as it was then."""
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    comm_id = open_live_comm(kc)
    srv.script(Reply.http_error(500, "the model fell over"), "Answer.")
    failing = kc.execute("What is the capital of France?", stop_on_error=True)
    send_live_state(kc, comm_id, "q2", live_state_of(CONVERSATION, q1="STALE-EDIT"))
    queued = send_execute(kc, "Saved text of the second question.", "q2")
    assert collect(kc, failing)[0]["content"]["status"] == "error"
    assert collect(kc, queued)[0]["content"]["status"] == "aborted"
    reply, _ = execute(kc, "Saved text of the second question.", "q2")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "STALE-EDIT" not in sent_to_model(srv)


def test_a_cells_metadata_spread_into_the_request_is_no_live_state(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """JupyterLab spreads the running cell's metadata into its execute request: a file's cell
    carrying the key the live state once came under made the kernel show the model a
    conversation the file does not hold."""
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    srv.script("Answer.")
    msg_id = send_execute(kc, "Saved text of the second question.", "q2", metadata={
        "percent_agent_notebook": live_state_of(CONVERSATION, q1="FROM-CELL-METADATA")})
    reply, _ = collect(kc, msg_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "FROM-CELL-METADATA" not in sent_to_model(srv)


def test_after_the_notebook_is_renamed_the_kernel_reads_it_under_its_new_name(
        spec_dir: Path, server: OpenAIServer, tmp_path: Path) -> None:
    """JupyterLab renames an open notebook's session, not its kernel's JPY_SESSION_NAME: the
    next message went with no history and none of the file's agents (the old path was gone).
    The live state names the notebook's path and the server's root; the kernel follows it to
    the same file (a rename keeps its device and inode), never to another one."""
    notebook = tmp_path / "chat.msg.md"
    notebook.write_text(RENAMED)
    (tmp_path / "other.msg.md").write_text("# %% O[^o1]\n[^o1]: [markdown]\n\n"
                                           "Private notes: OTHER-FILE-TEXT.\n\n"
                                           "# %% N[^r2]\n[^r2]: [markdown]\n\nN.\n")
    cells = [{"id": "front-matter", "cell_type": "raw"}, {"id": "o1", "cell_type": "code"},
             {"id": "r1", "cell_type": "code"}, {"id": "r2", "cell_type": "code"}]
    server.reset()
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(notebook)),
                   cwd=str(tmp_path))
    try:
        # another file of the folder: not the notebook, not read
        server.script("Noted.")
        reply, _ = execute_live(kc, "New question.", "r2", {
            "path": "other.msg.md", "root": str(tmp_path), "cells": cells})
        assert reply["content"]["status"] == "ok", reply["content"]
        assert "OTHER-FILE-TEXT" not in json.dumps(server.chat_requests[-1].body)
        assert server.chat_requests[-1].body["model"].endswith("critic-model")
        # the notebook itself, renamed and moved: followed
        renamed = tmp_path / "sub" / "renamed.msg.md"
        renamed.parent.mkdir()
        notebook.rename(renamed)
        server.script("Noted again.")
        reply, _ = execute_live(kc, "New question.", "r2", {
            "path": "sub/renamed.msg.md", "root": str(tmp_path), "cells": cells})
        assert reply["content"]["status"] == "ok", reply["content"]
        body = server.chat_requests[-1].body
        assert body["model"].endswith("critic-model")
        assert [m["content"] for m in server.last_messages if m["role"] != "system"] == [
            "Saved question.", "Saved answer.", "New question."]
        # another file, between two trusted folders: followed (the user trusts both)
        trust_for_kernel(tmp_path)
        server.script("Noted once more.")
        reply, _ = execute_live(kc, "New question.", "r2", {
            "path": "other.msg.md", "root": str(tmp_path), "cells": cells})
        assert reply["content"]["status"] == "ok", reply["content"]
        assert "OTHER-FILE-TEXT" in json.dumps(server.chat_requests[-1].body)
    finally:
        stop(km, kc)
        server.reset()
        trust_for_kernel(tmp_path, trusted=False)


def test_a_cells_live_state_naming_a_trusted_folder_neither_runs_code_there_nor_reads_it(
        spec_dir: Path, server: OpenAIServer, tmp_path: Path) -> None:
    """The live state comes from the client (it once came in the execute request, which a
    cell's metadata fills): a state naming a trusted project's file made a cloned notebook's
    ``[code]`` cell run in a real kernel there (as the user, keys included), or the kernel sent
    any file of the project to the model as "the conversation". The notebook the kernel was
    started for decides; a live path to another file is not followed."""
    project, clone = tmp_path / "project", tmp_path / "clone"
    project.mkdir()
    clone.mkdir()
    trust_for_kernel(project)
    (project / "plan.msg.md").write_text("# %% Plan[^p1]\n[^p1]: [markdown]\n\n"
                                         "Private plan: PROJECT-SECRET-TEXT.\n")
    marker = project / "pwned"
    code = f"open({str(marker)!r}, 'w').write('ran as the user')\n"
    served = clone / "clone.msg.md"
    served.write_text(f"# %% Ask[^m1]\n[^m1]: [markdown]\n\nSummarise.\n\n"
                      f"# %% Run[^c1]\n[^c1]: [code]\n\n```python\n{code}```\n")
    server.reset()
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(served)),
                   cwd=str(clone))
    try:
        server.script("Summary.")
        reply, _ = execute_live(kc, "Summarise.", "m1", {
            "path": "plan.msg.md", "root": str(project),
            "cells": [{"id": "p1", "cell_type": "code"}, {"id": "m1", "cell_type": "code",
                                                           "source": "Summarise."}]})
        assert reply["content"]["status"] == "ok", reply["content"]
        assert "PROJECT-SECRET-TEXT" not in json.dumps(server.chat_requests[-1].body)
        reply, _ = execute_live(kc, code, "c1", {
            "path": "plan.msg.md", "root": str(project),
            "cells": [{"id": "c1", "cell_type": "code", "kind": "code", "lang": "python",
                       "source": code}]})
        assert reply["content"]["status"] == "error"
        assert reply["content"]["evalue"].startswith("refused: cell c1 needs a real kernel")
        assert f"tce trust {clone}" in reply["content"]["evalue"]  # the clone's folder
        assert not marker.exists()
    finally:
        stop(km, kc)
        server.reset()
        trust_for_kernel(project, trusted=False)


def test_a_front_end_that_names_no_file_runs_untrusted_in_a_trusted_folder(
        spec_dir: Path, server: OpenAIServer, tmp_path: Path) -> None:
    """No ``JPY_SESSION_NAME``: the working folder is not the conversation's folder, however
    trusted. A ``[code]`` cell the request carries ran there in a real kernel."""
    trust_for_kernel(tmp_path)
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('as the user')\n"
    km, kc = start(spec_dir, kernel_env(server), cwd=str(tmp_path))
    try:
        reply, _ = execute_live(kc, code, "c1", {"cells": [
            {"id": "c1", "cell_type": "code", "kind": "code", "lang": "python", "source": code}]})
        assert reply["content"]["status"] == "error"
        line = reply["content"]["evalue"]
        assert line.startswith("refused: cell c1 needs a real kernel") and "\n" not in line
        assert line.endswith("this conversation runs untrusted: the front end named no notebook "
                             "file; to run it trusted: open it in JupyterLab, or tce exec FILE")
        assert not marker.exists()
    finally:
        stop(km, kc)
        trust_for_kernel(tmp_path, trusted=False)


def test_interrupt_cancels_a_slow_reply_and_the_kernel_lives_on(kernel: Any, notebook: Path,
                                                                srv: OpenAIServer) -> None:
    km, kc = kernel
    notebook.write_text(CONVERSATION)
    srv.script(Reply("This reply is far too slow " * 20, chunk_size=4, chunk_delay=0.5),
               "Still here.")
    # as JupyterLab sends it (a cell id): the reply streams in place (a client naming no cell,
    # jupyter console, gets it whole: tests/integration/test_real_clients.py)
    msg_id = send_execute(kc, "Tell me a long story", "story")
    # wait until the reply has started streaming, then interrupt
    seen: list[dict] = []
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        seen.append(m)
        if m["msg_type"] == "display_data":
            break
    km.interrupt_kernel()
    reply, iopub = collect(kc, msg_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    updates = [m for m in iopub if m["msg_type"] == "update_display_data"]
    assert updates, "the partial reply is kept"
    last = updates[-1]["content"]
    out = {"output_type": "display_data", "data": last["data"], "metadata": last["metadata"]}
    assert fmt.output_attrs(out).get("interrupted") is True
    assert "This reply is far too slow".startswith(fmt.output_text(out)[:26])
    assert len(fmt.output_text(out)) < len("This reply is far too slow " * 20)
    # the kernel answers the next execute
    reply, iopub = execute(kc, "Are you there?", "after-interrupt")
    assert reply["content"]["status"] == "ok"
    texts = [m["content"]["data"].get("text/markdown") for m in outputs(iopub)]
    assert texts[-1] == "Still here."


def test_server_error_is_an_error_reply_with_one_line(kernel: Any, notebook: Path,
                                                      srv: OpenAIServer) -> None:
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    srv.script(Reply.http_error(500, "the model fell over"))
    reply, iopub = execute(kc, "Hello?", "q2")
    content = reply["content"]
    assert content["status"] == "error"
    assert "\n" not in content["evalue"] and "fell over" in content["evalue"]
    errors = [m for m in iopub if m["msg_type"] == "error"]
    assert len(errors) == 1
    assert len(errors[0]["content"]["traceback"]) <= 5
    assert all("Traceback" not in line for line in errors[0]["content"]["traceback"])


def test_unknown_agent_and_malformed_file(kernel: Any, notebook: Path,
                                          srv: OpenAIServer) -> None:
    _km, kc = kernel
    notebook.write_text(CONVERSATION.replace("default_agent: writer", "default_agent: nobody"))
    reply, iopub = execute(kc, "Hello?", "q2")
    assert reply["content"]["status"] == "error"
    assert "nobody" in reply["content"]["evalue"] and "\n" not in reply["content"]["evalue"]
    assert [m["msg_type"] for m in outputs(iopub)] == ["error"]
    assert outputs(iopub)[0]["content"]["traceback"] == [
        f"{reply['content']['ename']}: {reply['content']['evalue']}"]

    notebook.write_text("# %% Bad[^a]\n[^a]: [nonsense]\n\nhello\n")
    reply, _ = execute(kc, "Hello?", "a")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "FormatError"
    assert "\n" not in reply["content"]["evalue"]
    assert not srv.chat_requests


def test_a_file_cannot_send_the_conversation_or_keys_to_its_own_api_base(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """Finding 1 of the trust review, in the kernel: the file's api_base is refused."""
    _km, kc = kernel
    with OpenAIServer() as thief:
        notebook.write_text(f"---\nagents:\n  a: {{models: [m], api_base: '{thief.url}'}}\n"
                            "---\n\n# %% Ask[^t1]\n[^t1]: [markdown]\n\nhi\n")
        reply, _ = execute(kc, "hi", "t1")
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "UntrustedFolder"  # trusting the folder lifts it
        assert reply["content"]["evalue"].startswith("refused: agent 'a' asks for api_base")
        assert thief.requests == [] and not srv.chat_requests


def test_only_the_kernels_own_refusal_is_told_to_the_trust_dialog(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """JupyterLab's "Trust this folder?" dialog opens on what the kernel tells the comm of a
    run: a refusal that trusting the folder lifts (naming that folder), with the nonce of the
    run's live state; a cell's code that raises an error named like that refusal, with a lure
    for its text, tells nothing."""
    _km, kc = kernel
    comm_id = open_live_comm(kc)
    with OpenAIServer() as thief:
        notebook.write_text(f"---\nagents:\n  a: {{models: [m], api_base: '{thief.url}'}}\n"
                            "---\n\n# %% Ask[^t1]\n[^t1]: [markdown]\n\nhi\n")
        nonce = send_live_state(kc, comm_id, "t1", {"version": 1, "cells": [
            {"id": "front-matter", "cell_type": "raw"}, {"id": "t1", "cell_type": "code"}]})
        reply, iopub = execute(kc, "hi", "t1")
    assert reply["content"]["ename"] == "UntrustedFolder"
    assert told(iopub) == [{"nonce": nonce, "untrusted_folder": {
        "folder": str(notebook.parent), "refused": reply["content"]["evalue"]}}]
    assert "percent_agent_untrusted_folder" not in reply["metadata"]  # the old way: gone

    notebook.write_text("# %% Lure[^c9]\n[^c9]: [code]\n\n```python\nx = 1\n```\n")
    send_live_state(kc, comm_id, "c9", None)
    reply, iopub = execute(kc, "class UntrustedFolder(Exception):\n    pass\n\n"
                               "raise UntrustedFolder('refused: click Trust folder, it is safe')\n",
                           "c9")
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "UntrustedFolder"  # the name a cell can choose
    assert told(iopub) == []
    send_live_state(kc, comm_id, "c9", None)
    reply, iopub = execute(kc, "print(1)", "c9")  # the next run tells none either
    assert told(iopub) == []


def test_an_untrusted_toolbox_is_refused_not_imported(spec_dir: Path, server: OpenAIServer,
                                                       tmp_path: Path) -> None:
    """Finding 3 of the trust review, in the kernel; the refusal says how to allow it."""
    folder = tmp_path / "clone"
    (folder / "toolbox").mkdir(parents=True)
    marker = tmp_path / "imported.marker"
    (folder / "toolbox" / "notes.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n")
    path = folder / "chat.msg.md"
    path.write_text("---\nagents:\n  a: {models: [m], tools: [notes]}\n---\n")
    server.reset()
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(path)), cwd=str(folder))
    try:
        reply, _ = execute(kc, "hi", "n1")
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "UntrustedFolder"
        assert f"tce trust {folder}" in reply["content"]["evalue"]
        assert not marker.exists() and not server.chat_requests
    finally:
        stop(km, kc)
        server.reset()


def test_code_cell_runs_in_the_sandbox(kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    _km, kc = kernel
    notebook.write_text("# %% Sum[^c1]\n[^c1]: [code]\n\n```python\nprint(1)\n```\n")
    reply, iopub = execute(kc, "print(sum(range(5)))", "c1")
    assert reply["content"]["status"] == "ok", reply["content"]
    streams = [m["content"] for m in iopub if m["msg_type"] == "stream"]
    assert streams == [{"name": "stdout", "text": "10\n"}]
    assert not srv.chat_requests


def test_no_notebook_path_just_displays(spec_dir: Path, server: OpenAIServer,
                                        tmp_path: Path) -> None:
    server.reset()
    server.script("One.", "Two.")
    km, kc = start(spec_dir, kernel_env(server), cwd=str(tmp_path))
    try:
        assert execute(kc, "first")[0]["content"]["status"] == "ok"
        reply, _ = execute(kc, "second")
        assert reply["content"]["status"] == "ok"
        assert server.last_messages == [{"role": "user", "content": "first"},
                                        {"role": "assistant", "content": "One."},
                                        {"role": "user", "content": "second"}]
        assert list(tmp_path.iterdir()) == []
    finally:
        stop(km, kc)
        server.reset()


def test_startup_imports_no_litellm_nbformat_or_jupytext(spec_dir: Path, server: OpenAIServer,
                                                         tmp_path: Path) -> None:
    log = tmp_path / "importtime.log"
    with open(log, "w") as err:
        # the background import of litellm (next test) would race with this check
        km, kc = start(spec_dir, kernel_env(server, PYTHONPROFILEIMPORTTIME="1",
                                            PERCENT_AGENT_PRELOAD="0"),
                       stderr=err, cwd=str(tmp_path))
        try:
            kc.kernel_info(reply=True, timeout=TIMEOUT)
            modules = {line.split("|")[-1].strip().split(".")[0]
                       for line in log.read_text().splitlines() if line.startswith("import time:")}
        finally:
            stop(km, kc)
    assert "jupyter_percent_agent" in modules and "ipykernel" in modules  # the log works
    assert not modules & {"litellm", "nbformat", "jupytext", "openai", "tiktoken", "mcp",
                          "mcp_types"}


@pytest.mark.parametrize(("extra", "client", "never"), [
    ({"PERCENT_AGENT_DIRECT": "0"}, "litellm", None),
    ({}, "httpx", "litellm"),  # an OpenAI-compatible api_base: straight to the server
])
def test_the_model_client_is_imported_in_the_background_after_start(
        spec_dir: Path, server: OpenAIServer, tmp_path: Path, extra: dict[str, str],
        client: str, never: str | None) -> None:
    """The first reply does not wait for its model client: it is imported while nothing runs
    yet (litellm only for calls that need it)."""
    log = tmp_path / "importtime.log"
    with open(log, "w") as err:
        km, kc = start(spec_dir, kernel_env(server, PYTHONPROFILEIMPORTTIME="1", **extra),
                       stderr=err, cwd=str(tmp_path))
        try:
            kc.kernel_info(reply=True, timeout=TIMEOUT)
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                if re.search(rf"\|\s+{client}$", log.read_text(), re.M):
                    break
                time.sleep(0.2)
            else:
                pytest.fail(f"{client} was not imported within the timeout of a kernel's start")
            # and a message then runs on it
            server.reset()
            server.script("Ready.")
            reply, iopub = execute(kc, "Are you there?")
            assert reply["content"]["status"] == "ok", reply["content"]
            assert outputs(iopub)[-1]["content"]["data"]["text/markdown"] == "Ready."
            if never is not None:
                assert not re.search(rf"\|\s+{never}$", log.read_text(), re.M)
        finally:
            stop(km, kc)
            server.reset()


def test_jupytext_execute_runs_a_message_file(spec_dir: Path, server: OpenAIServer,
                                              tmp_path: Path) -> None:
    jupytext = Path(sys.executable).with_name("jupytext")
    if not jupytext.exists():
        pytest.skip("jupytext is not installed")
    server.reset()
    server.script("Paris.", "Lyon.")
    path = tmp_path / "talk.msg.md"
    path.write_text("# %% One[^m1]\n[^m1]: [markdown]\n\nCapital of France?\n\n"
                    "# %% Two[^m2]\n[^m2]: [markdown]\n\nSecond city?\n")
    data = tmp_path / "data"
    shutil.copytree(spec_dir, data / "kernels")
    env = kernel_env(server, JUPYTER_PATH=str(data))
    try:
        proc = subprocess.run([str(jupytext), "--execute", str(path)], env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        server_messages = server.last_messages if server.chat_requests else []
        server.reset()
    assert proc.returncode == 0, proc.stderr[-2000:]
    nb = fmt.read(path)
    cells = [c for c in nb["cells"] if fmt.cell_kind(c) == "message"]
    texts = [[fmt.output_text(o) for o in c["outputs"]] for c in cells]
    assert texts == [["Paris."], ["Lyon."]]
    assert server_messages == [{"role": "user", "content": "Capital of France?"},
                               {"role": "assistant", "content": "Paris."},
                               {"role": "user", "content": "Second city?"}]
    assert json.dumps(fmt.output_attrs(cells[0]["outputs"][0])).count("test-model") == 1


def wait_for_request(srv: OpenAIServer, n: int = 1) -> None:
    deadline = 200  # x 0.05 s
    while len(srv.chat_requests) < n and deadline:
        deadline -= 1
        time.sleep(0.05)
    assert len(srv.chat_requests) >= n, "the model was never called"


def test_interrupt_request_cancels_a_delayed_reply(kernel: Any, notebook: Path,
                                                   srv: OpenAIServer) -> None:
    """interrupt_request on the control channel (interrupt_mode "message") while the server
    has not sent a byte yet: the call is cancelled, nothing is displayed, the kernel lives."""
    _km, kc = kernel
    notebook.write_text(CONVERSATION)
    srv.script(Reply.slow(15, "too late"), "Back again.")
    msg_id = kc.execute("Anyone?", stop_on_error=True)
    wait_for_request(srv)
    interrupt = kc.session.msg("interrupt_request", {})
    kc.control_channel.send(interrupt)
    assert kc.get_control_msg(timeout=TIMEOUT)["content"]["status"] == "ok"
    reply, iopub = collect(kc, msg_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert outputs(iopub) == []
    reply, iopub = execute(kc, "Again?", "q2")
    assert reply["content"]["status"] == "ok"
    assert outputs(iopub)[-1]["content"]["data"]["text/markdown"] == "Back again."


def children(km: KernelManager) -> dict[int, str]:
    """The kernel's child processes and their states (from /proc)."""
    parent = km.provisioner.process.pid  # type: ignore[union-attr]
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                found[int(entry.name)] = fields[0]
    return found


def test_interrupt_stops_a_code_cell_in_the_sandbox(kernel: Any, notebook: Path,
                                                    srv: OpenAIServer) -> None:
    km, kc = kernel
    notebook.write_text("# %% Spin[^c2]\n[^c2]: [code]\n\n```python\nx = 1\n```\n")
    msg_id = send_execute(kc, "print('start')\nwhile True:\n    x = 1\n", "c2")
    time.sleep(1.0)  # let the sandbox start the loop (no timing is asserted)
    spinning = {pid for pid, state in children(km).items() if state == "R"}
    km.interrupt_kernel()
    reply, _ = collect(kc, msg_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    for _ in range(100):  # the spinning worker is killed, not left running
        if not spinning & {p for p, st in children(km).items() if st not in ("Z", "X")}:
            break
        time.sleep(0.05)
    assert not spinning & {p for p, st in children(km).items() if st not in ("Z", "X")}
    reply, iopub = execute(kc, "print('alive')", "c2")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert [m["content"]["text"] for m in iopub if m["msg_type"] == "stream"] == ["alive\n"]


# A model that calls a tool, then answers (scripted ATTP replies, shared with other tests).
STEP = (TEST_DATA / "runtime" / "weather_step.toml").read_text()
ANSWER = (TEST_DATA / "runtime" / "weather_answer.toml").read_text()


def as_saved(iopub: list[dict]) -> list[dict]:
    """The cell's outputs as a front end keeps them: displays updated in place by id."""
    outs: list[dict] = []
    where: dict[str, int] = {}
    for m in iopub:
        c, t = m["content"], m["msg_type"]
        did = (c.get("transient") or {}).get("display_id")
        if t == "display_data":
            if did:
                where[did] = len(outs)
            outs.append({"output_type": t, "data": c["data"], "metadata": c["metadata"]})
        elif t == "update_display_data":
            outs[where[did]] = {"output_type": "display_data", "data": c["data"],
                                "metadata": c["metadata"]}
        elif t == "stream":
            outs.append({"output_type": "stream", "name": c["name"], "text": c["text"]})
        elif t == "error":
            outs.append({"output_type": "error", **c})
    return outs


def test_tool_steps_are_outputs_the_file_format_keeps(kernel: Any, notebook: Path,
                                                      srv: OpenAIServer) -> None:
    _km, kc = kernel
    toolbox = notebook.parent / "toolbox"
    toolbox.mkdir(exist_ok=True)
    shutil.copy(TEST_DATA / "toolbox" / "weather.py", toolbox)
    trust_for_kernel(notebook.parent)
    notebook.write_text("---\nagents:\n  helper:\n    models: [test-model]\n"
                        "    tools: [weather]\n---\n\n# %% Ask[^w1]\n[^w1]: [markdown]\n\nhi\n")
    srv.script(STEP, ANSWER)
    try:
        reply, iopub = execute(kc, "Weather in Paris?", "w1")
    finally:  # the module's other tests run code cells in the sandbox: untrusted
        trust_for_kernel(notebook.parent, trusted=False)
    assert reply["content"]["status"] == "ok", reply["content"]
    outs = as_saved(iopub)
    assert [fmt.output_kind(o) for o in outs] == ["reply", "tool_call", "tool_result", "reply"]
    assert fmt.output_attrs(outs[0])["reasoning"] == 1
    assert fmt.output_text(outs[-1]) == "It is **18.5 °C** in Paris."
    # saved by the front end, read back: the same outputs, ids CELL.NONCE and CELL.NONCE.n
    nb = fmt.read(notebook)
    cell = next(c for c in nb["cells"] if c.get("id") == "w1")
    cell["source"], cell["outputs"] = "Weather in Paris?", outs
    notebook.write_text(fmt.writes(nb, path=str(notebook)))
    (back,) = [c for c in fmt.read(notebook)["cells"] if c.get("id") == "w1"]
    assert [fmt.output_kind(o) for o in back["outputs"]] == [
        "reply", "tool_call", "tool_result", "reply"]
    call_id = fmt.output_id(back["outputs"][1])
    assert call_id and call_id.startswith("w1.")
    assert fmt.output_id(back["outputs"][2]) == call_id + ".1"
    assert fmt.output_text(back["outputs"][3]) == "It is **18.5 °C** in Paris."


def test_an_interrupted_tool_call_stays_on_record_marked_and_the_model_hears_of_it(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """Stop pressed while the sandbox runs an agent's tool call: the step was shown, and the
    call and its result used to vanish (the file read as if the step had nothing after it,
    and the next message sent the model a call with no result)."""
    from jupyter_percent_agent.attp import ToolCall, format_reply

    km, kc = kernel
    notebook.write_text("---\nagents:\n  helper:\n    models: [test-model]\n"
                        "    tools: ['*']\n---\n\n# %% Ask[^s1]\n[^s1]: [markdown]\n\nSpin.\n")
    spin = ToolCall(thought="Count for ever.", target="spin",
                    code="x = 0\nwhile True:\n    x += 1\n")
    srv.script(format_reply(spin), "Stopped, I see.")
    trust_for_kernel(notebook.parent)  # a toolbox/ another test left there is allowed
    try:
        msg_id = send_execute(kc, "Spin.", "s1")
        for _ in range(200):  # the step is shown, the sandbox runs it (no timing asserted)
            if srv.pending == 1 and any(state == "R" for state in children(km).values()):
                break
            time.sleep(0.05)
        time.sleep(0.5)
        km.interrupt_kernel()
        reply, iopub = collect(kc, msg_id)
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        outs = as_saved(iopub)
        assert [fmt.output_kind(o) for o in outs] == ["reply", "tool_call", "tool_result"]
        assert fmt.output_attrs(outs[2]).get("interrupted") is True
        assert "x += 1" in fmt.output_text(outs[1])
        reply, _ = execute(kc, "Did it finish?", "s2")
    finally:  # the module's other tests run code cells in the sandbox: untrusted
        trust_for_kernel(notebook.parent, trusted=False)
    assert reply["content"]["status"] == "ok", reply["content"]
    sent = " ".join(str(m["content"]) for m in srv.last_messages)
    assert "interrupted" in sent


def test_rerunning_an_earlier_unsaved_message_keeps_it_before_the_later_ones() -> None:
    """A new chat, never saved: run two messages, then edit and re-run the first. Its history
    is what comes before it (nothing), not the second message."""
    from jupyter_percent_agent.kernel._notebook import KernelMemory, read_notebook

    session = KernelMemory()
    session.record("c1", "Hello", [fmt.reply_output("Hi!", agent="a", out_id="c1.1")])
    session.record("c2", "Second question", [fmt.reply_output("Sure.", agent="a",
                                                                out_id="c2.1")])
    nb, _, _ = session.prepare(read_notebook(None), "c1", "Hello (edited)")
    assert [c["id"] for c in nb["cells"]] == ["c1", "c2"]
    assert fmt.message_text(nb["cells"][0]) == "Hello (edited)"
    assert nb["cells"][0]["outputs"] == []
    session.record("c1", "Hello (edited)", [fmt.reply_output("Hi again", agent="a",
                                                               out_id="c1.1")])
    nb, _, _ = session.prepare(read_notebook(None), "c2", "Second question")
    assert [c["id"] for c in nb["cells"]] == ["c1", "c2"]   # the re-run kept its place
    assert fmt.output_text(nb["cells"][0]["outputs"][0]) == "Hi again"


def test_a_rerun_task_cell_keeps_the_output_that_names_its_interrupted_transcript() -> None:
    """Interrupt a [task] cell in the kernel, run it again: the run starts from the outputs
    the kernel gave it (the last names the interrupted transcript), so the workflow is
    continued, as from the file; a message cell starts empty."""
    from jupyter_percent_agent.kernel._notebook import KernelMemory

    nb = fmt.reads('## %% Run it[^t1]\n[^t1]: [task] task_id="w/main"\n\n{"topic": "x"}\n',
                   path="t.msg.md")
    interrupted = fmt.reply_output("```json\n{}\n```", agent="task", out_id="t1.3", attrs={
        "task_status": "interrupted", "transcript": "runs/w-1.msg.md"})
    session = KernelMemory()
    session.record("t1", '{"topic": "x"}', [interrupted])
    session.record("m1", "Hello", [fmt.reply_output("Hi", agent="a", out_id="m1.1")])
    nb, _, _ = session.prepare(nb, "t1", '{"topic": "x"}')
    (cell,) = [c for c in nb["cells"] if c["id"] == "t1"]
    assert fmt.cell_kind(cell) == "task"
    assert fmt.output_attrs(cell["outputs"][-1])["transcript"] == "runs/w-1.msg.md"
    nb, _, _ = session.prepare(nb, "m1", "Hello")
    assert next(c for c in nb["cells"] if c["id"] == "m1")["outputs"] == []


def test_session_lays_unsaved_runs_over_the_file(tmp_path: Path) -> None:
    """The kernel's view of the notebook (no kernel process needed)."""
    from jupyter_percent_agent.kernel._notebook import KernelMemory, read_notebook

    path = tmp_path / "s.msg.md"
    path.write_text("# %% A[^a]\n[^a]: [markdown]\n\none\n\n# %% B[^b]\n[^b]: [markdown]\n\n"
                    "two\n")
    reply = fmt.reply_output("ONE", agent="x", out_id="a.1")
    session = KernelMemory()
    session.record("a", "one", [reply])          # ran after the last save
    session.record("b", "two", [fmt.reply_output("TWO", agent="x", out_id="b.1")])
    session.record("n1", "fresh", [])             # a new cell, never saved
    nb, nb_id, run_id = session.prepare(read_notebook(path), "b", "two, edited")
    cells = {c["id"]: c for c in nb["cells"]}
    assert fmt.output_text(cells["a"]["outputs"][0]) == "ONE"   # unsaved output laid over
    assert cells["b"]["source"] == "two, edited" and cells["b"]["outputs"] == []
    assert fmt.message_text(cells["n1"]) == "fresh"
    assert (nb_id, run_id) == ("b", "b")

    path.write_text("# %% A[^a]\n[^a]: [markdown]\n\none, edited and saved\n")
    nb, _, _ = session.prepare(read_notebook(path), None, "new text")
    a = next(c for c in nb["cells"] if c["id"] == "a")
    assert a["outputs"] == []                     # the saved edit wins over the old run

    # a front end whose cell ids are not nbformat ids (VS Code sends a URI): found by text
    _, nb_id, _ = KernelMemory().prepare(read_notebook(path), "vscode-notebook-cell:/s.msg.md#W0",
                                    "one, edited and saved")
    assert nb_id == "a"

    ipynb = tmp_path / "n.ipynb"
    ipynb.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                 "cells": [{"cell_type": "code", "id": "x", "metadata": {},
                                            "source": "hi", "outputs": [],
                                            "execution_count": None}]}))
    nb, nb_id, _ = KernelMemory().prepare(read_notebook(ipynb), "x", "hello")
    assert nb_id == "x" and nb["cells"][0]["source"] == "hello"


def test_code_cell_error_shows_stderr_only(kernel: Any, notebook: Path,
                                           srv: OpenAIServer) -> None:
    _km, kc = kernel
    notebook.write_text("# %% Boom[^c3]\n[^c3]: [code]\n\n```python\nx = 1\n```\n")
    reply, iopub = execute(kc, "print('a')\n1 / 0\n", "c3")
    assert reply["content"]["status"] == "error"
    assert "\n" not in reply["content"]["evalue"]
    kinds = [m["msg_type"] for m in outputs(iopub)]
    assert "error" not in kinds and "stream" in kinds
    stderr = [m["content"]["text"] for m in iopub
              if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]
    assert stderr and "ZeroDivisionError" in stderr[0]


@pytest.mark.slow
def test_installed_server_session_runs_and_saves(tmp_path: Path, server: OpenAIServer,
                                                 jupyter_server) -> None:
    """As JupyterLab does it, with what ``pip install`` put in place (server config and the
    percent-agent kernelspec): open the file through the contents API, start a session,
    run a cell by its id, save the outputs through the contents API."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "chat.msg.md").write_text(CONVERSATION)
    jupyter = jupyter_server(root, env=kernel_env(server))
    server.reset()
    server.script("Lyon.")
    try:
        model = jupyter.first("GET", "/api/contents/chat.msg.md")
        nb = model["content"]
        assert nb["metadata"]["kernelspec"]["name"] == KERNEL_NAME
        cell = next(c for c in nb["cells"] if c["id"] == "q2")
        kc = jupyter.start_session("chat.msg.md", KERNEL_NAME, timeout=TIMEOUT)
        reply, iopub = execute(kc, "Second city, unsaved?", "q2")
        assert reply["content"]["status"] == "ok", reply["content"]
        assert server.last_messages[-3:] == [
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": "Second city, unsaved?"}]
        cell["source"], cell["outputs"] = "Second city, unsaved?", as_saved(iopub)
        jupyter.api("PUT", "/api/contents/chat.msg.md",
                    {"type": "notebook", "format": "json", "content": nb})
        text = (root / "chat.msg.md").read_text()
        assert "Second city, unsaved?\n\n## %%%[^q2.1]\n[^q2.1]: [writer] time=" in text
        assert text.rstrip().endswith("Lyon.")
        assert "127.0.0.1" not in text
    finally:
        server.reset()


def test_a_jupyterlab_uuid_finds_the_short_id_a_save_gave_its_cell(tmp_path: Path) -> None:
    from jupyter_percent_agent.kernel._notebook import KernelMemory, read_notebook

    path = tmp_path / "s.msg.md"
    path.write_text("# %% one[^dd48e6a2]\n[^dd48e6a2]: [markdown]\n\nHello\n\n"
                    "# %% two[^x1]\n[^x1]: [markdown]\n\nLater\n")
    uuid = "dd48e6a2-30aa-4cea-a532-396601ee4b78"
    nb, nb_id, footnote = KernelMemory().prepare(read_notebook(path), uuid, "Hello, edited")
    assert nb_id == footnote == "dd48e6a2"
    assert [c["source"] for c in nb["cells"]] == ["Hello, edited", "Later"]  # not appended
    # an unsaved new cell gets the short id a save would give it
    _, nb_id, _ = KernelMemory().prepare(read_notebook(path),
                                         "0b6ef3bc-7c1f-4d9f-a4b2-2a3f1c0e9d11", "New")
    assert nb_id == "0b6ef3bc"


def test_the_live_state_makes_the_file_the_notebook_on_screen(tmp_path: Path) -> None:
    from jupyter_percent_agent.kernel._notebook import lay_live_state, read_notebook

    path = tmp_path / "l.msg.md"
    path.write_text('# %% a[^a]\n[^a]: [markdown] history="exclude"\n\nA\n\n'
                    '# %% b[^b]\n[^b]: [markdown]\n\nB\n\n# %% c[^c]\n[^c]: [markdown]\n\nC\n')
    state = {"version": 1, "cells": [
        {"id": "c", "cell_type": "code"},                              # moved first
        {"id": "a", "cell_type": "code", "agent": "critic"},           # history unset
        {"id": "0b6ef3bc-7c1f-4d9f-a4b2-2a3f1c0e9d11", "cell_type": "code",
         "source": "New", "unsaved": True},                            # new, unsaved
    ]}                                                                 # b deleted
    nb = lay_live_state(read_notebook(path), state)
    assert [fmt.cell_id(c) for c in nb["cells"]] == ["c", "a", "0b6ef3bc"]
    assert [fmt.message_text(c) for c in nb["cells"]] == ["C", "A", "New"]
    attrs = fmt.cell_attrs(nb["cells"][1])
    assert attrs.get("agent") == "critic" and "history" not in attrs
    # a state the kernel does not understand leaves the file as it is
    assert len(lay_live_state(read_notebook(path), {"version": 99})["cells"]) == 3


def test_outputs_the_live_state_sends_are_laid_over_the_file(tmp_path: Path) -> None:
    """After a kernel restart the labextension sends the unsaved outputs the old kernel made
    (the new one never saw them): they stand in for the file's; anything not an output is
    left out."""
    from jupyter_percent_agent.kernel._notebook import lay_live_state, read_notebook

    path = tmp_path / "o.msg.md"
    path.write_text("# %% a[^a]\n[^a]: [markdown]\n\nA\n\n# %% b[^b]\n[^b]: [markdown]\n\nB\n")
    reply = fmt.reply_output("Reply to A.", agent="writer", out_id="a.1")
    state = {"version": 1, "cells": [
        {"id": "a", "cell_type": "code", "outputs": [reply, "junk", {"no": "type"}]},
        {"id": "b", "cell_type": "code"},
    ]}
    nb = lay_live_state(read_notebook(path), state)
    assert [fmt.output_text(o) for o in nb["cells"][0]["outputs"]] == ["Reply to A."]
    assert nb["cells"][1]["outputs"] == []


def _maps(km: KernelManager) -> str:
    """The files mapped into the kernel process (its extension modules among them)."""
    pid = km.provisioner.process.pid  # type: ignore[union-attr]
    return Path(f"/proc/{pid}/maps").read_text()


def test_kernels_share_the_warm_helper_for_calls_that_need_litellm(
        spec_dir: Path, srv: OpenAIServer, tmp_path: Path) -> None:
    """With the helper on, a kernel whose calls need litellm starts the user's warm helper
    and hands its calls to it: two kernels of two notebooks share one helper, and neither
    loads litellm (its pydantic and tiktoken extension modules are never mapped)."""
    tmp = Path(tempfile.mkdtemp(prefix="pa-"))  # short: a socket's path has 107 bytes at most
    started = []
    try:
        for name in ("one", "two"):
            path = tmp_path / f"{name}.msg.md"
            path.write_text("")
            env = kernel_env(srv, JPY_SESSION_NAME=str(path), PERCENT_AGENT_WARM="1",
                             PERCENT_AGENT_DIRECT="0", PERCENT_AGENT_WARM_IDLE="20",
                             TMPDIR=str(tmp))
            env.pop("XDG_RUNTIME_DIR", None)
            started.append(start(spec_dir, env, cwd=str(tmp_path)))
        for n, (_, kc) in enumerate(started):
            srv.script(f"answer {n}")
            reply, iopub = execute(kc, f"Question {n}?")
            assert reply["content"]["status"] == "ok", reply["content"]
            assert any(f"answer {n}" in json.dumps(m["content"]) for m in iopub)
        sockets = list(tmp.glob("percent-agent-*/litellm-*.sock"))
        assert len(sockets) == 1, sockets
        for km, _ in started:
            maps = _maps(km)
            assert "pydantic_core" not in maps and "tiktoken" not in maps
    finally:
        for km, kc in started:
            stop(km, kc)  # the helper exits by itself after PERCENT_AGENT_WARM_IDLE
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_notebook_that_is_not_json_is_one_line_naming_it(tmp_path: Path) -> None:
    """An .ipynb served by the agent kernel that is not JSON (cut short on disk) ended each
    cell with "JSONDecodeError: Expecting ..." naming no file, and a traceback in the log."""
    from jupyter_percent_agent.kernel._notebook import read_notebook

    path = tmp_path / "cut.ipynb"
    path.write_text('{"cells": [')
    with pytest.raises(fmt.FormatError) as bad:
        read_notebook(path)
    assert str(bad.value).startswith(f"{path}:1: not a notebook (not JSON: ")
    path.write_text("[1, 2]")
    with pytest.raises(fmt.FormatError, match="not a notebook"):
        read_notebook(path)



def test_history_auto_in_the_kernel_sends_the_early_cells_the_question_needs(
        kernel: Any, notebook: Path, srv: OpenAIServer) -> None:
    """JupyterLab runs a message of a 100-message history: auto file: the request is bounded,
    holds the early cells the question needs, and the reply records them."""
    from jupyter_percent_agent.runtime import history as hist
    from jupyter_percent_agent.testing.long_conversations import conversation

    _km, kc = kernel
    conv = conversation(21, 100)
    notebook.write_text(conv.text + f"## %% Question[^qz]\n\n[^qz]: [markdown]\n\n"
                        f"{conv.question}\n")
    cells = hist.conversation_cells(fmt.read(notebook))
    srv.script("ok")
    reply, iopub = execute(kc, conv.question, "qz")
    assert reply["content"]["status"] == "ok", reply["content"]
    sent = "\n".join(str(m["content"]) for m in srv.last_messages)
    whole = "\n".join(fmt.message_text(c) for c in cells[:100])
    assert len(sent) < 0.6 * len(whole + "".join(
        fmt.output_text(o) for c in cells[:100] for o in c["outputs"]))
    for cid in conv.needed:
        said = fmt.message_text(next(c for c in cells if fmt.cell_id(c) == cid))
        assert said in sent
    final = [m for m in outputs(iopub) if m["msg_type"] in ("display_data",
                                                            "update_display_data")][-1]
    attrs = fmt.output_attrs({"output_type": "display_data", "data": final["content"]["data"],
                              "metadata": final["content"]["metadata"]})
    assert set(conv.needed) <= set(attrs["history_auto"])
