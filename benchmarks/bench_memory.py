"""Resident memory of the Agent kernel after its first reply, against ipykernel after ``1+1``.

Five open conversations are five kernels: on JupyterHub, memory is the limit users meet first.
Both kernels are started as JupyterLab starts them; the Agent kernel answers one message from
the project's local OpenAI-compatible server (on 127.0.0.1), ipykernel runs ``1+1``. Measured:
the kernel process's resident set size (``psutil``), idle and after that cell, medians of
``ROUNDS`` kernels. Target: the Agent kernel after its first reply <= 2x ipykernel after
``1+1``. Beside it, the Agent kernel when its calls need litellm: handed to the warm helper
(one process shared by every kernel and ``tce`` of the environment, not counted here), and
with the helper off (litellm in each kernel).

Run with ``.venv/bin/python -m benchmarks.bench_memory``.
"""

from __future__ import annotations

import shutil
import statistics
import time
from typing import Any

import psutil
from jupyter_client.manager import KernelManager

from benchmarks._timing import interleaved, print_table
from benchmarks.bench_kernel import agent_kernelspec, kernel_env, run_cell, running_kernel
from jupyter_percent_agent.kernel import KERNEL_NAME
from jupyter_percent_agent.testing.openai_server import OpenAIServer

ROUNDS = 3
TIMEOUT = 120
SETTLE = 3.0  # seconds after start (the Agent kernel's background preload included)


def _rss_mb(km: KernelManager) -> float:
    pid = km.provisioner.process.pid  # type: ignore[union-attr]
    return psutil.Process(pid).memory_info().rss / 2**20


def _measure(name: str, code: str, env: dict[str, str], ksm: Any) -> tuple[float, float]:
    with running_kernel(name, env, ksm) as (km, kc):
        time.sleep(SETTLE)
        idle = _rss_mb(km)
        run_cell(kc, code)
        time.sleep(0.5)
        return idle, _rss_mb(km)


def main() -> None:
    server = OpenAIServer().start()
    kernels, ksm = agent_kernelspec("bench-memory-")
    contenders = {
        "Agent kernel, one message": (KERNEL_NAME, "Hello?", kernel_env(server), ksm),
        "Agent kernel, PERCENT_AGENT_DIRECT=0, litellm in the shared warm helper":
            (KERNEL_NAME, "Hello?", kernel_env(server, PERCENT_AGENT_DIRECT="0",
                                         PERCENT_AGENT_WARM="1", PERCENT_AGENT_WARM_IDLE="30"),
             ksm),
        "Agent kernel, PERCENT_AGENT_DIRECT=0 PERCENT_AGENT_WARM=0 (litellm in the kernel)":
            (KERNEL_NAME, "Hello?", kernel_env(server, PERCENT_AGENT_DIRECT="0"), ksm),
        "ipykernel, 1+1 (peer)": ("python3", "1+1", kernel_env(server), None),
    }
    try:
        idle, after = interleaved(contenders, ROUNDS, _measure)
    finally:
        server.stop()
        shutil.rmtree(kernels.parent, ignore_errors=True)
    peer = statistics.median(after["ipykernel, 1+1 (peer)"])
    rows = [[n, statistics.median(idle[n]), statistics.median(after[n]),
             f"{statistics.median(after[n]) / peer:.2f}x"] for n in contenders]
    ratio = statistics.median(after["Agent kernel, one message"]) / peer
    rows.append(["target: Agent kernel after its reply <= 2x the peer", "", "",
                 "met" if ratio <= 2 else "NOT met"])
    print_table(f"kernel resident memory, MB (medians of {ROUNDS} kernels)", rows,
                ["kernel", "idle", "after the cell", "after / peer"])


if __name__ == "__main__":
    main()
