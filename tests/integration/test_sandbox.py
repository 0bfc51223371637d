"""Functional behaviour of ``jupyter_percent_agent.sandbox.execute`` against real workers."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from jupyter_percent_agent.sandbox import (
    SandboxResult,
    execute,
    execute_async,
    set_pool_size,
    shutdown_pool,
    warm_pool,
)


def test_result_is_the_json_value_of_dunder_result():
    r = execute("__result__ = {'a': (1, 2), 'b': [None, True, 1.5, 'x']}")
    assert r.status == "ok"
    assert r.result == {"a": [1, 2], "b": [None, True, 1.5, "x"]}
    assert r.error is None
    assert isinstance(r, SandboxResult)


def test_result_is_none_when_not_set_and_sets_become_lists():
    assert execute("x = 1").result is None
    assert sorted(execute("__result__ = {3, 1, 2}").result) == [1, 2, 3]


def test_non_json_result_is_an_error_naming_the_type():
    r = execute("def f():\n    pass\n__result__ = f")
    assert r.status == "error"
    assert r.error.type == "TypeError"
    assert "function" in r.error.message


def test_prints_inside_functions_and_loops_are_captured_in_order():
    code = (
        "print('start')\n"
        "def f(n):\n"
        "    for i in range(n):\n"
        "        print('in f', i, sep='-')\n"
        "class A:\n"
        "    def m(self):\n"
        "        print('in method', end='!\\n')\n"
        "f(2)\n"
        "A().m()\n"
        "print('end')\n"
    )
    r = execute(code)
    assert r.status == "ok", r.error
    assert r.stdout == "start\nin f-0\nin f-1\nin method!\nend\n"


def test_stdout_is_kept_when_the_code_fails_later():
    r = execute("print('before')\nx = 1 / 0\n")
    assert r.status == "error"
    assert r.stdout == "before\n"
    assert r.error.type == "ZeroDivisionError"
    assert r.error.line == 2


def test_runtime_error_line_is_the_line_in_the_given_code_even_inside_functions():
    code = "def f(x):\n    y = x + 1\n    return y['k']\n\nf(1)\n"
    r = execute(code)
    assert r.status == "error"
    assert r.error.type == "TypeError"
    assert r.error.line == 3


def test_syntax_error_reports_its_line():
    r = execute("x = 1\ny = (\n")
    assert r.status == "error"
    assert r.error.type == "SyntaxError"
    assert r.error.line == 2


def test_import_is_refused_with_a_message_naming_the_available_modules():
    r = execute("x = 1\nimport math\n__result__ = math.pi")
    assert r.status == "error"
    assert r.error.type == "CompileError"
    assert r.error.line == 2
    for name in ("math", "json", "datetime", "re", "random", "statistics"):
        assert name in r.error.message
    assert "already available" in r.error.message


def test_allow_listed_modules_are_usable_without_import():
    code = (
        "__result__ = [\n"
        "    math.sqrt(16), math.pi > 3,\n"
        "    json.loads(json.dumps({'k': [1, 2]}, sort_keys=True)),\n"
        "    datetime.date(2024, 2, 29).isoformat(),\n"
        "    (datetime.datetime(2024, 1, 2) - datetime.datetime(2024, 1, 1)).days,\n"
        "    datetime.now().year > 2000, datetime.parse('2024-05-01T10:00:00').hour,\n"
        "    datetime.datetime.strptime('2024-03-04', '%Y-%m-%d').month,\n"
        "    re.findall(r'\\d+', 'a1b22c333'), re.sub('a', 'b', 'aaa', flags=re.I),\n"
        "    statistics.mean([1, 2, 3, 4]), statistics.median([3, 1, 2]),\n"
        "]\n"
    )
    r = execute(code)
    assert r.status == "ok", r.error
    assert r.result == [4.0, True, {"k": [1, 2]}, "2024-02-29", 1, True, 10, 3,
                        ["1", "22", "333"], "bbb", 2.5, 2]  # fmt: skip


def test_date_and_time_formatting_works_in_the_sandbox():
    """C code in datetime and re imports time, _strptime and re through the frame's builtins."""
    code = (
        "d = datetime.date(2024, 3, 4)\n"
        "dt = datetime.datetime(2024, 3, 4, 5, 6, 7)\n"
        "t = datetime.time(8, 9)\n"
        "__result__ = [\n"
        "    d.strftime('%Y-%m-%d'), f'{d:%d.%m.%Y}', f'{dt:%H:%M:%S}', format(dt, '%j'),\n"
        "    t.strftime('%H:%M'), f'{t:%H.%M}', dt.timetuple()[0], d.timetuple().tm_yday,\n"
        "    datetime.date.today().year > 2000,\n"
        "    datetime.datetime.strptime('2024-03-04', '%Y-%m-%d').isoformat(),\n"
        "    re.compile('(a)(b)').sub(r'\\2\\1', 'xab'),\n"
        "    re.compile('(a)').search('a').expand(r'<\\1>'),\n"
        "]\n"
    )
    r = execute(code)
    assert r.status == "ok", r.error
    assert r.result == ["2024-03-04", "04.03.2024", "05:06:07", "064", "08:09", "08.09",
                        2024, 64, True, "2024-03-04T00:00:00", "xba", "<a>"]  # fmt: skip


def test_the_import_hook_c_code_uses_loads_nothing_and_returns_nothing():
    from jupyter_percent_agent.sandbox._runtime import INTERNAL_IMPORTS, build_builtins

    hook = build_builtins()["__import__"]
    for name in sorted(INTERNAL_IMPORTS):
        assert hook(name, None, None, ("x",), 0) is None
    for name in ("os", "sys", "builtins", "posix", "importlib", "time.x", "_thread"):
        with pytest.raises(ImportError):
            hook(name)


def test_the_allow_listed_modules_are_the_ones_bound_and_named_in_the_prompt():
    from jupyter_percent_agent import attp, sandbox
    from jupyter_percent_agent.sandbox._facades import build_facades

    assert tuple(build_facades()) == sandbox.ALLOWED_MODULES
    assert attp.ALLOWED_MODULES is sandbox.ALLOWED_MODULES
    assert ", ".join(sandbox.ALLOWED_MODULES) in attp.system_prompt()
    r = execute("__result__ = [str(m) for m in (" + ", ".join(sandbox.ALLOWED_MODULES) + ")]")
    assert r.result == [f"<module '{name}'>" for name in sandbox.ALLOWED_MODULES]


def test_random_is_a_private_seedable_generator():
    code = "random.seed(42)\n__result__ = [random.randint(1, 10**6) for _ in range(5)]"
    first, second = execute(code), execute(code)
    assert first.status == "ok"
    assert first.result == second.result
    assert 0 <= execute("__result__ = random.random()").result < 1


def test_builtins_for_containers_and_iteration_are_available():
    code = (
        "d = dict(a=1, b=2)\n"
        "s = set([1, 2]) | frozenset([3])\n"
        "__result__ = [sorted(d), list(zip([1, 2], 'ab')), min(3, 1), max([4, 5]), sum(s),\n"
        "    list(enumerate('xy')), any([0, 1]), all([]), list(reversed([1, 2])),\n"
        "    list(map(abs, [-1])), list(filter(None, [0, 2])), round(2.567, 1), len(tuple(s)),\n"
        "    isinstance(d, dict), next(iter([7]))]\n"
    )
    r = execute(code)
    assert r.status == "ok", r.error
    assert r.result == [["a", "b"], [[1, "a"], [2, "b"]], 1, 5, 6, [[0, "x"], [1, "y"]],
                        True, True, [2, 1], [1], [2], 2.6, 3, True, 7]  # fmt: skip


def test_augmented_assignment_classes_and_unpacking_work():
    code = (
        "class Counter:\n"
        "    def __init__(self):\n"
        "        self.n = 0\n"
        "    def add(self, k):\n"
        "        self.n = self.n + k\n"
        "c = Counter()\n"
        "total = 0\n"
        "for a, (b, d) in [(1, (2, 3)), (4, (5, 6))]:\n"
        "    total += a * b - d\n"
        "    c.add(1)\n"
        "items = []\n"
        "items += [1]\n"
        "x, *rest = [1, 2, 3]\n"
        "__result__ = [total, c.n, items, rest]\n"
    )
    r = execute(code)
    assert r.status == "ok", r.error
    assert r.result == [13, 2, [1], [2, 3]]


def test_augmented_assignment_to_items_slices_and_attributes_works():
    code = (
        "counts = {}\n"
        "for w in 'a b a c a'.split():\n"
        "    counts[w] = counts.get(w, 0)\n"
        "    counts[w] += 1\n"
        "d = {'x': {'y': 1}}\n"
        "d['x']['y'] *= 5\n"
        "lst = [1, 2, 3, 4]\n"
        "lst[1:3] += [9]\n"
        "lst[0] -= 10\n"
        "calls = []\n"
        "def key():\n"
        "    calls.append(1)\n"
        "    return 'k'\n"
        "once = {'k': 1}\n"
        "once[key()] += 1\n"
        "class C:\n"
        "    def __init__(self):\n"
        "        self.n = 0\n"
        "    def bump(self):\n"
        "        self.n += 2\n"
        "c = C()\n"
        "c.bump()\n"
        "__result__ = [counts, d, lst, once, len(calls), c.n]\n"
    )
    r = execute(code)
    assert r.status == "ok", r.error
    assert r.result == [{"a": 3, "b": 1, "c": 1}, {"x": {"y": 5}}, [-9, 2, 3, 9, 4], {"k": 2},
                        1, 2]  # fmt: skip
    missing = execute("x = {}\ny = 1\nx['k'] += 1\n")
    assert (missing.error.type, missing.error.line) == ("KeyError", 3)


def test_printed_output_cap_ends_the_run_with_output_limit():
    r = execute("while True:\n    print('x' * 100)\n")
    assert (r.status, r.reason) == ("error", "output_limit")
    assert 0 < len(r.stdout) <= 200_000


def test_timeout_ends_a_busy_loop_that_swallows_exceptions():
    r = execute("while True:\n    try:\n        pass\n    except BaseException:\n        pass\n",
                timeout=0.5)  # fmt: skip
    assert (r.status, r.reason) == ("error", "timeout")
    assert r.error.type == "Timeout"


def test_output_printed_before_a_timeout_is_kept():
    r = execute("print('step 1')\nfor i in range(3):\n    print('tick', i)\nwhile True:\n"
                "    pass\n", timeout=1.0)  # fmt: skip
    assert (r.status, r.reason) == ("error", "timeout")
    assert r.stdout.startswith("step 1\n")


def test_memory_limit_turns_a_huge_allocation_into_status_memory():
    r = execute("x = [0] * (300 * 1024 * 1024 // 8)\n__result__ = len(x)", memory_mb=64)
    assert (r.status, r.reason) == ("error", "memory")
    assert r.error.type == "MemoryError"
    ok = execute("x = [0] * (30 * 1024 * 1024 // 8)\n__result__ = len(x)", memory_mb=256)
    assert ok.status == "ok"


@pytest.mark.parametrize(
    "code",
    ["raise MemoryError('x')\n",
     "try:\n    raise MemoryError('x')\nexcept MemoryError as e:\n    raise e\n",
     "def f():\n    raise MemoryError\nsorted([2, 1], key=f)\n",
     "m = MemoryError\nraise m('x')\n",
     "class MemoryError(Exception):\n    pass\nraise MemoryError('x')\n"],
)  # fmt: skip
def test_code_raising_memory_error_itself_gets_an_ordinary_error_not_the_memory_status(code):
    r = execute(code)
    assert r.status == "error"
    assert r.error.type == "CompileError"
    assert '"MemoryError" is not available in the sandbox' in r.error.message


def test_a_real_out_of_memory_keeps_the_memory_status_when_caught_and_re_raised():
    code = (
        "try:\n"
        "    x = [0] * (300 * 1024 * 1024 // 8)\n"
        "except Exception as e:\n"
        "    print('caught', isinstance(e, ValueError))\n"
        "    raise e\n"
    )
    r = execute(code, memory_mb=64)
    assert (r.status, r.reason) == ("error", "memory")
    assert r.error.type == "MemoryError"
    assert r.stdout == "caught False\n"
    other = execute("class Full(Exception):\n    pass\nraise Full('memory')\n")
    assert (other.status, other.error.type) == ("error", "Full")


def test_worker_has_no_secrets_limits_and_descriptors(process_probe, monkeypatch):
    """A tool runs in the parent while the worker waits: look at the worker through /proc."""
    monkeypatch.setenv("PERCENT_AGENT_WORKER_SECRET", "do-not-leak-42")
    seen = {}

    def inspect_worker():
        for pid in process_probe.worker_pids():
            limits = process_probe.limits_of(pid)
            if limits["Max address space"] != "unlimited":  # the one that has its job
                seen["env"] = process_probe.environ_of(pid)
                seen["limits"] = limits
                seen["fds"] = sorted(int(f) for f in __import__("os").listdir(f"/proc/{pid}/fd"))
                seen["cwd"] = __import__("os").readlink(f"/proc/{pid}/cwd")
        return True

    r = execute("__result__ = inspect_worker()", tools={"inspect_worker": inspect_worker},
                memory_mb=128)  # fmt: skip
    assert r.status == "ok", r.error
    assert "PERCENT_AGENT_WORKER_SECRET" not in seen["env"]
    assert set(seen["env"]) <= {"PATH", "LANG", "LC_ALL"}
    assert seen["limits"]["Max file size"] == "0"
    assert seen["limits"]["Max core file size"] == "0"
    assert seen["limits"]["Max cpu time"] != "unlimited"
    assert int(seen["limits"]["Max address space"]) < 1024 * 1024 * 1024
    assert len(seen["fds"]) <= 6  # 0-2 on /dev/null, the two protocol pipes
    assert seen["cwd"] == "/"


def test_async_variant_runs_concurrently_and_returns_results():
    async def main():
        return await asyncio.gather(*(execute_async(f"__result__ = {i} * 2") for i in range(3)))

    results = asyncio.run(main())
    assert [r.result for r in results] == [0, 2, 4]


def test_cancelling_the_async_run_kills_the_worker_at_once(process_probe):
    async def main():
        task = asyncio.create_task(execute_async("while True:\n    pass\n", timeout=30))
        busy: set[int] = set()
        for _ in range(200):  # until the worker has its job (its limits are set then)
            await asyncio.sleep(0.05)
            busy = {p for p in process_probe.worker_pids()
                    if process_probe.limits_of(p)["Max address space"] != "unlimited"}  # fmt: skip
            if busy:
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return busy

    start = time.monotonic()
    busy = asyncio.run(main())
    assert len(busy) == 1
    assert not (busy & process_probe.worker_pids())  # gone when the cancelled call returns
    assert time.monotonic() - start < 15


def test_sync_execute_works_inside_a_running_event_loop():
    async def main():
        return execute("__result__ = 'from inside a loop'")

    assert asyncio.run(main()).result == "from inside a loop"


def test_pool_survives_successive_event_loops_and_is_cleaned_up(process_probe):
    set_pool_size(2)
    try:
        assert warm_pool(timeout=20)
        for i in range(3):
            r = asyncio.run(execute_async(f"__result__ = {i}"))
            assert r.result == i
        assert warm_pool(timeout=20)
        assert len(process_probe.worker_pids()) >= 2
        shutdown_pool()
        deadline = time.monotonic() + 5
        while process_probe.worker_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_probe.worker_pids() == set()
    finally:
        set_pool_size(2)


def test_without_a_pool_each_run_starts_a_fresh_worker(process_probe):
    set_pool_size(0)
    try:
        shutdown_pool()
        assert execute("__result__ = 1").result == 1
        deadline = time.monotonic() + 5
        while process_probe.worker_pids() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert process_probe.worker_pids() == set()
    finally:
        set_pool_size(2)


def test_importing_the_package_does_not_import_restrictedpython_in_the_parent():
    code = (
        "import sys\n"
        "import jupyter_percent_agent.sandbox as s\n"
        "r = s.execute('__result__ = 1')\n"
        "assert r.result == 1, r\n"
        "print('RestrictedPython' in sys.modules, 'RestrictedPython.Guards' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    "ending",
    ["sys.exit(0)",  # atexit kills the idle workers
     "os._exit(0)"],  # no atexit: the workers see their stdin close and leave by themselves
)  # fmt: skip
def test_pooled_workers_do_not_outlive_their_parent(ending):
    code = (
        "import os, sys\n"
        "import jupyter_percent_agent.sandbox as s\n"
        "from jupyter_percent_agent.sandbox._pool import POOL\n"
        "s.execute('__result__ = 1')\n"
        "s.warm_pool(20)\n"
        "print(' '.join(str(w.pid) for w in POOL._idle), flush=True)\n"
        f"{ending}\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        time.sleep(0.05)
    assert alive == []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_bad_arguments_are_refused_before_anything_runs():
    with pytest.raises(TypeError):
        execute(b"__result__ = 1")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        execute("x = 1", timeout=0)
    with pytest.raises(ValueError):
        execute("x = 1", tools={"_private": lambda: 1})
    with pytest.raises(ValueError):
        execute("x = 1", tools={"json": lambda: 1})
    with pytest.raises(TypeError):
        execute("x = 1", tools={"f": 42})
    assert execute("x = 1" + " " * 300_000).error.type == "CodeTooLong"


def test_odd_text_never_breaks_the_protocol():
    assert execute("x = 1\x00").error.type == "SyntaxError"
    assert execute("# \ud800\n__result__ = 1").error.type == "SyntaxError"

    def echo(s):
        return s + "\udc80"

    r = execute('x = "\\ud800 中文"\nprint(x)\n__result__ = [x, echo(x)]', tools={"echo": echo})
    assert r.status == "ok", r.error
    assert r.result == ["\ud800 中文", "\ud800 中文\udc80"]
    assert r.stdout == "\ud800 中文\n"


def test_a_pooled_worker_that_died_while_idle_is_replaced_transparently():
    import os
    import signal

    from jupyter_percent_agent.sandbox._pool import POOL

    set_pool_size(2)
    assert warm_pool(timeout=30)
    for proc in list(POOL._idle):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert execute("__result__ = 'still fine'").result == "still fine"
