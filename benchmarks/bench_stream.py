"""A long reply streaming into a notebook: the Agent kernel against ``tce chat`` and ipykernel.

One 300 KB Markdown reply (headings, lists, inline code), streamed by the project's local
OpenAI-compatible server in 64-character chunks, 1 ms apart (about 4,700 chunks, a few
seconds, as a fast model streams). Timed, medians of several interleaved rounds:

- the Agent kernel, warm, as JupyterLab runs a cell (the cell id in the request: the reply
  streams as one display updated in place), from sending the cell to the kernel going idle;
  also the bytes of the display messages it sent (each update carries the whole text so far:
  what the front end must receive and render);
- the peer ``tce chat`` on the same reply (a fresh process: it prints the chunks as they come);
- the peer ipykernel: a ``python3`` cell reading the same stream with httpx and printing each
  chunk (ipykernel batches its stdout).

The ratio is the Agent kernel's median over ``tce chat``'s. What a browser adds (rendering the
updates) is not measured here; see docs/jupyterlab.md.

Run with ``.venv/bin/python -m benchmarks stream``. Every call goes to 127.0.0.1.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._kernels import execute_request
from benchmarks._timing import print_table
from benchmarks.bench_kernel import agent_kernelspec, kernel_env, running_kernel
from jupyter_percent_agent.kernel import KERNEL_NAME
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply

ROUNDS = 3
TIMEOUT = 300
TEXT = "".join(
    f"## Part {i}\n\n- Line {i}: the **quick** brown fox jumps over the `lazy` dog.\n"
    f"- again and again, {i} times\n\n"
    for i in range(2900)
)
BIN = Path(sys.executable).parent

PEER_CELL = """\
import httpx, json
body = {{"model": "test-model", "stream": True,
         "messages": [{{"role": "user", "content": "Write it all."}}]}}
with httpx.stream("POST", {url!r} + "/chat/completions", json=body, timeout=120) as r:
    for line in r.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            delta = json.loads(line[6:])["choices"][0]["delta"]
            print(delta.get("content") or "", end="")
"""


def _reply() -> Reply:
    return Reply(TEXT, chunk_size=64, chunk_delay=0.001)


def _until_idle(kc: Any, msg: dict[str, Any]) -> tuple[float, int, str]:
    """Seconds to idle, bytes of display messages, and the last text shown."""
    start = time.perf_counter()
    kc.shell_channel.send(msg)
    size, last = 0, ""
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        if m["msg_type"] in ("display_data", "update_display_data", "stream"):
            size += len(json.dumps(m["content"]))
            data = m["content"].get("data")
            last = data["text/markdown"] if data else last + m["content"]["text"]
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return time.perf_counter() - start, size, last


def _tce_chat(server: OpenAIServer, folder: Path, n: int) -> float:
    env = kernel_env(server)
    start = time.perf_counter()
    p = subprocess.run(
        [str(BIN / "tce"), "chat", str(folder / f"c{n}.msg.md"), "-m", "Write it all."],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    if p.returncode != 0 or p.stdout.strip() != TEXT.strip():
        raise RuntimeError(f"tce chat failed ({p.returncode}): {p.stderr[-300:]}")
    return took


def main() -> None:
    server = OpenAIServer(default=_reply()).start()
    kernels, ksm = agent_kernelspec("bench-stream-")
    folder = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    notebook = folder / "k.msg.md"
    notebook.write_text("")
    times: dict[str, list[float]] = {"Agent kernel": [], "tce chat": [], "ipykernel": []}
    sizes: dict[str, list[int]] = {"Agent kernel": [], "ipykernel": []}
    try:
        agent_env = kernel_env(server, JPY_SESSION_NAME=str(notebook))
        with (
            running_kernel(KERNEL_NAME, agent_env, ksm) as (_, agent),
            running_kernel("python3", kernel_env(server), None) as (_, peer),
        ):
            for n in range(ROUNDS):
                msg = execute_request(agent, "Write it all.", {"cellId": f"c{n}"})
                took, size, last = _until_idle(agent, msg)
                if last != TEXT:
                    raise RuntimeError("the Agent kernel's last update is not the whole reply")
                times["Agent kernel"].append(took)
                sizes["Agent kernel"].append(size)
                times["tce chat"].append(_tce_chat(server, folder, n))
                took, size, last = _until_idle(
                    peer, execute_request(peer, PEER_CELL.format(url=server.url))
                )
                if last != TEXT:
                    raise RuntimeError("the ipykernel peer did not print the whole reply")
                times["ipykernel"].append(took)
                sizes["ipykernel"].append(size)
    finally:
        server.stop()
        shutil.rmtree(kernels, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
    base = statistics.median(times["tce chat"])
    rows = []
    for name, samples in times.items():
        med = statistics.median(samples)
        mb = statistics.median(sizes[name]) / 1e6 if name in sizes else "-"
        rows.append([name, med, med / base, mb])
    print_table(
        f"A {len(TEXT) // 1000} KB reply in {len(TEXT) // 64} chunks, medians of {ROUNDS} rounds",
        rows,
        ["contender", "seconds", "x tce chat", "MB of output messages"],
    )


if __name__ == "__main__":
    main()
