"""Task runs: ``tce run --inputs`` against LangGraph on the same workflow, and the runner's
own cost per step.

Run with ``.venv/bin/python -m benchmarks.bench_tasks`` (``make bench-peers`` installs
LangGraph, for this benchmark only). The workflow (tests/data/sop/review): draft, review (an
LLM validator that fails the first draft, which is redone once with the review's message),
final: 5 model calls and 6 steps per input, over 200 inputs at concurrency 32, against the
local OpenAI-compatible server answering at once. Both sides make the same litellm calls.

Targets: ``tce run --inputs`` wall time <= 1.0x LangGraph's; the runner's overhead per step
(everything but the model call, the transcript's write included) <= 5 ms median.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._timing import print_table

ROOT = Path(__file__).resolve().parent.parent
SOP = ROOT / "tests" / "data" / "sop" / "review" / "sop"
PEER = Path(__file__).resolve().parent / "_langgraph_peer.py"
BIN = Path(sys.executable).parent
INPUTS = 200
CONCURRENCY = 32
ROUNDS = 5


def answer(body: dict[str, Any]) -> str:
    """The workflow's model, answering at once (as tests/integration/test_tasks_batch.py's)."""
    user = str(body["messages"][-1]["content"])
    if user.startswith("DRAFT"):
        topic = user.split("about ", 1)[1].split(".", 1)[0]
        return f"a better draft on {topic}" if "Feedback" in user else f"a draft on {topic}"
    if user.startswith("REVIEW"):
        if "better" in user:
            return 'status = "pass"'
        return 'status = "fail"\nerror_type = "weak"\nmessage = "make it better"'
    return "final: " + user.split("of: ", 1)[-1]


def write_inputs(folder: Path, n: int = INPUTS) -> Path:
    path = folder / "topics.jsonl"
    path.write_text("".join(json.dumps({"topic": f"topic {i}"}) + "\n" for i in range(n)))
    return path


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_tce(inputs: Path, runs: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    p = subprocess.run([str(BIN / "tce"), "run", "w/main", "--sop", str(SOP), "--inputs",
                        str(inputs), "--concurrency", str(CONCURRENCY), "--runs", str(runs),
                        "--json"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    done = sum(json.loads(line)["status"] == "succeeded" for line in p.stdout.splitlines())
    if p.returncode != 0 or done != INPUTS:
        raise RuntimeError(f"tce run failed ({p.returncode}, {done} succeeded): "
                           f"{p.stderr[-800:]}")
    return seconds


def time_langgraph(inputs: Path, api_base: str, env: dict[str, str], rounds: int = 1
                   ) -> tuple[float, list[float]]:
    """The peer's whole command (seconds) and its rounds' own seconds."""
    started = time.perf_counter()
    p = subprocess.run([sys.executable, str(PEER), api_base, str(inputs), str(CONCURRENCY),
                        str(rounds)], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if p.returncode != 0:
        raise RuntimeError(f"the LangGraph peer failed: {p.stderr[-800:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if out["succeeded"] != INPUTS:
        raise RuntimeError(f"the LangGraph peer finished {out['succeeded']} of {INPUTS}")
    return seconds, out["seconds"]


def in_child(what: str, env: dict[str, str], *args: str) -> Any:
    """Run one of this module's measurements in a fresh process (the model server keeps this
    one's GIL to itself) and return what it printed (JSON)."""
    p = subprocess.run([sys.executable, "-m", "benchmarks.bench_tasks", what, *args], env=env,
                       capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed: {p.stderr[-800:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def warm_rounds(inputs: Path, runs: Path, rounds: int = 2) -> list[float]:
    """``run_inputs`` rounds in this process (the later ones warm: imports and connections
    made), seconds each."""
    from jupyter_percent_agent.tasks import batch, load_sop

    sop = load_sop(SOP)
    jobs = batch.read_inputs(inputs)
    seconds = []
    for n in range(rounds):
        started = time.perf_counter()
        results = asyncio.run(batch.run_inputs(sop, "w/main", jobs, concurrency=CONCURRENCY,
                                               runs_dir=runs / str(n)))
        seconds.append(time.perf_counter() - started)
        assert all(r["status"] == "succeeded" for r in results), results[0]
    return seconds


def step_overhead(runs: Path, n: int = 60) -> dict[str, float]:
    """Medians over sequential runs, in ms: the runner per step, the model call, the
    transcript's write per step, and the background fsyncs per run."""
    from jupyter_percent_agent.tasks import load_sop
    from jupyter_percent_agent.tasks.api import arun_task
    from jupyter_percent_agent.tasks.events import StepFinished
    from jupyter_percent_agent.tasks.runner import Runner

    sop = load_sop(SOP)
    infos: list[Any] = []
    writes: list[float] = []
    syncs: list[float] = []
    original = Runner.run

    async def measured(self: Runner) -> Any:
        result = await original(self)
        writes.append(self.saver.write_seconds / max(1, self.state.steps))
        syncs.append(self.saver.sync_seconds)
        return result

    def on_event(event: Any) -> None:
        if isinstance(event, StepFinished):
            infos.append(event.info)

    Runner.run = measured  # type: ignore[method-assign]
    try:
        async def go() -> None:
            for i in range(n):
                await arun_task(sop, "w/main", {"topic": f"t{i}"}, runs_dir=runs,
                                on_event=on_event)
        asyncio.run(go())
    finally:
        Runner.run = original  # type: ignore[method-assign]
    steady = infos[len(infos) // 5:]  # the first runs warm litellm up
    return {"overhead": statistics.median(1000 * (i.seconds - i.model_seconds)
                                          for i in steady),
            "model": statistics.median(1000 * i.model_seconds for i in steady
                                       if i.task_type != "plan"),
            "write": 1000 * statistics.median(writes), "sync": 1000 * statistics.median(syncs)}


def main() -> None:
    from jupyter_percent_agent.testing.openai_server import OpenAIServer

    if len(sys.argv) > 2 and sys.argv[1] in ("--warm", "--overhead"):
        runs = Path(sys.argv[2])
        if sys.argv[1] == "--warm":
            print(json.dumps(warm_rounds(Path(sys.argv[3]), runs)))
        else:
            print(json.dumps(step_overhead(runs)))
        return
    try:
        import langgraph  # noqa: F401
    except ImportError:
        print("LangGraph is not installed: run `make bench-peers` first")
        return
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        server.responder = answer
        folder = Path(tmp)
        inputs = write_inputs(folder)
        env = {**os.environ, "PERCENT_AGENT_API_BASE": server.url,
               "PERCENT_AGENT_MODEL": "test-model", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
               "PERCENT_AGENT_WARM": "0"}
        tce, peer, tce_cpu, peer_cpu = [], [], [], []
        for n in range(ROUNDS):  # interleaved: the machine's load falls on both alike
            cpu = children_cpu()
            tce.append(time_tce(inputs, folder / f"runs{n}", env))
            tce_cpu.append(children_cpu() - cpu)
            cpu = children_cpu()
            peer.append(time_langgraph(inputs, server.url, env)[0])
            peer_cpu.append(children_cpu() - cpu)
        ours_warm = in_child("--warm", env, str(folder / "warm"), str(inputs))[-1]
        peer_warm = time_langgraph(inputs, server.url, env, rounds=2)[1][-1]
        t, p = statistics.median(tce), statistics.median(peer)
        tc, pc = statistics.median(tce_cpu), statistics.median(peer_cpu)
        rows = [
            [f"tce run --inputs ({INPUTS} inputs, {CONCURRENCY} at once), whole command", t,
             p, t / p, "<= 1.0", "yes" if t / p <= 1.0 else "NO"],
            ["  its CPU time (user + system; steadier on a shared machine)", tc, pc, tc / pc,
             "", ""],
            ["  run_inputs from Python, a second round (warm; a library leaves gc alone)",
             ours_warm, peer_warm, ours_warm / peer_warm, "", ""],
        ]
        print_table(f"tce run --inputs vs LangGraph StateGraph, seconds (median of {ROUNDS})",
                    rows, ["what", "tce", "LangGraph", "ratio", "target", "met"])
        cost = in_child("--overhead", env, str(folder / "seq"))
        print_table("The runner's cost per step (sequential runs, ms, medians)", [
            ["runner overhead per step (all but the model call; the write included)",
             cost["overhead"], 5.0, "yes" if cost["overhead"] <= 5.0 else "NO"],
            ["  of which the transcript's write (atomic, no fsync)", cost["write"], "", ""],
            ["the model call (litellm to the local server), for scale", cost["model"], "", ""],
            ["the run's fsyncs (on a thread, beside the steps), per run", cost["sync"], "",
             ""],
        ], ["what", "ms", "target", "met"])


if __name__ == "__main__":
    main()
