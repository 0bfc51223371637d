"""tce list / tce chat / history assembly timings, and tce chat against Simon Willison's llm.

Run with ``.venv/bin/python -m benchmarks.bench_chat``. Everything talks to the local
OpenAI-compatible server (answering at once) on 127.0.0.1.

``llm`` is not a dependency (and llm >= 0.35 needs openai 3, which litellm refuses): install it
in its own virtualenv, e.g. ``python -m venv /tmp/llm-venv && /tmp/llm-venv/bin/pip install
llm``, and point ``LLM_BIN`` at it (``/tmp/llm-venv/bin/llm`` and ``llm`` on PATH are tried).

Targets: ``tce list`` on a 5,000-cell file cold <= 0.15 s; a cold ``tce chat`` (no helper; the
call goes straight to the OpenAI-compatible server, ``runtime.direct``) <= 1.0x llm's time;
history for the last cell of a 5,000-cell file <= 50 ms. Shown beside: the same chat through
litellm (``PERCENT_AGENT_DIRECT=0``), cold and with the warm helper that keeps it imported.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._timing import median_seconds, print_table

CELLS = 5000
ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def big_file(path: Path, cells: int = CELLS) -> Path:
    """A message file of ``cells`` message cells, each with one reply."""
    parts = ["---\nagents:\n  bench:\n    models: [test-model]\n"
             "    system_prompt: You are a benchmark.\n---\n"]
    for i in range(cells):
        parts.append(
            f"\n## %% Question {i}[^m{i}]\n\n[^m{i}]: [markdown]\n\n"
            f"This is message number {i}, asking about item {i} in some detail.\n"
            f"\n### %%% Answer[^m{i}.1]\n\n[^m{i}.1]: [bench] agent=\"bench\" "
            f"time=\"2026-01-01T00:00:00Z\" tokens_in=12 tokens_out=20\n\n"
            f"Item {i} is fine. Here is a longer answer with a list:\n\n- one\n- two\n")
    path.write_text("".join(parts))
    return path


def _tce() -> list[str]:
    exe = BIN / "tce"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "jupyter_percent_agent.cli"]


def _run(cmd: list[str], env: dict[str, str]) -> None:
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({p.returncode}): {p.stderr.strip()[-500:]}")


def bench_list(tmp: Path) -> list[list[object]]:
    path = big_file(tmp / "big.msg.md")
    env = {**os.environ}
    t = median_seconds(lambda: _run([*_tce(), "list", str(path)], env), repeat=5)
    empty = median_seconds(lambda: _run([sys.executable, "-c", "pass"], env), repeat=5)
    return [["tce list, 5,000 cells (cold process)", t, 0.15, "yes" if t <= 0.15 else "NO"],
            ["  (python -c pass, for scale)", empty, "", ""]]


def bench_history(tmp: Path) -> list[list[object]]:
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime import history as hist
    from jupyter_percent_agent.runtime.agents import resolve_agent
    from jupyter_percent_agent.runtime.context import plan_history, selections
    from jupyter_percent_agent.runtime.transport import LocalTransport

    path = tmp / "big.msg.md"
    text = path.read_text()
    parse = median_seconds(lambda: fmt.reads(text, path=str(path)), repeat=5)
    nb = fmt.reads(text, path=str(path))
    cells = hist.conversation_cells(nb)
    agent = resolve_agent(nb, cells[-1])
    transport = LocalTransport()

    def build() -> None:
        h = plan_history(nb, len(cells), agent, selections(nb), base_dir=tmp,
                         system_prompt=agent.system_prompt, transport=transport)
        assert len(h.turns) > CELLS

    t = median_seconds(build, repeat=7)
    return [["parse 5,000-cell file (format core)", parse, "", ""],
            ["history for the last cell of 5,000", t, 0.05, "yes" if t <= 0.05 else "NO"]]


def _llm_bin() -> str | None:
    for cand in (os.environ.get("LLM_BIN"), "/tmp/llm-venv/bin/llm", shutil.which("llm")):
        if cand and Path(cand).exists():
            return cand
    return None


def bench_chat(tmp: Path) -> tuple[list[list[object]], float | None, float, float]:
    from jupyter_percent_agent.runtime import helper as warm
    from jupyter_percent_agent.testing.openai_server import OpenAIServer

    rows: list[list[object]] = []
    with OpenAIServer(default="Hello from the benchmark server.") as server:
        base = {**os.environ, "PERCENT_AGENT_API_BASE": server.url,
                "PERCENT_AGENT_MODEL": "test-model",
                "PERCENT_AGENT_WARM_IDLE": "60", "PERCENT_AGENT_BENCH": str(tmp)}
        folder = tmp / "chats"
        msg = "Say hello in one short sentence."

        cold_env = {**base, "PERCENT_AGENT_WARM": "0"}
        cold = median_seconds(lambda: _run([*_tce(), "chat", f"{folder}/", "-m", msg],
                                           cold_env), repeat=7)
        lite_env = {**cold_env, "PERCENT_AGENT_DIRECT": "0"}
        lite = median_seconds(lambda: _run([*_tce(), "chat", f"{folder}/", "-m", msg],
                                           lite_env), repeat=3, warmup=0)

        warm_env = {**base, "PERCENT_AGENT_WARM": "1", "PERCENT_AGENT_DIRECT": "0"}
        sock = warm.socket_path(warm_env)
        _run([*_tce(), "chat", f"{folder}/", "-m", msg], warm_env)  # starts the helper
        for _ in range(200):
            if sock.exists():
                break
            time.sleep(0.05)
        start = time.perf_counter()  # the first call the new helper serves (one sample)
        _run([*_tce(), "chat", f"{folder}/", "-m", msg], warm_env)
        first = time.perf_counter() - start
        hot = median_seconds(lambda: _run([*_tce(), "chat", f"{folder}/", "-m", msg],
                                          warm_env), repeat=7)

        llm = _llm_bin()
        llm_t = None
        if llm:
            home = tmp / "llm-home"
            home.mkdir()
            (home / "extra-openai-models.yaml").write_text(
                f"- model_id: bench-local\n  model_name: test-model\n"
                f"  api_base: \"{server.url}\"\n")
            llm_env = {**os.environ, "LLM_USER_PATH": str(home)}
            llm_t = median_seconds(lambda: _run([llm, "-m", "bench-local", msg], llm_env),
                                   repeat=7)
        n_requests = len(server.chat_requests)
    rows.append(["tce chat, no helper, straight to the server", cold, "", ""])
    rows.append(["tce chat, no helper, through litellm (PERCENT_AGENT_DIRECT=0)", lite, "", ""])
    rows.append(["tce chat, through litellm in the warm helper", hot, "", ""])
    rows.append(["tce chat, the helper's first call (one sample)", first, "", ""])
    if llm_t is not None:
        rows.append([f"llm -m ... (same server; {llm})", llm_t, "", ""])
        ratio = cold / llm_t
        rows.append(["ratio tce chat (no helper) / llm", ratio, 1.0,
                     "yes" if ratio <= 1.0 else "NO"])
        rows.append(["ratio tce chat (through litellm, no helper) / llm", lite / llm_t, "", ""])
        rows.append(["ratio tce chat (through litellm in the warm helper) / llm", hot / llm_t,
                     "", ""])
    rows.append(["  requests the server answered", n_requests, "", ""])
    return rows, llm_t, hot, cold


def import_breakdown() -> list[list[object]]:
    """Where ``import litellm`` spends its time (``python -X importtime``, cumulative)."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def wall(code: str) -> float:
        return median_seconds(lambda: _run([sys.executable, "-c", code], env), repeat=3,
                              warmup=1)

    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import litellm"], env=env,
                       capture_output=True, text=True)
    cum: dict[str, int] = {}
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            cum[m.group(4)] = max(cum.get(m.group(4), 0), int(m.group(2)))
    total = cum.get("litellm", 1)
    rows: list[list[object]] = [
        ["python -c 'import litellm' (wall)", wall("import litellm"), "", ""],
        ["python -c 'import openai' (wall)", wall("import openai"), "", ""],
        ["python -c 'import httpx' (wall; the direct path's client)", wall("import httpx"), "",
         ""],
        ["python -c 'import click' (wall)", wall("import click"), "", ""],
        ["python -c 'pass' (wall)", wall("pass"), "", ""],
    ]
    for mod in ("litellm", "litellm.main", "litellm.utils", "openai", "openai.types",
                "litellm.types.utils", "litellm.litellm_core_utils.litellm_logging",
                "litellm.router", "aiohttp", "litellm.exceptions", "tiktoken", "pydantic",
                "httpx"):
        if mod in cum:
            rows.append([f"  importtime cumulative: {mod}", cum[mod] / 1e6,
                         f"{100 * cum[mod] / total:.0f}%", ""])
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-chat-") as d:
        tmp = Path(d)
        rows = bench_list(tmp)
        rows += bench_history(tmp)
        chat_rows, _, _, _ = bench_chat(tmp)
        rows += chat_rows
        print_table("tce list / tce chat / history (seconds)", rows,
                    ["what", "seconds", "target", "met"])
        print_table("import litellm breakdown (seconds)", import_breakdown(),
                    ["what", "seconds", "share", ""])


if __name__ == "__main__":
    main()
