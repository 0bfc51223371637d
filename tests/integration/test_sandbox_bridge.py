"""The tool bridge: tools called from sandboxed code, and a parent that survives a hostile child.

Tools run in the test process; the sandbox reaches them only with JSON. The hostile-worker tests
put a real misbehaving process (tests/data/sandbox/hostile_worker.py) on the parent's end of the
real bridge, as escaped sandbox code could.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from jupyter_percent_agent.sandbox import DefinedTool, execute, execute_async, warm_pool
from jupyter_percent_agent.sandbox._bridge import ToolTable
from jupyter_percent_agent.sandbox._runner import _Run
from tests.paths import TEST_DATA

DATA = TEST_DATA / "sandbox"
JSON_TYPES = (type(None), bool, int, float, str, list, dict)


def _only_json(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _only_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_only_json(v) for v in value)
    return isinstance(value, JSON_TYPES)


# --- tools called from the sandbox -------------------------------------------------------


def test_sync_tool_gets_positional_and_keyword_arguments_bound_to_its_names():
    calls = []

    def search(query, max_results=5):
        calls.append((query, max_results))
        return [{"title": query.upper(), "n": max_results}]

    r = execute("__result__ = search('python', max_results=3) + search('x')",
                tools={"search": search})  # fmt: skip
    assert r.status == "ok", r.error
    assert r.result == [{"title": "PYTHON", "n": 3}, {"title": "X", "n": 5}]
    assert calls == [("python", 3), ("x", 5)]
    assert [(c.name, c.args, c.status) for c in r.tool_calls] == [
        ("search", {"query": "python", "max_results": 3}, "ok"),
        ("search", {"query": "x"}, "ok"),
    ]
    assert all(c.duration >= 0 for c in r.tool_calls)


def test_async_tool_is_awaited_in_the_calling_loop():
    loops = []

    async def fetch(url: str):
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0.01)
        return {"url": url, "ok": True}

    async def main():
        r = await execute_async("__result__ = fetch('https://example.org')", tools={"fetch": fetch})
        return r, asyncio.get_running_loop()

    r, loop = asyncio.run(main())
    assert r.result == {"url": "https://example.org", "ok": True}
    assert loops == [loop]


def test_jarvis_results_give_data_to_the_code_and_collect_instructions():
    def camera(device: str):
        return {"data": {"url": f"rtsp://{device}"}, "instruction": "Show the video."}

    def plain():
        return {"data": 1, "other": 2}  # not the Jarvis shape: the whole dict is data

    r = execute("__result__ = [camera('cam1'), plain(), camera(device='cam2')['url']]",
                tools={"camera": camera, "plain": plain})  # fmt: skip
    assert r.result == [{"url": "rtsp://cam1"}, {"data": 1, "other": 2}, "rtsp://cam2"]
    assert r.instructions == ["Show the video.", "Show the video."]


def test_stream_chunks_reach_on_chunk_as_they_arrive_and_not_the_code():
    class Chunk:  # a live object like langchain's AIMessageChunk: never crosses into the sandbox
        def __init__(self, text):
            self.text = text

    async def live(n: int):
        for i in range(n):
            yield {"data": {"stream_chunk": Chunk(f"part {i}")}}
        yield {"data": {"frames": n}, "instruction": "Describe the stream."}

    async def once():
        return {"data": {"stream_chunk": "<video>x</video>", "id": 7}, "instruction": ""}

    got = []
    r = execute(
        "__result__ = [live(3), once()]",
        tools={"live": live, "once": once},
        on_chunk=lambda name, chunk: got.append((name, getattr(chunk, "text", chunk))),
    )
    assert r.status == "ok", r.error
    assert got == [("live", "part 0"), ("live", "part 1"), ("live", "part 2"),
                   ("once", "<video>x</video>")]  # fmt: skip
    assert r.result == [{"frames": 3}, {"id": 7}]
    assert r.instructions == ["Describe the stream."]


def test_real_registry_tools_work_through_the_bridge():
    from jupyter_percent_agent.tools import Registry

    registry = Registry.load(DATA / "toolbox", entry_points=False)
    got = []
    r = execute(
        "__result__ = [add(2, 3), add(a=1, b=1)['sum'], countdown(2), steps(n=2)]",
        tools=registry,
        on_chunk=lambda name, chunk: got.append((name, chunk)),
    )
    assert r.status == "ok", r.error
    assert r.result == [{"sum": 5}, 2, {"done": True}, {"steps": 2}]
    assert got == [("countdown", "2..."), ("countdown", "1..."),
                   ("steps", "step 0"), ("steps", "step 1")]  # fmt: skip
    assert "Tell the user the sum." in r.instructions
    assert "Say liftoff." in r.instructions


def test_tool_exception_arrives_as_a_plain_tool_error_with_its_message_only():
    class Secretive(Exception):
        def __init__(self):
            super().__init__("backend said no")
            self.api_key = "sk-live-secret"

    def flaky():
        raise Secretive()

    code = (
        "try:\n"
        "    flaky()\n"
        "except ToolError as e:\n"
        "    __result__ = [str(e), list(e.args), isinstance(e, Exception)]\n"
    )
    r = execute(code, tools={"flaky": flaky})
    assert r.status == "ok", r.error
    assert r.result == ["Secretive: backend said no", ["Secretive: backend said no"], True]
    assert "sk-live-secret" not in json.dumps(r.to_json(), default=str)
    assert r.tool_calls[0].status == "error"

    uncaught = execute("x = 1\nflaky()\n", tools={"flaky": flaky})
    assert uncaught.status == "error"
    assert uncaught.error.type == "ToolError"
    assert uncaught.error.line == 2


def test_tools_receive_only_json_values_whatever_the_code_passes():
    received = []

    def sink(value):
        received.append(value)
        return True

    code = (
        "sink({1: (2, 3), 'k': [None, 1.5, {'n': (True,)}]})\n"
        "for bad in [len, sink, ToolError('x'), {1, 2}, b'bytes', float('nan'), [[[[]]]]]:\n"
        "    try:\n"
        "        sink(bad)\n"
        "    except ToolError:\n"
        "        pass\n"
    )
    r = execute(code, tools={"sink": sink})
    assert r.status == "ok", r.error
    assert received[0] == {"1": [2, 3], "k": [None, 1.5, {"n": [True]}]}
    assert all(_only_json(v) for v in received)
    assert [v for v in received[1:] if v == [[[[]]]]] == [[[[[]]]]]
    assert len(received) == 2  # the function, stub, exception, set, bytes and NaN never left


def test_non_json_or_oversized_tool_results_become_tool_errors():
    def live_object():
        return {"data": threading.Lock()}

    def huge():
        return "x" * 5_000_000

    def nan():
        return float("nan")

    code = (
        "out = []\n"
        "for f in [live_object, huge, nan]:\n"
        "    try:\n"
        "        f()\n"
        "    except ToolError as e:\n"
        "        out.append(str(e))\n"
        "__result__ = out\n"
    )
    r = execute(code, tools={"live_object": live_object, "huge": huge, "nan": nan})
    assert r.status == "ok", r.error
    assert r.result == [
        "ToolCallError: live_object returned data is a lock, not a JSON value",
        "huge returned more than 4000000 bytes",
        "ToolCallError: nan returned data is nan, which JSON cannot carry",
    ]
    assert [c.status for c in r.tool_calls] == ["error"] * 3


RESULTS = {
    "jarvis": {"data": {"k": (1, 2)}, "instruction": "Say k."},
    "bare": [1, "x", None],
    "empty_instruction": {"data": 3, "instruction": ""},
    "chunk_and_data": {"data": {"stream_chunk": "<img>x</img>", "n": 1}, "instruction": "Show."},
    "not_jarvis": {"data": 1, "other": 2},
    "bad_instruction": {"data": 1, "instruction": 42},
    "int_keys": {1: "a"},
    "a_set": {"data": {1, 2}},
}


@pytest.mark.parametrize("kind", list(RESULTS))
def test_a_tool_result_means_the_same_in_the_sandbox_as_through_call_tool(kind):
    """One call path: the bridge normalizes with the tools package, errors included (a
    non-string instruction is an error of the call in both, never silently dropped)."""
    from jupyter_percent_agent.tools import call_tool

    def tool():
        return RESULTS[kind]

    direct_chunks, bridged_chunks = [], []
    try:
        direct = call_tool(tool, name="tool", on_chunk=lambda n, c: direct_chunks.append((n, c)))
    except Exception as exc:
        direct = f"{type(exc).__name__}: {exc}"
    code = "try:\n    __result__ = tool()\nexcept ToolError as e:\n    __result__ = str(e)\n"
    r = execute(code, tools={"tool": tool},
                on_chunk=lambda n, c: bridged_chunks.append((n, c)))  # fmt: skip
    assert r.status == "ok", r.error
    if isinstance(direct, str):
        assert r.result == direct
        assert r.tool_calls[0].status == "error"
        assert r.instructions == []
    else:
        assert r.result == direct["data"]
        assert r.instructions == ([direct["instruction"]] if direct["instruction"] else [])
    assert bridged_chunks == direct_chunks


def test_tool_call_cap_ends_a_run_that_calls_tools_thousands_of_times():
    count = [0]

    def ping():
        count[0] += 1
        return count[0]

    r = execute("for i in range(100000):\n    ping()\n", tools={"ping": ping}, timeout=20)
    assert r.status == "error"
    assert r.error.type == "ToolCallLimit"
    assert count[0] == len(r.tool_calls) == 256


def test_a_slow_sync_tool_counts_against_the_wall_clock():
    release = threading.Event()

    def slow():
        release.wait(10)
        return 1

    warm_pool(timeout=30)
    start = time.monotonic()
    r = execute("__result__ = slow()", tools={"slow": slow}, timeout=1.0)
    elapsed = time.monotonic() - start
    release.set()
    assert (r.status, r.reason) == ("error", "timeout")
    assert elapsed <= 2.0
    assert r.tool_calls
    assert (r.tool_calls[0].status, r.tool_calls[0].reason) == ("error", "timeout")


def test_a_slow_async_tool_is_cancelled_at_the_wall_clock():
    cancelled = []

    async def slow():
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    warm_pool(timeout=30)
    start = time.monotonic()
    r = execute("__result__ = slow()", tools={"slow": slow}, timeout=1.0)
    assert (r.status, r.reason) == ("error", "timeout")
    assert time.monotonic() - start <= 2.0
    assert cancelled == [True]


def test_a_mapping_of_tool_objects_is_treated_like_any_callables():
    class Tool:
        def __init__(self, fn, is_async=False):
            self.fn, self.is_async = fn, is_async

        def __call__(self, **kwargs):
            return self.fn(**kwargs)

    async def double(x):
        return 2 * x

    tools = {"inc": Tool(lambda x: x + 1), "double": Tool(double, is_async=True)}
    r = execute("__result__ = [inc(x=1), double(x=4), inc(1)]", tools=tools)
    assert r.status == "ok", r.error
    assert r.result == [2, 8, 2]


# --- a hostile child on the parent's end of the bridge -------------------------------------


def _run_hostile(mode: str, tools=None, timeout: float = 3.0, defined=()):
    proc = subprocess.Popen(
        [sys.executable, str(DATA / "hostile_worker.py"), mode],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        bufsize=0, start_new_session=True,
    )  # fmt: skip

    async def main():
        run = _Run(proc, ToolTable(tools, defined), None)
        try:
            job = {"t": "job", "code": "x = 1", "timeout": timeout, "memory_mb": 64,
                   "tools": run.table.names, "defined": run.table.defined_jobs}  # fmt: skip
            return await run.run(job, time.monotonic())
        finally:
            run.close()

    start = time.monotonic()
    result = asyncio.run(main())
    return result, time.monotonic() - start, proc


@pytest.mark.parametrize(
    "mode",
    ["garbage", "huge_header", "endless_bytes", "not_an_object", "deep_json", "flood_calls",
     "never_reads"],
)  # fmt: skip
def test_protocol_abuse_ends_the_run_quickly_as_a_protocol_error(mode):
    calls = []
    result, elapsed, proc = _run_hostile(mode, {"record": lambda x: calls.append(x)})
    assert result.status == "error"
    assert result.error.type == "ProtocolError", result.error
    assert elapsed < 3.0
    assert proc.poll() is not None  # killed and reaped
    assert len(calls) <= 1  # a second call sent before reading the first reply ends the run


def test_thousands_of_sequential_calls_stop_at_the_cap():
    calls = []
    result, _, _ = _run_hostile("many_calls", {"record": lambda x: calls.append(x)})
    assert result.error.type == "ToolCallLimit"
    assert len(calls) == 256


def test_hostile_calls_are_refused_in_the_parent_without_running_anything():
    calls = []
    result, _, _ = _run_hostile("bad_calls", {"record": lambda x: calls.append(x)})
    assert result.status == "ok", result.error
    assert calls == []
    assert all(answer == {"t": "reply", "ok": False, "error": answer["error"]}
               for answer in result.result)  # fmt: skip
    errors = [a["error"] for a in result.result]
    assert "no tool named" in errors[0] and "no tool named" in errors[1]
    assert "malformed" in errors[2] and "malformed" in errors[3]
    assert "larger than" in errors[4]
    assert all(r.status == "error" for r in result.tool_calls)


DEFINED = DefinedTool("tool", "def tool(x):\n    return x\n", description="A tool.",
                      parameters={"properties": {"x": {"type": "integer"}}})  # fmt: skip


@pytest.mark.parametrize(
    "mode",
    ["defined_end_first", "defined_double_begin", "defined_bad_report", "defined_big_report"],
)
def test_defined_tool_reports_out_of_turn_end_the_run_as_a_protocol_error(mode):
    result, elapsed, proc = _run_hostile(mode, defined=[DEFINED])
    assert (result.status, result.error.type) == ("error", "ProtocolError"), result.error
    assert elapsed < 3.0
    assert proc.poll() is not None
    assert all(r.status == "error" for r in result.tool_calls)  # none left not ended
    assert result.instructions == []


def test_bad_defined_tool_calls_are_refused_and_recorded_by_the_parent():
    result, _, _ = _run_hostile("defined_bad_begins", defined=[DEFINED])
    assert result.status == "ok", result.error
    errors = [a.get("error") for a in result.result]
    assert "no tool named 'nope'" in errors[0]
    assert "malformed" in errors[1]
    assert errors[2] == "could not load"
    assert "larger than" in errors[3]
    assert errors[4] == "tool: argument 'x' must be integer, not string"
    assert result.result[5] == {"t": "reply", "ok": True}
    statuses = [(r.name, r.status) for r in result.tool_calls]
    assert statuses == [("nope", "error")] + [("tool", "error")] * 5  # the last never ended
    assert "the run ended during the call" in result.tool_calls[-1].error


@pytest.mark.parametrize(
    ("mode", "status", "error_type"),
    [("bad_result", "error", "ResultError"), ("huge_result", "error", "ProtocolError"),
     ("odd_status", "error", "Error"), ("exit_early", "error", "Crashed")],
)  # fmt: skip
def test_bad_final_reports_become_errors(mode, status, error_type):
    result, elapsed, _ = _run_hostile(mode)
    assert (result.status, result.error.type) == (status, error_type)
    assert elapsed < 3.0


def test_forked_children_die_with_the_process_group_at_the_wall_clock():
    reported = []
    result, elapsed, _ = _run_hostile(
        "fork_and_hang", {"record": lambda x: reported.append(x)}, timeout=1.0
    )
    assert (result.status, result.reason) == ("error", "timeout")
    assert elapsed <= 3.0  # the wall clock plus one second, plus the hostile interpreter's start
    kids = reported[0]
    assert len(kids) == 20
    deadline = time.monotonic() + 3
    while any(_alive(pid) for pid in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in kids)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_parent_process_is_still_healthy_after_the_abuse():
    assert os.getpid() > 0
    r = execute("__result__ = add(1, 2)", tools={"add": lambda a, b: a + b})
    assert r.result == 3
