"""The first reply in a fresh kernel: the Agent kernel against ipykernel calling litellm itself.

A user opens a notebook, takes a few seconds to type the first message, runs it. Timed: from
sending that cell to the kernel going idle with the whole reply. The peer is what one would do
without this project: a ``python3`` ipykernel cell that imports litellm and streams the same
completion. Also shown: the Agent kernel with its background import off
(``PERCENT_AGENT_PRELOAD=0``), the Agent kernel calling through litellm
(``PERCENT_AGENT_DIRECT=0``; by default a call to the OpenAI-compatible test server goes
straight to it), and a second reply (everything warm: a message's own work, target <= 1.2x
the peer's second cell).

Then, on a 1,000-cell message notebook (a warm kernel, as JupyterLab runs it: the cell id and
the live state of the notebook on screen in the request's metadata), the time from sending the
execute request to the first streamed output, against a bare litellm stream's first token
from the same server in this process (the peer), sending the same conversation (2,001 chat
messages: the model call itself costs the same either way). Target: at most 100 ms above the
peer. A one-message bare stream is shown for scale.

Run with ``.venv/bin/python -m benchmarks.bench_kernel``. Every call goes to the project's
local OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from benchmarks._kernels import execute_request, first_message_seconds, send_live_state
from benchmarks._timing import interleaved, print_table
from jupyter_percent_agent.kernel import KERNEL_NAME, kernelspec_dir
from jupyter_percent_agent.testing.openai_server import OpenAIServer

ROUNDS = 3
TYPING = 5.0  # seconds between the kernel being ready and the first cell
TIMEOUT = 120

PEER_CELL = """\
import litellm
litellm.suppress_debug_info = True
for chunk in litellm.completion(model="openai/test-model", api_base={url!r}, api_key="x",
                                messages=[{{"role": "user", "content": "Hello?"}}],
                                stream=True):
    print(chunk.choices[0].delta.content or "", end="")
"""


def kernel_env(server: OpenAIServer, **extra: str) -> dict[str, str]:
    """A kernel's environment: the local server as the model, no retries, no helper."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERCENT_AGENT_")}
    env.update({"PERCENT_AGENT_API_BASE": server.url, "PERCENT_AGENT_MODEL": "test-model",
                "PERCENT_AGENT_RETRIES": "0", "PERCENT_AGENT_WARM": "0",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    env.update(extra)
    return env


def run_cell(kc: Any, code: str) -> float:
    """Seconds from sending ``code`` to the kernel going idle after it."""
    start = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "error":
            raise RuntimeError(f"the cell failed: {msg['content']['evalue']}")
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return time.perf_counter() - start


@contextlib.contextmanager
def running_kernel(name: str, env: dict[str, str],
                   ksm: KernelSpecManager | None) -> Iterator[tuple[KernelManager, Any]]:
    """A kernel started as a front end starts it, ready; shut down on leaving."""
    km = KernelManager(kernel_name=name, **({"kernel_spec_manager": ksm} if ksm else {}))
    # A folder of its own: ipykernel (the peer) imports from its working folder, and a shared
    # /tmp may hold any stray module (an attr.py once broke the peer's litellm import).
    folder = tempfile.mkdtemp(prefix="bench-kernel-cwd-")
    km.start_kernel(env=env, cwd=folder)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        shutil.rmtree(folder, ignore_errors=True)


def _first_and_second(name: str, code: str, env: dict[str, str],
                      ksm: KernelSpecManager | None) -> tuple[float, float]:
    with running_kernel(name, env, ksm) as (_, kc):
        time.sleep(TYPING)
        return run_cell(kc, code), run_cell(kc, code)


CELLS = 1000
SAMPLES = 9


def big_notebook(path: Path, cells: int = CELLS) -> list[dict[str, Any]]:
    """A message file of ``cells`` messages with replies; returns the live state JupyterLab's
    labextension sends with an execute request of its last cell (ids and keys of every cell,
    the source of the last one, edited and not saved)."""
    parts = []
    for i in range(cells):
        parts.append(f"# %% Question {i}[^m{i}]\n[^m{i}]: [markdown]\n\n"
                     f"Message number {i}, about item {i}.\n\n"
                     f"## %%%[^m{i}.1]\n[^m{i}.1]: [default] model=\"test-model\"\n\n"
                     f"Item {i} is fine.\n\n")
    path.write_text("".join(parts))
    state = [{"id": f"m{i}", "cell_type": "code"} for i in range(cells)]
    state[-1].update(source="The last message, edited.", unsaved=True)
    return state


def _first_output(kc: Any, cell_id: str, state: list[dict[str, Any]]) -> float:
    """Seconds from sending the execute request to the first streamed output."""
    send_live_state(kc, cell_id, {"version": 1, "cells": state})
    msg = execute_request(kc, "The last message, edited.", {"cellId": cell_id})
    return first_message_seconds(kc, msg, ("display_data", "update_display_data"), TIMEOUT)


def conversation(cells: int = CELLS) -> list[dict[str, str]]:
    """What the agent is sent for the last cell of :func:`big_notebook`."""
    messages = []
    for i in range(cells - 1):
        messages += [{"role": "user", "content": f"Message number {i}, about item {i}."},
                     {"role": "assistant", "content": f"Item {i} is fine."}]
    return [*messages, {"role": "user", "content": "The last message, edited."}]


def _bare_first_token(url: str, messages: list[dict[str, str]] | None = None) -> float:
    """The peer: litellm's own stream, in this process, to its first token."""
    import asyncio

    from jupyter_percent_agent.litellm_setup import import_litellm

    litellm = import_litellm()

    async def go() -> float:
        start = time.perf_counter()
        response = await litellm.acompletion(
            model="openai/test-model", api_base=url, api_key="x", stream=True,
            messages=messages or [{"role": "user", "content": "Hello?"}])
        async for chunk in response:
            if chunk.choices and chunk.choices[0].delta.content:
                return time.perf_counter() - start
        raise RuntimeError("no token")

    return asyncio.run(go())


def bench_big_notebook(server: OpenAIServer, ksm: KernelSpecManager) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-big-"))
    state = big_notebook(folder / "big.msg.md")
    km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=ksm)
    km.start_kernel(env=kernel_env(server, JPY_SESSION_NAME=str(folder / "big.msg.md")),
                    cwd=str(folder))
    kc = km.client()
    kc.start_channels()
    ours, peer, one = [], [], []
    messages = conversation()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        _first_output(kc, f"m{CELLS - 1}", state)  # warm: litellm imported, caches filled
        _bare_first_token(server.url, messages)
        for _ in range(SAMPLES):  # interleaved
            ours.append(_first_output(kc, f"m{CELLS - 1}", state))
            peer.append(_bare_first_token(server.url, messages))
            one.append(_bare_first_token(server.url))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        shutil.rmtree(folder, ignore_errors=True)
    a, b = statistics.median(ours), statistics.median(peer)
    print_table(f"{CELLS}-cell message notebook: execute request to the first streamed output "
                f"(medians of {SAMPLES})",
                [["Agent kernel, live state included", a, ""],
                 ["bare litellm stream of the same conversation, first token (peer)", b, ""],
                 ["difference (target <= 0.100 s)", a - b, "met" if a - b <= 0.1 else "NOT met"],
                 ["(bare litellm stream of one message, for scale)",
                  statistics.median(one), ""]],
                ["", "seconds", ""])


def agent_kernelspec(prefix: str) -> tuple[Path, KernelSpecManager]:
    """A new kernels folder holding the project's kernelspec, and a manager that finds it."""
    kernels = Path(tempfile.mkdtemp(prefix=prefix)) / "kernels"
    shutil.copytree(kernelspec_dir(), kernels / KERNEL_NAME)
    return kernels, KernelSpecManager(kernel_dirs=[str(kernels)])


def main() -> None:
    server = OpenAIServer().start()
    kernels, ksm = agent_kernelspec("bench-kernel-")
    contenders = {
        "Agent kernel": (KERNEL_NAME, "Hello?", kernel_env(server), ksm),
        "Agent kernel, PERCENT_AGENT_PRELOAD=0":
            (KERNEL_NAME, "Hello?", kernel_env(server, PERCENT_AGENT_PRELOAD="0"), ksm),
        "Agent kernel, PERCENT_AGENT_DIRECT=0 (through litellm)":
            (KERNEL_NAME, "Hello?", kernel_env(server, PERCENT_AGENT_DIRECT="0"), ksm),
        "ipykernel + litellm (peer)":
            ("python3", PEER_CELL.format(url=server.url), kernel_env(server), None),
    }
    try:
        firsts, seconds = interleaved(contenders, ROUNDS, _first_and_second)
    finally:
        server.stop()
        shutil.rmtree(kernels.parent, ignore_errors=True)
    server = OpenAIServer().start()
    kernels.mkdir(parents=True)
    shutil.copytree(kernelspec_dir(), kernels / KERNEL_NAME)
    try:
        bench_big_notebook(server, ksm)
    finally:
        server.stop()
        shutil.rmtree(kernels.parent, ignore_errors=True)
    med1 = {name: statistics.median(v) for name, v in firsts.items()}
    med2 = {name: statistics.median(v) for name, v in seconds.items()}
    peer = med1["ipykernel + litellm (peer)"]
    peer2 = med2["ipykernel + litellm (peer)"]  # a message's own work: target <= 1.2x
    print(f"\nfirst cell {TYPING:.0f} s after the kernel is ready; medians of {ROUNDS} kernels")
    print_table("first reply in a fresh kernel (seconds)",
                [[name, med1[name], med2[name], f"{med1[name] / peer:.2f}x",
                  f"{med2[name] / peer2:.2f}x"] for name in contenders],
                ["kernel", "first reply", "second reply", "first / peer", "second / peer"])


if __name__ == "__main__":
    main()
