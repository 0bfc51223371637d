"""``input()`` and ``getpass()`` in a ``[code]`` cell: the Agent kernel forwards the code
kernel's input request to its own front end (Jupyter's stdin channel, ``password`` kept) and
the answer back; ``tce exec`` reads the terminal, and with no terminal fails in one line.
Real kernels over the Jupyter protocol, the real ``tce`` on a pseudo-terminal."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing.environment import run_tce, tce_on_terminal
from jupyter_percent_agent.testing.kernels import (
    TIMEOUT,
    collect,
    kernel_env,
    outputs,
    send_execute,
    start,
    stop,
    trust_for_kernel,
)
from jupyter_percent_agent.testing.openai_server import OpenAIServer

ASKING = (
    "import getpass\nname = input('Your name? ')\nsecret = getpass.getpass('Token? ')\n"
    "print('hello', name, len(secret))"
)
FILE = f"# %% Ask[^q]\n[^q]: [code]\n\n```python\n{ASKING}\n```\n"


@pytest.fixture
def agent_kernel(spec_dir: Path, server: OpenAIServer, tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    notebook = tmp_path / "ask.msg.md"
    notebook.write_text(FILE)
    trust_for_kernel(tmp_path)
    km, kc = start(spec_dir, kernel_env(server, JPY_SESSION_NAME=str(notebook)), cwd=str(tmp_path))
    yield kc, km
    stop(km, kc)


def test_the_agent_kernel_forwards_input_and_getpass_to_its_front_end(
    agent_kernel: tuple[Any, Any],
) -> None:
    kc, _ = agent_kernel
    msg_id = send_execute(kc, ASKING, "q", allow_stdin=True)
    asked = []
    for answer in ("Ada", "hunter2"):
        request = kc.get_stdin_msg(timeout=TIMEOUT)
        assert request["msg_type"] == "input_request"
        assert request["parent_header"]["msg_id"] == msg_id  # the front end's own request
        asked.append((request["content"]["prompt"], request["content"]["password"]))
        kc.input(answer)
    assert asked == [("Your name? ", False), ("Token? ", True)]
    reply, iopub = collect(kc, msg_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = "".join(m["content"].get("text", "") for m in outputs(iopub))
    assert "hello Ada 7" in shown and "hunter2" not in shown


def test_interrupting_a_cell_that_waits_for_input_stops_it_and_the_next_asks_afresh(
    agent_kernel: tuple[Any, Any],
) -> None:
    kc, km = agent_kernel
    msg_id = send_execute(kc, ASKING, "q", allow_stdin=True)
    assert kc.get_stdin_msg(timeout=TIMEOUT)["parent_header"]["msg_id"] == msg_id
    km.interrupt_kernel()  # the user's stop button while the box is open
    reply, _ = collect(kc, msg_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    kc.input("too late")  # typed into the stale box: not taken for the next cell's answer
    msg_id = send_execute(kc, ASKING, "q", allow_stdin=True)
    for answer in ("Bo", "xyz"):
        assert kc.get_stdin_msg(timeout=TIMEOUT)["parent_header"]["msg_id"] == msg_id
        kc.input(answer)
    reply, iopub = collect(kc, msg_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "hello Bo 3" in "".join(m["content"].get("text", "") for m in outputs(iopub))


def test_a_front_end_without_stdin_gets_jupyters_own_error(agent_kernel: tuple[Any, Any]) -> None:
    kc, _ = agent_kernel
    msg_id = send_execute(kc, ASKING, "q", allow_stdin=False)
    reply, iopub = collect(kc, msg_id)
    assert reply["content"]["status"] == "error"
    errors = [m["content"]["ename"] for m in outputs(iopub) if m["msg_type"] == "error"]
    assert errors == ["StdinNotImplementedError"]


def test_tce_exec_reads_input_from_the_terminal_and_getpass_does_not_echo(
    tmp_path: Path, env: dict[str, str], trusted: Callable[[Path], Path]
) -> None:
    trusted(tmp_path)
    path = tmp_path / "ask.msg.md"
    path.write_text(FILE)
    typed: list[str] = []

    def answer(got: bytes, terminal: int, _proc: Any) -> bool:
        if b"Your name? " in got and not typed:
            typed.append("name")
            os.write(terminal, b"Ada\n")
        elif b"Token? " in got and len(typed) == 1:
            typed.append("token")
            os.write(terminal, b"hunter2\n")
        return len(typed) == 2

    code, shown, answered = tce_on_terminal("exec", str(path), env=env, answer=answer, timeout=120)
    assert answered and code == 0, shown
    assert "Ada" in shown and "hunter2" not in shown  # the name echoes, the token does not
    (cell,) = [c for c in fmt.read(path)["cells"] if fmt.document_part(c) is None]
    assert "hello Ada 7" in "".join(fmt.output_text(o) for o in cell["outputs"])


def test_tce_exec_with_no_terminal_fails_the_cell_in_one_line(
    tmp_path: Path, env: dict[str, str], trusted: Callable[[Path], Path]
) -> None:
    trusted(tmp_path)
    path = tmp_path / "ask.msg.md"
    path.write_text(FILE)
    done = run_tce("exec", str(path), env=env, input="")
    assert done.returncode == 4, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("tce:")]
    assert line.startswith("tce: cell 1: ") and "input()" in line and "no terminal" in line
