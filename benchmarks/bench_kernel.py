"""The first reply in a fresh kernel: the Agent kernel against ipykernel calling litellm itself.

A user opens a notebook, takes a few seconds to type the first message, runs it. Timed: from
sending that cell to the kernel going idle with the whole reply. The peer is what one would do
without this project: a ``python3`` ipykernel cell that imports litellm and streams the same
completion. Also shown: the Agent kernel with its background import off
(``PERCENT_AGENT_PRELOAD=0``), and a second reply (everything warm).

Run with ``.venv/bin/python -m benchmarks.bench_kernel``. Every call goes to the project's
local OpenAI-compatible server on 127.0.0.1. No target is set by an issue; the figures go in
the notes.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from benchmarks._timing import print_table
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


def _env(server: OpenAIServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERCENT_AGENT_")}
    env.update({"PERCENT_AGENT_API_BASE": server.url, "PERCENT_AGENT_MODEL": "test-model",
                "PERCENT_AGENT_RETRIES": "0", "PERCENT_AGENT_WARM": "0",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    env.update(extra)
    return env


def _run_cell(kc: Any, code: str) -> float:
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


def _first_and_second(name: str, code: str, env: dict[str, str],
                      ksm: KernelSpecManager | None) -> tuple[float, float]:
    km = KernelManager(kernel_name=name, **({"kernel_spec_manager": ksm} if ksm else {}))
    km.start_kernel(env=env, cwd=tempfile.gettempdir())
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        time.sleep(TYPING)
        return _run_cell(kc, code), _run_cell(kc, code)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main() -> None:
    server = OpenAIServer().start()
    kernels = Path(tempfile.mkdtemp(prefix="bench-kernel-")) / "kernels"
    shutil.copytree(kernelspec_dir(), kernels / KERNEL_NAME)
    ksm = KernelSpecManager(kernel_dirs=[str(kernels)])
    contenders = {
        "Agent kernel": (KERNEL_NAME, "Hello?", _env(server), ksm),
        "Agent kernel, PERCENT_AGENT_PRELOAD=0":
            (KERNEL_NAME, "Hello?", _env(server, PERCENT_AGENT_PRELOAD="0"), ksm),
        "ipykernel + litellm (peer)":
            ("python3", PEER_CELL.format(url=server.url), _env(server), None),
    }
    firsts: dict[str, list[float]] = {name: [] for name in contenders}
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    try:
        for _ in range(ROUNDS):  # interleaved: noise on this shared machine hits all alike
            for name, (kernel, code, env, spec) in contenders.items():
                first, second = _first_and_second(kernel, code, env, spec)
                firsts[name].append(first)
                seconds[name].append(second)
    finally:
        server.stop()
        shutil.rmtree(kernels.parent, ignore_errors=True)
    med1 = {name: statistics.median(v) for name, v in firsts.items()}
    med2 = {name: statistics.median(v) for name, v in seconds.items()}
    peer = med1["ipykernel + litellm (peer)"]
    print(f"\nfirst cell {TYPING:.0f} s after the kernel is ready; medians of {ROUNDS} kernels")
    print_table("first reply in a fresh kernel (seconds)",
                [[name, med1[name], med2[name], f"{med1[name] / peer:.2f}x"]
                 for name in contenders],
                ["kernel", "first reply", "second reply", "first / peer"])


if __name__ == "__main__":
    main()
