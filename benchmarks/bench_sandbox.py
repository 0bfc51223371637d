"""Sandbox: start-up overhead (cold, pooled) and CPU-bound speed vs plain exec and smolagents.

(1) ``execute("__result__ = 1")``, median of 50 runs: cold (pool size 0, a fresh interpreter per
run) and warm (a pre-started worker waiting; the pool is refilled between runs, as it is while a
model thinks). Target: <= 50 ms warm.
(2) A CPU-bound snippet (loops, dict and list work, string formatting) three ways: plain ``exec``
in-process (the floor), this sandbox (warm: execution plus IPC, no process start-up; cold: with
start-up), and smolagents' ``LocalPythonExecutor`` (the peer; skipped with a note if smolagents
is not installed: ``.venv/bin/pip install smolagents``). Targets: >= 0.3x plain exec speed,
>= 5x faster than smolagents.
(3) 100 tool calls in one warm run: a registry tool (runs in this process, one bridge round trip
per call) and the same function as a tool defined in the file (runs in the worker; each call
is announced to this process and checked), each less a warm trivial run, per call; the floor is
plain ``exec`` calling the function. No target: what a tool call costs, and what the check of
a defined tool's call adds.
Run: ``.venv/bin/python -m benchmarks.bench_sandbox``.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable

from benchmarks._timing import print_table
from jupyter_percent_agent.sandbox import (
    DefinedTool,
    execute,
    set_pool_size,
    shutdown_pool,
    warm_pool,
)

SNIPPET = """\
counts = {}
words = []
for i in range(20000):
    key = f"k{i % 97}"
    counts[key] = counts.get(key, 0) + i
    words.append("%s-%d" % (key, i % 7))
total = 0
for k, v in sorted(counts.items()):
    total += v % 1000
pairs = [(w, len(w)) for w in words if w.endswith("3")]
squares = [x * x for x in range(20000) if x % 3 == 0]
lines = []
for name, size in pairs[:2000]:
    lines.append(f"{name:>10}|{size:03d}|{size / 7:.2f}")
index = {}
for w in words:
    index.setdefault(w[:3], []).append(w)
result = {"total": total, "pairs": len(pairs), "squares": sum(squares),
          "text": len("\\n".join(lines)), "index": sorted((k, len(v)) for k, v in index.items())}
"""
SANDBOX_SNIPPET = SNIPPET + "__result__ = result\n"


def _median(fn: Callable[[], object], repeat: int, before: Callable[[], object] | None = None):
    samples = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _plain() -> dict:
    namespace: dict = {}
    exec(compile(SNIPPET, "<plain>", "exec"), namespace)
    return namespace["result"]


def _sandbox() -> dict:
    r = execute(SANDBOX_SNIPPET, timeout=60)
    assert r.status == "ok", r.error
    return r.result


def _smolagents_runner() -> Callable[[], object] | None:
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError:
        return None
    executor = LocalPythonExecutor(additional_authorized_imports=[], timeout_seconds=None)
    executor.send_tools({})

    def run() -> object:
        return executor(SNIPPET + "result\n").output

    return run


def _refill() -> None:
    warm_pool(timeout=30)


PLUS = "def plus(a, b):\n    return a + b\n"
CALLS = "total = 0\nfor i in range(100):\n    total = plus(total, i)\n__result__ = total\n"


def _tool_calls(trivial: float) -> None:
    namespace: dict = {}
    exec(PLUS, namespace)
    plus = namespace["plus"]
    defined = DefinedTool("plus", PLUS, description="Add two numbers.")

    def registry_run() -> None:
        assert execute(CALLS, tools={"plus": plus}).result == 4950

    def defined_run() -> None:
        assert execute(CALLS, defined=[defined]).result == 4950

    def plain_run() -> None:
        exec(CALLS.replace("__result__", "result"), {"plus": plus})

    rows = []
    for label, run in [("plain exec (floor)", plain_run), ("registry tool", registry_run),
                       ("tool defined in the file", defined_run)]:  # fmt: skip
        before = None if run is plain_run else _refill
        total = _median(run, 15, before=before) - (0 if run is plain_run else trivial)
        rows.append([label, total * 1000 / 100])
    print_table("100 tool calls in one warm run, median of 15, per call", rows,
                ["tool", "ms per call"])  # fmt: skip


def main() -> None:
    # (1) overhead of a trivial run
    trivial = "__result__ = 1"
    set_pool_size(0)
    shutdown_pool()
    cold = _median(lambda: execute(trivial), 50)
    set_pool_size(2)
    warm = _median(lambda: execute(trivial), 50, before=_refill)
    print_table(
        "execute('__result__ = 1'), median of 50",
        [["cold (fresh process)", cold * 1000], ["warm (pooled worker)", warm * 1000],
         ["target warm", 50.0]],
        ["run", "ms"],
    )  # fmt: skip

    # (2) CPU-bound snippet
    expected = json.loads(json.dumps(_plain()))  # tuples become lists across JSON
    assert _sandbox() == expected
    # Interleaved, so that load from other processes on the machine hits both alike.
    plain_samples, warm_samples = [], []
    for _ in range(20):
        plain_samples.append(_median(_plain, 1))
        warm_samples.append(_median(_sandbox, 1, before=_refill))
    plain = statistics.median(plain_samples)
    sandbox_warm = statistics.median(warm_samples)
    set_pool_size(0)
    shutdown_pool()
    sandbox_cold = _median(_sandbox, 10)
    set_pool_size(2)
    exec_only = max(sandbox_warm - warm, 1e-9)
    rows = [
        ["plain exec (floor)", plain * 1000, 1.0],
        ["sandbox, execution (warm minus trivial warm run)", exec_only * 1000, plain / exec_only],
        ["sandbox, warm worker (no process start-up)", sandbox_warm * 1000, plain / sandbox_warm],
        ["sandbox, cold (with process start-up)", sandbox_cold * 1000, plain / sandbox_cold],
    ]
    smol = _smolagents_runner()
    if smol is None:
        print("\nnote: smolagents is not installed; peer skipped (pip install smolagents)")
    else:
        assert json.loads(json.dumps(smol())) == expected
        smol_time = _median(smol, 5)
        rows.append(["smolagents LocalPythonExecutor", smol_time * 1000, plain / smol_time])
    print_table("CPU-bound snippet, median ms (speed relative to plain exec)", rows,
                ["runner", "ms", "speed vs plain"])  # fmt: skip
    _tool_calls(warm)
    print("\nratios:")
    print(f"  warm overhead {warm * 1000:.1f} ms (target <= 50 ms)")
    print(
        f"  sandbox speed vs plain exec: {plain / exec_only:.2f}x execution only, "
        f"{plain / sandbox_warm:.2f}x warm, {plain / sandbox_cold:.2f}x cold (target >= 0.3x)"
    )
    if smol is not None:
        print(
            f"  sandbox faster than smolagents: {smol_time / sandbox_warm:.1f}x warm, "
            f"{smol_time / sandbox_cold:.1f}x cold (target >= 5x)"
        )
    shutdown_pool()


if __name__ == "__main__":
    main()
