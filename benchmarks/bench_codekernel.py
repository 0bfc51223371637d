"""A ``[code]`` cell's first output: this project's code kernels against ipykernel driven
directly by ``jupyter_client`` on the same code, every kernel already started.

Two paths, each against its peer in the same run, interleaved, medians of ``SAMPLES``:

- **Shift+Enter**: the Agent kernel, serving a message file in a trusted folder, runs a
  ``[code]`` cell (it reads the file, plans the turn, hands the code to its ``python3`` code
  kernel and relays the output). Timed from sending the execute request to the first
  ``stream`` message on IOPub. Peer: a ``python3`` ipykernel sent the same code by a blocking
  ``jupyter_client`` client.
- **tce exec**: ``runtime.run_turn`` on the same cell with the session's ``CodeKernels``, in
  this process, to the first ``CodeText`` event. Peer: an ``AsyncKernelClient`` sending the
  same code to its own ipykernel, to the first ``stream`` message.

Target (issue: code kernels): at most 1.2x the peer + 20 ms. Kernel start is paid once per
session and is not in these numbers (shown once, for scale).

Run with ``.venv/bin/python -m benchmarks codekernel``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager, KernelManager

from benchmarks._kernels import execute_request, first_message_seconds
from benchmarks._timing import print_table
from jupyter_percent_agent.kernel import KERNEL_NAME, kernelspec_dir

SAMPLES = 15
TIMEOUT = 60
CODE = "print('hello', 6 * 7)"
FILE = f"# %% Hello[^c1]\n[^c1]: [code]\n\n```python\n{CODE}\n```\n"


def _first_stream(kc: Any, cell_id: str | None) -> float:
    """Seconds from sending ``CODE`` (as cell ``cell_id``, if any) to its first stream."""
    msg = execute_request(kc, CODE, {"cellId": cell_id} if cell_id is not None else None)
    return first_message_seconds(kc, msg, ("stream",), TIMEOUT)


def _start(
    name: str, env: dict[str, str], cwd: Path, ksm: KernelSpecManager | None = None
) -> tuple[KernelManager, Any, float]:
    start = time.perf_counter()
    km = KernelManager(kernel_name=name, **({"kernel_spec_manager": ksm} if ksm else {}))
    km.start_kernel(env=env, cwd=str(cwd))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    return km, kc, time.perf_counter() - start


def bench_shift_enter(folder: Path, config: Path) -> tuple[float, float, float]:
    kernels = folder.parent / "kernels"
    shutil.copytree(kernelspec_dir(), kernels / KERNEL_NAME)
    ksm = KernelSpecManager(kernel_dirs=[str(kernels)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERCENT_AGENT_")}
    agent_env = {
        **env,
        "PERCENT_AGENT_CONFIG_DIR": str(config),
        "JPY_SESSION_NAME": str(folder / "hello.msg.md"),
        "PERCENT_AGENT_PRELOAD": "0",
    }
    agent_km, agent_kc, _ = _start(KERNEL_NAME, agent_env, folder, ksm)
    peer_km, peer_kc, started = _start("python3", env, folder)
    ours, peer = [], []
    try:
        _first_stream(agent_kc, "c1")  # starts the code kernel once
        _first_stream(peer_kc, None)
        for _ in range(SAMPLES):
            ours.append(_first_stream(agent_kc, "c1"))
            peer.append(_first_stream(peer_kc, None))
    finally:
        for km, kc in ((agent_km, agent_kc), (peer_km, peer_kc)):
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return statistics.median(ours), statistics.median(peer), started


async def _bench_exec(folder: Path) -> tuple[float, float]:
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.codekernel import CodeKernels
    from jupyter_percent_agent.runtime.events import CodeText
    from jupyter_percent_agent.runtime.turn import RunOptions, run_turn

    nb = fmt.reads(FILE, path=str(folder / "hello.msg.md"))
    kernels = CodeKernels(folder)
    options = RunOptions(base_dir=folder, code_kernels=kernels)
    peer_km = AsyncKernelManager(kernel_name="python3")
    await peer_km.start_kernel(cwd=str(folder))
    peer_kc = peer_km.client()
    peer_kc.start_channels()
    await peer_kc.wait_for_ready(timeout=TIMEOUT)

    async def ours() -> float:
        start = time.perf_counter()
        first: list[float] = []

        def on_event(event: Any) -> None:
            if isinstance(event, CodeText) and not first:
                first.append(time.perf_counter() - start)

        await run_turn(nb, "c1", options, on_event)
        return first[0]

    async def peer() -> float:
        start = time.perf_counter()
        msg_id = peer_kc.execute(CODE)
        first = None
        while True:
            m = await peer_kc.get_iopub_msg(timeout=TIMEOUT)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if first is None and m["msg_type"] == "stream":
                first = time.perf_counter() - start
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
        await peer_kc.get_shell_msg(timeout=TIMEOUT)
        assert first is not None
        return first

    a, b = [], []
    try:
        await ours()
        await peer()
        for _ in range(SAMPLES):
            a.append(await ours())
            b.append(await peer())
    finally:
        await kernels.shutdown()
        peer_kc.stop_channels()
        await peer_km.shutdown_kernel(now=True)
    return statistics.median(a), statistics.median(b)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-code-"))
    folder = (root / "work").resolve()
    folder.mkdir()
    (folder / "hello.msg.md").write_text(FILE)
    config = root / "config"
    config.mkdir()
    (config / "config.toml").write_text(f'trusted = ["{folder}"]\n')
    old = os.environ.get("PERCENT_AGENT_CONFIG_DIR")
    os.environ["PERCENT_AGENT_CONFIG_DIR"] = str(config)
    try:
        shift_ours, shift_peer, started = bench_shift_enter(folder, config)
        exec_ours, exec_peer = asyncio.run(_bench_exec(folder))
    finally:
        if old is None:
            os.environ.pop("PERCENT_AGENT_CONFIG_DIR", None)
        else:
            os.environ["PERCENT_AGENT_CONFIG_DIR"] = old
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    for label, ours, peer in (
        ("Shift+Enter: Agent kernel -> code kernel", shift_ours, shift_peer),
        ("tce exec: runtime.run_turn -> code kernel", exec_ours, exec_peer),
    ):
        rows.append(
            (
                label,
                ours * 1000,
                peer * 1000,
                ours / peer,
                "yes" if ours <= 1.2 * peer + 0.020 else "no",
            )
        )
    print_table(
        f"A [code] cell's first output, kernels started (medians of {SAMPLES}, ms); "
        "peer: ipykernel driven directly by jupyter_client",
        rows,
        ["path", "ours", "peer", "ratio", "<= 1.2x + 20 ms"],
    )
    print(
        f"\n(for scale: starting the python3 kernel took {started * 1000:.0f} ms, "
        "paid once per session)"
    )


if __name__ == "__main__":
    main()
