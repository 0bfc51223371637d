"""The agent kernel runs ``[code]`` cells of a trusted folder in a real kernel of their
language (the user's ``python3`` kernelspec), kept for the session and stopped with it."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_percent_agent.testing.kernels import (
    collect,
    execute,
    execute_live,
    kernel_env,
    outputs,
    send_execute,
    start,
    stop,
    told,
    trust_for_kernel,
)
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.helpers.images import PNG
from tests.paths import TEST_DATA


@pytest.fixture(scope="module")
def trusted_kernel(
    spec_dir: Path,
    server: OpenAIServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Any, Any, Path]]:
    folder = tmp_path_factory.mktemp("trusted")
    notebook = folder / "work.msg.md"
    notebook.write_text(
        "# %% A[^a]\n[^a]: [code]\n\n```python\nx = 1\n```\n\n"
        "# %% B[^b]\n[^b]: [code]\n\n```python\nx\n```\n\n"
        "# %% C[^c]\n[^c]: [code]\n\n```python\nx\n```\n"
    )
    trust_for_kernel(folder)
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(notebook)), cwd=str(folder))
    yield km, kc, folder
    kc.stop_channels()
    km.shutdown_kernel()  # a shutdown request: the agent kernel stops its code kernel too


def test_code_cells_run_in_a_real_python_kernel_with_state_and_rich_output(
    trusted_kernel: tuple[Any, Any, Path],
) -> None:
    _km, kc, folder = trusted_kernel
    (folder / "numbers.txt").write_text("3 4 5\n")
    reply, _ = execute(
        kc, "import statistics\nnums = [int(n) for n in open('numbers.txt').read().split()]", "a"
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    code = (
        "import base64, sys\nfrom IPython.display import Image, display\n"
        "print(statistics.mean(nums))\nprint('note', file=sys.stderr)\n"
        f"display(Image(data=base64.b64decode({PNG!r})))\nsum(nums)"
    )
    reply, iopub = execute(kc, code, "b")
    assert reply["content"]["status"] == "ok", reply["content"]
    outs = outputs(iopub)
    kinds = [m["msg_type"] for m in outs]
    assert kinds == ["stream", "stream", "display_data", "execute_result"], kinds
    assert outs[0]["content"] == {"name": "stdout", "text": "4\n"}
    assert outs[1]["content"] == {"name": "stderr", "text": "note\n"}
    assert outs[2]["content"]["data"]["image/png"].replace("\n", "") == PNG
    assert outs[3]["content"]["data"]["text/plain"] == "12"


def test_a_code_cells_error_shows_its_whole_traceback(
    trusted_kernel: tuple[Any, Any, Path],
) -> None:
    _km, kc, _ = trusted_kernel
    reply, iopub = execute(kc, "def f():\n    return 1 / 0\nf()", "c")
    assert reply["content"]["status"] == "error"
    (error,) = [m["content"] for m in outputs(iopub) if m["msg_type"] == "error"]
    assert error["ename"] == "ZeroDivisionError"
    assert any("return 1 / 0" in line for line in error["traceback"])


def test_interrupt_reaches_the_code_kernel_and_state_survives(
    trusted_kernel: tuple[Any, Any, Path],
) -> None:
    km, kc, _ = trusted_kernel
    msg_id = send_execute(
        kc, "import time\nprint('spinning', flush=True)\nwhile True:\n    time.sleep(0.05)", "c")
    time.sleep(3)  # the code kernel is in the loop (no timing is asserted)
    km.interrupt_kernel()
    reply, iopub = collect(kc, msg_id)
    assert reply["content"]["status"] == "error"
    assert "KeyboardInterrupt" in [m["content"].get("ename") for m in outputs(iopub)]
    reply, iopub = execute(kc, "print(len(nums))", "c")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert [m["content"]["text"] for m in outputs(iopub)] == ["3\n"]


def test_a_proposal_is_told_to_the_labextension_on_its_comm(
    trusted_kernel: tuple[Any, Any, Path], server: OpenAIServer
) -> None:
    _km, kc, folder = trusted_kernel
    data = TEST_DATA
    (folder / "toolbox").mkdir(exist_ok=True)
    shutil.copy(data / "toolbox" / "weather.py", folder / "toolbox" / "weather.py")
    notebook = folder / "work.msg.md"
    before = notebook.read_text()
    notebook.write_text(
        "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [weather]\n---\n\n"
        "# %% Ask[^w1]\n[^w1]: [markdown]\n\nChart it.\n"
    )
    server.reset()
    server.script((data / "code" / "propose_answer.toml").read_text())
    try:
        reply, iopub = execute_live(kc, "Chart it.", "w1", {"cells": [
            {"id": "front-matter", "cell_type": "raw"}, {"id": "w1", "cell_type": "code"}]})
    finally:
        notebook.write_text(before)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert reply["content"]["payload"] == []  # JupyterLab's own reply handling: nothing
    (said,) = told(iopub)  # with the nonce of the run's live state
    assert said.keys() == {"nonce", "proposed"}
    entry = said["proposed"]
    assert entry["after"] == "w1" and entry["auto_run"] is False
    (cell,) = entry["cells"]
    assert cell["language"] == "python" and "csv.DictReader" in cell["code"]


def test_a_proposal_names_the_cell_id_the_front_end_sent_for_a_message_typed_in_it(
    trusted_kernel: tuple[Any, Any, Path], server: OpenAIServer
) -> None:
    """A message added in JupyterLab has a UUID id there (the file gets its short form on
    save): the labextension finds the message by the id it sent, so that is the one named."""
    _km, kc, folder = trusted_kernel
    data = TEST_DATA
    (folder / "toolbox").mkdir(exist_ok=True)
    shutil.copy(data / "toolbox" / "weather.py", folder / "toolbox" / "weather.py")
    notebook = folder / "work.msg.md"
    before = notebook.read_text()
    notebook.write_text(
        "---\nagents:\n  helper:\n    models: [test-model]\n    tools: [weather]\n---\n\n"
    )
    server.reset()
    server.script((data / "code" / "propose_answer.toml").read_text())
    uuid = "330eafa1-7ee1-40b4-8599-eccad51e0409"
    try:
        reply, iopub = execute_live(kc, "Chart it.", uuid, {"cells": [
            {"id": "front-matter", "cell_type": "raw"},
            {"id": uuid, "cell_type": "code", "source": "Chart it.", "unsaved": True}]})
    finally:
        notebook.write_text(before)
    assert reply["content"]["status"] == "ok", reply["content"]
    (said,) = told(iopub)
    assert said["proposed"]["after"] == uuid


def test_the_code_kernel_imports_the_users_modules_from_the_trusted_folder(
    trusted_kernel: tuple[Any, Any, Path],
) -> None:
    _km, kc, folder = trusted_kernel
    (folder / "helpers_of_mine.py").write_text("ANSWER = 42\n")
    reply, iopub = execute(kc, "import helpers_of_mine\nprint(helpers_of_mine.ANSWER)", "c")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert [m["content"]["text"] for m in outputs(iopub)] == ["42\n"]


def test_the_code_kernel_stops_with_the_agent_kernel(
    spec_dir: Path, server: OpenAIServer, tmp_path: Path
) -> None:
    """Shut down by the agent kernel itself (its sockets' folder is removed), not left for
    ipykernel's parent poller to notice."""
    notebook = tmp_path / "pid.msg.md"
    notebook.write_text("# %% Pid[^p]\n[^p]: [code]\n\n```python\nimport os\n```\n")
    trust_for_kernel(tmp_path)
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(notebook)), cwd=str(tmp_path))
    code = (
        "import os\nfrom ipykernel.kernelapp import IPKernelApp\n"
        "print(os.getpid(), IPKernelApp.instance().ip)"
    )
    try:
        reply, iopub = execute(kc, code, "p")
        assert reply["content"]["status"] == "ok", reply["content"]
        pid, ip = outputs(iopub)[0]["content"]["text"].split()
        sockets = Path(ip).parent
        assert sockets.name.startswith("tce-kernel-") and sockets.is_dir()
        kc.shutdown()  # as JupyterLab's "Shut Down Kernel" does
        for _ in range(400):
            if not sockets.exists() and not _running(int(pid)):
                break
            time.sleep(0.05)
        assert not sockets.exists() and not _running(int(pid))
    finally:
        stop(km, kc)
        trust_for_kernel(tmp_path, trusted=False)


def _running(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False
