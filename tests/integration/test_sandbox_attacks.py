"""The attack battery (shared/security/sandbox_attacks.json plus our own) against real runs.

Every snippet runs through the real ``execute`` (with the tools the attack defines, as
``[tool]`` cells would: ``"defined": [{"name", "source"}]``, code run in the sandbox too): none
may escape (no ``ESCAPED`` result, no
secret from the host environment, no file written), every limit case ends within the wall
clock plus one second, the outcome matches the expected class, and afterwards the host
process is unchanged and a normal run still succeeds.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
from pathlib import Path

import pytest

from jupyter_percent_agent.outcome import sandbox_word
from jupyter_percent_agent.sandbox import DefinedTool, execute, shutdown_pool, warm_pool
from tests.paths import ROOT, TEST_DATA

SHARED_ATTACKS = Path(os.environ.get("PERCENT_AGENT_SHARED", ROOT.parent / "shared"))
SHARED_ATTACKS = SHARED_ATTACKS / "security" / "sandbox_attacks.json"
OWN_ATTACKS = TEST_DATA / "sandbox" / "extra_attacks.json"
CANARY_NAME = "PERCENT_AGENT_SANDBOX_CANARY"
CANARY_VALUE = "canary-secret-7f3d9a"
CANARY_FILE = Path("/tmp/sandbox-escape-canary")
TIMEOUT = 1.5

COMPILE_TYPES = {"CompileError", "SyntaxError", "RecursionError", "MemoryError"}
OUTCOMES = {
    "harmless": {"success"},
    "compile_error": {"error"},
    "runtime_error": {"error", "output_limit"},
    "killed_by_limit": {"timeout", "memory", "cpu"},
    "output_limit": {"output_limit"},
    "any_limit": {"timeout", "memory", "cpu", "output_limit"},
}


def _load(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return json.loads(path.read_text())


ATTACKS = _load(SHARED_ATTACKS) + _load(OWN_ATTACKS)


def _host_fds(process_probe) -> dict[int, str]:
    """Open descriptors, less those of unclosed event loops.

    pytest's plugins (pytest-jupyter) create event loops between tests and leave them to the
    garbage collector; ``execute`` itself only uses ``asyncio.run``, which closes its loop.
    """
    gc.collect()
    fds = process_probe.open_fds()
    for loop in [o for o in gc.get_objects() if isinstance(o, asyncio.AbstractEventLoop)]:
        if loop.is_closed():
            continue
        for owner in (getattr(loop, "_selector", None), getattr(loop, "_ssock", None),
                      getattr(loop, "_csock", None)):  # fmt: skip
            if owner is not None:
                fds.pop(owner.fileno(), None)
    return fds


def _environment() -> dict[str, str]:
    # these are set by pytest and conftest per test, not by anything the battery runs
    per_test = ("PYTEST_CURRENT_TEST", "PERCENT_AGENT_CONFIG_DIR", "PERCENT_AGENT_CACHE_DIR")
    return {k: v for k, v in os.environ.items() if k not in per_test}


def add(a, b):
    """The one harmless tool the battery may call."""
    return a + b


@pytest.fixture(scope="module")
def host_snapshot(process_probe):
    """The canary secret is set in this process; what the host looked like before the runs."""
    os.environ[CANARY_NAME] = CANARY_VALUE
    CANARY_FILE.unlink(missing_ok=True)
    # One run first, so that what the first run creates lazily (event loop policy state, the
    # tool thread pool) is part of the baseline: the battery must not add anything beyond it.
    assert execute("__result__ = 0").ok
    shutdown_pool()
    snapshot = {
        "cwd": os.getcwd(),
        "env": _environment(),
        "fds": _host_fds(process_probe),
        "children": process_probe.child_pids(),
    }
    yield snapshot
    os.environ.pop(CANARY_NAME, None)


def test_battery_is_loaded(shared_dir):
    assert len(_load(shared_dir / "security" / "sandbox_attacks.json")) >= 50
    assert len(_load(OWN_ATTACKS)) >= 40
    assert sum("defined" in a for a in _load(OWN_ATTACKS)) >= 15


@pytest.mark.parametrize("attack", ATTACKS, ids=[a["id"] for a in ATTACKS])
def test_attack_does_not_escape(attack, host_snapshot):
    warm_pool(timeout=30)  # a pre-started worker, so the clock below is the run's own
    start = time.monotonic()
    defined = [DefinedTool(d["name"], d["source"], description=d.get("description", "A tool."))
               for d in attack.get("defined", [])]  # fmt: skip
    result = execute(attack["code"], tools={"add": add}, defined=defined, timeout=TIMEOUT)
    elapsed = time.monotonic() - start

    seen = json.dumps(result.to_json(), default=str)
    assert not (isinstance(result.result, str) and result.result.startswith("ESCAPED")), seen
    assert CANARY_VALUE not in seen
    assert not CANARY_FILE.exists()
    assert elapsed <= TIMEOUT + 1.0, f"{attack['id']} took {elapsed:.2f} s"

    expect = attack["expect"]
    word = sandbox_word(result.status, result.reason)  # the word a message file keeps
    assert word in OUTCOMES[expect], f"{attack['id']}: {word} {result.error}"
    if expect == "compile_error":
        assert result.error.type in COMPILE_TYPES, result.error
    if expect == "runtime_error" and result.status == "error":
        assert result.error.type not in {"CompileError", "SyntaxError"}, result.error
    if expect == "harmless":
        assert result.error is None


def test_host_unchanged_after_battery(host_snapshot, process_probe):
    normal = execute("__result__ = sum(range(10))\nprint('ok')")
    assert normal.ok
    assert normal.result == 45
    assert normal.stdout == "ok\n"

    shutdown_pool()
    deadline = time.monotonic() + 5.0
    while process_probe.worker_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_probe.worker_pids() == set()
    assert process_probe.child_pids() <= host_snapshot["children"]
    assert os.getcwd() == host_snapshot["cwd"]
    assert _environment() == host_snapshot["env"]
    assert _host_fds(process_probe) == host_snapshot["fds"]
