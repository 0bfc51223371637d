"""Tools written in a message file ([tool] cells): untrusted code that runs only in the sandbox.

Every run here is a real sandbox worker; the registry tools are the real ``tools.Registry`` of
tests/data/sandbox/toolbox. The escape attempts from a tool's code are in the attack battery
(tests/data/sandbox/extra_attacks.json, the ``D-`` entries).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import pytest

from jupyter_percent_agent.sandbox import (
    DefinedTool,
    call_defined,
    call_defined_async,
    execute,
)
from jupyter_percent_agent.tools import Registry, ToolArgumentError, ToolLoadError
from tests.paths import TEST_DATA

DATA = TEST_DATA / "sandbox"

# Seed 000, "工具作为特殊 Agent", as written.
SEED_SOURCE = '''def get_weather(city: str) -> str:
    """获取指定城市的天气信息"""
    return f"{city} 25°C 晴朗"
'''


@pytest.fixture(scope="module")
def weather() -> DefinedTool:
    return DefinedTool("weather", SEED_SOURCE, description="获取天气信息")


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.load(DATA / "toolbox", entry_points=False)


def test_the_seed_tool_works_as_written(weather: DefinedTool) -> None:
    assert weather.function == "get_weather"
    assert weather.stub.startswith("def weather(city: str) -> str:\n")
    direct = call_defined(weather, json.loads('{"city":"北京"}'))  # [tool_call] args='{...}'
    assert (direct.status, direct.result) == ("ok", "北京 25°C 晴朗")
    [record] = direct.tool_calls
    assert (record.name, record.args, record.status) == ("weather", {"city": "北京"}, "ok")
    from_code = execute('__result__ = [weather("北京"), weather(city="Oslo")]', defined=[weather])
    assert from_code.status == "ok", from_code.error
    assert from_code.result == ["北京 25°C 晴朗", "Oslo 25°C 晴朗"]
    assert [c.args for c in from_code.tool_calls] == [{"city": "北京"}, {"city": "Oslo"}]


def test_model_code_calls_a_defined_tool_and_a_registry_tool_in_one_run(
    weather: DefinedTool, registry: Registry
) -> None:
    report = DefinedTool("report", (
        "def report(city, temperature):\n"
        "    return {'data': f'{city}: {temperature:.1f}', 'instruction': 'Read it aloud.'}\n"
    ), description="Format a report.")  # fmt: skip
    code = (
        "total = add(20, 5)['sum']\n"
        "__result__ = [weather('Oslo'), report('Oslo', total), countdown(1)]\n"
    )
    chunks: list = []
    r = execute(code, tools=registry, defined=[weather, report],
                on_chunk=lambda name, chunk: chunks.append((name, chunk)))  # fmt: skip
    assert r.status == "ok", r.error
    assert r.result == ["Oslo 25°C 晴朗", "Oslo: 25.0", {"done": True}]
    assert [(c.name, c.status) for c in r.tool_calls] == [
        ("add", "ok"), ("weather", "ok"), ("report", "ok"),
        ("countdown", "ok")]  # fmt: skip
    assert r.instructions == ["Tell the user the sum.", "Read it aloud.", "Say liftoff."]
    assert chunks == [("countdown", "1...")]


def test_a_defined_tool_returns_like_a_registry_tool(registry: Registry) -> None:
    source = (
        "def camera(device: str):\n"
        "    url = 'rtsp://' + device\n"
        "    print('opening', device)\n"
        "    tag = '<video>' + json.dumps({'url': url}) + '</video>'\n"
        "    return {'data': {'stream_chunk': tag, 'url': url, 'pair': (1, 2)},\n"
        "            'instruction': 'Show the video.'}\n"
    )
    camera = DefinedTool("camera", source, description="Open a camera.")
    chunks: list = []
    r = execute("__result__ = camera('cam1')", defined=[camera],
                on_chunk=lambda name, chunk: chunks.append((name, chunk)))  # fmt: skip
    assert r.status == "ok", r.error
    assert r.result == {"url": "rtsp://cam1", "pair": [1, 2]}
    assert r.instructions == ["Show the video."]
    assert chunks == [("camera", '<video>{"url": "rtsp://cam1"}</video>')]
    assert r.stdout == "opening cam1\n"
    bad = DefinedTool("bad", "def bad():\n    return {'data': 1, 'instruction': 3}\n",
                      description="Bad.")  # fmt: skip
    failed = execute("__result__ = bad()", defined=[bad])
    assert failed.error.type == "ToolError"
    assert "instruction must be a string" in failed.error.message


def test_a_defined_tool_may_call_registry_tools_and_use_the_allow_listed_modules(
    registry: Registry,
) -> None:
    source = (
        "def stamp(y: int, m: int, d: int) -> str:\n"
        "    day = datetime.date(y, m, d)\n"
        "    return f'{day:%Y-%m-%d} ' + str(add(y, math.floor(1.5))['sum'])\n"
    )
    stamp = DefinedTool("stamp", source, description="Stamp a date.")
    r = call_defined(stamp, {"y": 2024, "m": 3, "d": 4}, tools=registry)
    assert (r.status, r.result) == ("ok", "2024-03-04 2025")
    assert [c.name for c in r.tool_calls] == ["stamp", "add"]
    assert r.instructions == ["Tell the user the sum."]


def test_a_defined_tool_that_raises_gives_the_caller_a_tool_error_with_message_and_line() -> None:
    source = (
        "def check(n):\n    if n < 0:\n        raise ValueError(f'{n} is negative')\n    return n\n"
    )
    check = DefinedTool("check", source, description="Check a number.")
    code = (
        "try:\n"
        "    check(-1)\n"
        "except ToolError as e:\n"
        "    caught = str(e)\n"
        "__result__ = [caught, check(2)]\n"
    )
    r = execute(code, defined=[check])
    assert r.status == "ok", r.error
    assert r.result == ["ValueError: -1 is negative (line 3 of tool 'check')", 2]
    assert [(c.status, c.error) for c in r.tool_calls] == [
        ("error", "ValueError: -1 is negative (line 3 of tool 'check')"),
        ("ok", None),
    ]
    uncaught = execute("x = 1\ncheck(-5)\n", defined=[check])
    assert (uncaught.status, uncaught.error.type, uncaught.error.line) == ("error", "ToolError", 2)
    direct = call_defined(check, {"n": -2})
    assert (direct.status, direct.error.type) == ("error", "ToolError")
    assert direct.error.message == "ValueError: -2 is negative (line 3 of tool 'check')"


def test_a_defined_tool_and_the_model_code_share_no_names_and_exchange_json_copies() -> None:
    source = (
        "seen = []\n"
        "def keep_items(items, scale=1):\n"
        "    items.append('tool')\n"
        "    seen.append(len(seen))\n"
        "    try:\n"
        "        mine\n"
        "    except NameError:\n"
        "        seen.append('no mine')\n"
        "    return {'items': items, 'seen': seen, 'scale': scale}\n"
    )
    keep = DefinedTool("keep", source, description="Keep items.")
    code = (
        "mine = ['model']\n"
        "first = keep(mine)\n"
        "first['seen'].append('changed by the model')\n"
        "second = keep(mine, scale=(2, 3))\n"
        "missing = []\n"
        "try:\n"
        "    seen\n"
        "except NameError:\n"
        "    missing.append('seen')\n"
        "try:\n"
        "    keep_items\n"
        "except NameError:\n"
        "    missing.append('keep_items')\n"
        "__result__ = [mine, first, second, missing]\n"
    )
    r = execute(code, defined=[keep])
    assert r.status == "ok", r.error
    assert r.result == [
        ["model"],  # the tool appended to its own copy
        {"items": ["model", "tool"], "seen": [0, "no mine", "changed by the model"], "scale": 1},
        {"items": ["model", "tool"], "seen": [0, "no mine", 2, "no mine"], "scale": [2, 3]},
        ["seen", "keep_items"],
    ]


def test_arguments_are_checked_against_the_cells_parameters(weather: DefinedTool) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"},
              "days": {"type": "integer"}}, "required": ["city"]}  # fmt: skip
    source = "def forecast(city, days=1):\n    return [city] * days\n"
    forecast = DefinedTool("forecast", source, description="Forecast.",
                           parameters=json.dumps(schema))  # fmt: skip
    assert forecast.parameters == schema
    code = (
        "out = []\n"
        "for args in [{}, {'city': 3}, {'city': 'Oslo', 'days': 'two'}, {'city': 'Oslo'}]:\n"
        "    try:\n"
        "        out.append(forecast(**args))\n"
        "    except ToolError as e:\n"
        "        out.append(str(e))\n"
        "__result__ = out + [forecast('Rome', 2)]\n"
    )
    r = execute(code, defined=[forecast])
    assert r.status == "ok", r.error
    assert r.result == [
        "forecast: missing a required argument: 'city'",  # the signature, in the worker
        "forecast: argument 'city' must be string, not integer",  # the parameters, in the parent
        "forecast: argument 'days' must be integer, not string",
        ["Oslo"],
        ["Rome", "Rome"],
    ]
    for bad, problem in [({"days": 2}, "missing required argument 'city'"),
                         ({"city": "x", "hours": 1}, "got an unexpected keyword argument 'hours'"),
                         ({"city": {1, 2}}, "arguments['city'] is a set"),
                         (["Oslo"], "arguments must be a JSON object")]:  # fmt: skip
        with pytest.raises(ToolArgumentError, match=re.escape(problem)):
            call_defined(forecast, bad)  # refused before any worker is asked
    with pytest.raises(ToolArgumentError, match="weather: missing a required argument"):
        asyncio.run(call_defined_async(weather, {}))


def test_a_broken_definition_fails_before_anything_runs() -> None:
    with pytest.raises(ToolLoadError, match=r"tool 'w': syntax error \(line 2\)"):
        DefinedTool("w", "def w():\n    return (\n", description="W.")
    with pytest.raises(ToolLoadError, match="tool 'json': tool name 'json' is reserved"):
        DefinedTool("json", SEED_SOURCE, description="W.")
    with pytest.raises(ToolLoadError, match="parameters is not JSON"):
        DefinedTool("w", SEED_SOURCE, description="W.", parameters="{city}")
    with pytest.raises(ToolLoadError, match="longer than"):
        DefinedTool("w", "#" * 300_000 + "\n" + SEED_SOURCE, description="W.")
    weather = DefinedTool("weather", SEED_SOURCE, description="W.")
    with pytest.raises(ValueError, match="two tools are named 'weather'"):
        execute("x = 1", tools={"weather": len}, defined=[weather])
    with pytest.raises(TypeError, match="DefinedTool"):
        execute("x = 1", defined=[{"name": "weather", "source": SEED_SOURCE}])


def test_code_the_sandbox_refuses_fails_the_call_and_stays_failed() -> None:
    source = "import os\n\ndef env():\n    return dict(os.environ)\n"
    env = DefinedTool("env", source, description="The environment.")
    code = (
        "out = []\n"
        "for _ in range(2):\n"
        "    try:\n"
        "        env()\n"
        "    except ToolError as e:\n"
        "        out.append(str(e))\n"
        "__result__ = out\n"
    )
    r = execute(code, defined=[env])
    assert r.status == "ok", r.error
    assert len(r.result) == 2 and r.result[0] == r.result[1]
    assert r.result[0].startswith("tool 'env' could not be loaded: CompileError: Line 1: import ")
    assert [c.status for c in r.tool_calls] == ["error", "error"]


def test_the_parent_never_runs_a_defined_tools_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    os.environ["PERCENT_AGENT_TOOL_CANARY"] = "tool-canary-5e1"
    try:
        source = (
            f"with open({str(marker)!r}, 'w') as f:\n"
            "    f.write('ran')\n"
            "def leak():\n"
            "    return 'x'\n"
        )
        leak = DefinedTool("leak", source, description="Leak.")
        assert not marker.exists()  # described from its syntax tree only
        r = execute("__result__ = leak()", defined=[leak])
        assert (r.status, r.error.type) == ("error", "ToolError")
        assert "name 'open' is not defined" in r.error.message
        assert not marker.exists()
        assert "tool-canary-5e1" not in json.dumps(r.to_json())
    finally:
        os.environ.pop("PERCENT_AGENT_TOOL_CANARY", None)


def test_a_run_cut_during_a_defined_call_records_the_call_as_cut_off() -> None:
    spin = DefinedTool("spin", "def spin():\n    while True:\n        pass\n",
                       description="Spin.")  # fmt: skip
    r = execute("spin()", defined=[spin], timeout=1.0)
    assert (r.status, r.reason) == ("error", "timeout")
    assert [(c.name, c.status, c.reason) for c in r.tool_calls] == [("spin", "error", "timeout")]


def test_defined_calls_count_against_the_call_cap() -> None:
    ping = DefinedTool("ping", "def ping(i):\n    return i\n", description="Ping.")
    r = execute("for i in range(1000):\n    ping(i)\n", defined=[ping], timeout=20)
    assert (r.status, r.error.type) == ("error", "ToolCallLimit")
    assert len(r.tool_calls) == 256
