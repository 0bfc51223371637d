"""An external agent over ACP: the first chunk of its reply through the Agent kernel and
through ``tce chat``, against a bare client on the official SDK driving the same agent; then
50 turns in one kernel.

The agent is the scripted ACP agent on the official SDK (``testing/scripted_acp_agent.py``),
answering every prompt with two message chunks at once, so what is timed is the client side.
Timed, medians of ``ROUNDS`` interleaved rounds:

- **next message** (the agent running, its session open): the Agent kernel, warm, as
  JupyterLab runs a cell (the cell id in the request), from sending the cell to the first
  ``display_data`` (the reply's first chunk on screen); the peer, a bare SDK client in this
  process (``acp.spawn_agent_process``), from sending ``session/prompt`` to the first
  ``agent_message_chunk``;
- **a new process** (nothing running yet): ``tce chat FILE -m ...`` from its start to the first
  chunk on its stdout (it starts the agent, initialises it, opens a session); the peer, a
  bare SDK client in a new Python process doing the same and printing the chunk.

Shown: each median, the difference from its peer (target: within 50 ms) and the ratio. Then
50 turns in one Agent kernel (one agent process, its session continued): seconds per turn and
the resident memory of the kernel and of the agent, the first ten turns against the last ten
(target: no growth); beside it, as the peer, the same 50 turns to a model agent (the local
server) in a kernel of its own: every turn reads the conversation so far, whoever answers.

Run with ``.venv/bin/python -m benchmarks acp``. Nothing leaves 127.0.0.1; no model is called.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks._kernels import execute_request, first_message_seconds
from benchmarks._timing import print_table
from benchmarks.bench_kernel import agent_kernelspec, kernel_env, running_kernel
from jupyter_percent_agent.kernel import KERNEL_NAME
from jupyter_percent_agent.testing.openai_server import OpenAIServer

ROUNDS = 7
TURNS = 50
TIMEOUT = 120
FIRST = "First chunk."
SCRIPT = {"name": "bench", "prompts": [[{"say": FIRST}, {"say": " And the rest."}]]}
AGENT = [sys.executable, "-m", "jupyter_percent_agent.testing.scripted_acp_agent"]
CHAT = "---\nagents:\n  coder: {acp: bench}\ndefault_agent: coder\n---\n"

BARE_PROCESS = """\
import asyncio, sys
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities

class Client:
    async def session_update(self, session_id, update, **kw):
        if getattr(update, "session_update", "") == "agent_message_chunk":
            sys.stdout.write(update.content.text)
            sys.stdout.flush()
    def on_connect(self, conn):
        pass

async def main():
    async with spawn_agent_process(Client(), *sys.argv[1:]) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=
            ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True,
                                                         write_text_file=True), terminal=True))
        session = await conn.new_session(cwd=".", mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("Hello?")])

asyncio.run(main())
"""


class _FirstChunk:
    """The bare client's side: when the first message chunk of the current prompt came."""

    def __init__(self) -> None:
        self.at: float | None = None

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", "") == "agent_message_chunk" and self.at is None:
            self.at = time.perf_counter()

    def on_connect(self, conn: Any) -> None:
        pass


async def _bare_warm(script: Path, rounds: int) -> list[float]:
    """Seconds from ``session/prompt`` to the first chunk, the agent running, ``rounds`` times
    (after one prompt to warm it)."""
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
    from acp.schema import ClientCapabilities, FileSystemCapabilities

    client = _FirstChunk()
    async with spawn_agent_process(client, *AGENT, str(script)) as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=
                              ClientCapabilities(fs=FileSystemCapabilities(
                                  read_text_file=True, write_text_file=True), terminal=True))
        session = await conn.new_session(cwd=str(script.parent), mcp_servers=[])
        samples = []
        for n in range(rounds + 1):
            client.at = None
            start = time.perf_counter()
            await conn.prompt(session_id=session.session_id, prompt=[text_block("Hello?")])
            assert client.at is not None, "no chunk came"
            if n:
                samples.append(client.at - start)
        return samples


def _first_output(command: list[str], env: dict[str, str], cwd: Path) -> float:
    """Seconds from starting ``command`` to ``FIRST`` on its stdout; it must then exit 0."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None
    seen, took = b"", None
    while took is None:
        piece = os.read(proc.stdout.fileno(), 4096)
        if not piece:
            break
        seen += piece
        if FIRST.encode() in seen:
            took = time.perf_counter() - start
    _, err = proc.communicate(timeout=TIMEOUT)
    if took is None or proc.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({proc.returncode}): {err.decode()[-300:]}")
    return took


def _turn(kc: Any, code: str, cell_id: str) -> float:
    """Seconds from sending a cell as JupyterLab does (its id in the request: the cell of
    the notebook the kernel serves) to the kernel going idle; an error fails."""
    msg = execute_request(kc, code, {"cellId": cell_id})
    start = time.perf_counter()
    kc.shell_channel.send(msg)
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        if m["msg_type"] == "error":
            raise RuntimeError(f"the cell failed: {m['content']['evalue']}")
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return time.perf_counter() - start


def _rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def _config(base: Path, script: Path) -> tuple[Path, Path]:
    """A user config that has the agent as ``bench`` and trusts the work folder."""
    config, work = base / "config", base / "work"
    work.mkdir(parents=True)
    env = {**os.environ, "PERCENT_AGENT_CONFIG_DIR": str(config)}
    tce = str(Path(sys.executable).parent / "tce")
    subprocess.run([tce, "acp", "add", "bench", "--", *AGENT, str(script)], env=env,
                   check=True, capture_output=True)
    subprocess.run([tce, "trust", str(work)], env=env, check=True, capture_output=True)
    return config, work


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-acp-"))
    script = base / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    config, work = _config(base, script)
    server = OpenAIServer().start()  # the kernels' model, never called: the agent answers
    kernels, ksm = agent_kernelspec("bench-acp-")
    notebook = work / "k.msg.md"
    notebook.write_text(CHAT, encoding="utf-8")
    env = kernel_env(server, PERCENT_AGENT_CONFIG_DIR=str(config))
    warm: dict[str, list[float]] = {"Agent kernel": [], "bare SDK client": []}
    cold: dict[str, list[float]] = {"tce chat": [], "bare SDK client, new process": []}
    turns: list[float] = []
    kernel_mb: list[float] = []
    agent_mb: list[float] = []
    model_turns: list[float] = []
    try:
        with running_kernel(KERNEL_NAME, {**env, "JPY_SESSION_NAME": str(notebook)},
                            ksm) as (km, kc):
            _turn(kc, "Warm up.", "warm")  # the agent started, its session open
            for n in range(ROUNDS):
                msg = execute_request(kc, "Hello?", {"cellId": f"w{n}"})
                warm["Agent kernel"].append(first_message_seconds(
                    kc, msg, {"display_data"}, TIMEOUT))
                warm["bare SDK client"] += asyncio.run(_bare_warm(script, 1))
                chat = work / f"c{n}.msg.md"
                chat.write_text(CHAT, encoding="utf-8")
                cold["tce chat"].append(_first_output(
                    [str(Path(sys.executable).parent / "tce"), "chat", str(chat), "-m",
                     "Hello?"], env, work))
                cold["bare SDK client, new process"].append(_first_output(
                    [sys.executable, "-c", BARE_PROCESS, *AGENT, str(script)], env, work))
            kernel = psutil.Process(km.provisioner.pid)  # type: ignore[union-attr]
            (agent,) = [p for p in kernel.children(recursive=True)
                        if str(script) in " ".join(p.cmdline())]
            for n in range(TURNS):
                turns.append(_turn(kc, f"Turn {n}?", f"t{n}"))
                kernel_mb.append(_rss_mb(kernel.pid))
                agent_mb.append(_rss_mb(agent.pid))
        bare_turns = asyncio.run(_bare_warm(script, TURNS))
        # the peer: the same turns to a model agent (the local server), in a kernel of its own
        model_notebook = work / "m.msg.md"
        model_notebook.write_text("", encoding="utf-8")
        with running_kernel(KERNEL_NAME, {**env, "JPY_SESSION_NAME": str(model_notebook)},
                            ksm) as (_, kc):
            for n in range(TURNS):
                model_turns.append(_turn(kc, f"Turn {n}?", f"t{n}"))
    finally:
        server.stop()
        shutil.rmtree(kernels.parent, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
    rows = []
    for group, peer in ((warm, "bare SDK client"), (cold, "bare SDK client, new process")):
        base_ms = statistics.median(group[peer]) * 1000
        for name, samples in group.items():
            ms = statistics.median(samples) * 1000
            rows.append([name, ms, ms - base_ms, ms / base_ms])
    print_table(f"First chunk of an ACP reply, ms, medians of {ROUNDS} rounds (first two rows: "
                "the agent running; last two: a new process)", rows,
                ["contender", "ms", "ms over the bare client", "x bare client"])
    first, last = slice(0, 10), slice(TURNS - 10, TURNS)
    print_table(f"{TURNS} turns in one Agent kernel, one agent process: turns 1-10 against "
                f"{TURNS - 9}-{TURNS}", [
                    ["seconds per turn (median)", statistics.median(turns[first]),
                     statistics.median(turns[last]),
                     statistics.median(turns[last]) / statistics.median(turns[first])],
                    ["peer: the bare SDK client's prompt to the agent (to first chunk)",
                     statistics.median(bare_turns[first]), statistics.median(bare_turns[last]),
                     statistics.median(bare_turns[last]) / statistics.median(bare_turns[first])],
                    ["peer: a model agent's turn, same kernel (median)",
                     statistics.median(model_turns[first]), statistics.median(model_turns[last]),
                     statistics.median(model_turns[last]) / statistics.median(model_turns[first])],
                    ["kernel RSS, MB (after)", kernel_mb[9], kernel_mb[-1],
                     kernel_mb[-1] / kernel_mb[9]],
                    ["agent RSS, MB (after)", agent_mb[9], agent_mb[-1],
                     agent_mb[-1] / agent_mb[9]]],
                ["", "turns 1-10", f"turns {TURNS - 9}-{TURNS}", "ratio"])


if __name__ == "__main__":
    main()
