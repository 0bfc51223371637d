"""The tool registry: loading toolboxes and entry points, refusing bad tools, calling every kind."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jupyter_percent_agent.tools import (
    ENTRY_POINT_GROUP,
    Registry,
    Tool,
    ToolArgumentError,
    ToolCallError,
    ToolLoadError,
    acall_tool,
    as_tool,
    call_tool,
    normalize_result,
    render_tool,
)


@pytest.fixture(scope="module")
def toolbox(data_dir: Path) -> Path:
    return data_dir / "toolbox"


@pytest.fixture(scope="module")
def registry(toolbox: Path) -> Registry:
    return Registry.load(toolbox, entry_points=False)


def chunks_of(registry: Registry, name: str, args: dict[str, Any]) -> tuple[list, dict]:
    seen: list[tuple[str, Any]] = []
    result = registry[name].run(args, on_chunk=lambda tool, chunk: seen.append((tool, chunk)))
    return seen, result


# ---- loading


def test_loads_public_functions_of_every_module(registry: Registry) -> None:
    assert registry.modules == {
        "camera": ["get_camera_live_url"],
        "text": ["word_count", "shout", "spell", "countdown", "divide"],
        "weather": ["get_weather", "forecast"],
    }
    assert "_lookup" not in registry  # private helper
    assert "floor" not in registry  # imported, not defined in the module
    assert len(registry) == 8


def test_modules_load_selectively_in_the_given_order(toolbox: Path) -> None:
    registry = Registry.load(toolbox, modules=["weather", "camera"], entry_points=False)
    assert list(registry) == ["get_weather", "forecast", "get_camera_live_url"]


def test_unknown_module_name_is_an_error_listing_the_known_ones(toolbox: Path) -> None:
    with pytest.raises(ToolLoadError, match=r"no tool module named 'drone' \(known: camera, text"):
        Registry.load(toolbox, modules=["drone"], entry_points=False)


def test_missing_toolbox_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ToolLoadError, match="does not exist"):
        Registry.load(tmp_path / "nowhere", entry_points=False)


def test_tool_metadata(registry: Registry) -> None:
    weather = registry["get_weather"]
    assert isinstance(weather, Tool)
    assert weather.module == "weather" and weather.path.endswith("weather.py")
    assert list(weather.signature.parameters) == ["city", "unit"]
    assert weather.doc.summary == "Get the current weather of a city."
    assert not weather.is_async and not weather.is_streaming
    assert registry["shout"].is_async and not registry["shout"].is_streaming
    assert registry["spell"].is_async and registry["spell"].is_streaming
    assert not registry["countdown"].is_async and registry["countdown"].is_streaming


@pytest.mark.parametrize(
    ("module", "tool", "problem"),
    [
        ("undocumented", "mystery", "missing docstring"),
        ("extra_arg", "area", "Args: documents 'depth', which is not a parameter"),
        ("missing_arg", "greet", "parameter 'greeting' not documented in Args:"),
        ("no_summary", "ping", "missing summary line"),
    ],
)
def test_badly_documented_tools_are_refused_naming_module_tool_and_problem(
    toolbox: Path, module: str, tool: str, problem: str
) -> None:
    with pytest.raises(ToolLoadError) as info:
        Registry.load(toolbox / "broken", modules=[module], entry_points=False)
    error = info.value
    assert (error.module, error.tool) == (module, tool)
    assert problem in error.problem
    assert f"module {module!r}, tool {tool!r}: " in str(error)
    assert str(error).startswith(str(toolbox / "broken" / f"{module}.py"))


def test_module_that_fails_to_import_names_file_line_and_error(toolbox: Path) -> None:
    with pytest.raises(ToolLoadError) as info:
        Registry.load(toolbox / "broken", modules=["import_error"], entry_points=False)
    message = str(info.value)
    assert "import_error.py" in message
    assert "(line 3)" in message
    assert "ModuleNotFoundError: No module named 'not_a_real_module_for_tce_tests'" in message


def test_module_with_a_syntax_error_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text('"""Bad."""\n\n\ndef oops(x:\n    return x\n')
    with pytest.raises(ToolLoadError, match=r"bad\.py, module 'bad': failed to import \(line 4\)"):
        Registry.load(tmp_path, entry_points=False)


def test_module_that_raises_at_import_does_not_leak_into_sys_modules(tmp_path: Path) -> None:
    import sys

    (tmp_path / "boom.py").write_text('"""Boom."""\nraise RuntimeError("no config")\n')
    before = set(sys.modules)
    with pytest.raises(ToolLoadError, match="RuntimeError: no config"):
        Registry.load(tmp_path, entry_points=False)
    assert set(sys.modules) == before


def test_two_toolboxes_with_the_same_file_name_stay_apart(tmp_path: Path) -> None:
    for name, value in (("a", 1), ("b", 2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "shared.py").write_text(
            f'def value() -> int:\n    """Return {value}."""\n    return {value}\n'
        )
    first = Registry.load(tmp_path / "a", entry_points=False)
    second = Registry.load(tmp_path / "b", entry_points=False)
    assert first["value"].run()["data"] == 1
    assert second["value"].run()["data"] == 2


def test_dunder_all_selects_the_tools(tmp_path: Path) -> None:
    (tmp_path / "reexport.py").write_text(
        textwrap.dedent(
            '''
            from statistics import median as _median
            __all__ = ["middle"]

            def middle(values: list) -> float:
                """The median.

                Args:
                    values: Numbers.
                """
                return _median(values)

            def helper(x: int) -> int:
                return x
            '''
        )
    )
    registry = Registry.load(tmp_path, entry_points=False)
    assert list(registry) == ["middle"]  # helper has no docstring but is not exported


def test_same_tool_name_in_two_modules_is_an_error(tmp_path: Path) -> None:
    for module in ("one", "two"):
        (tmp_path / f"{module}.py").write_text(
            'def ping() -> str:\n    """Ping."""\n    return "pong"\n'
        )
    with pytest.raises(ToolLoadError, match="defined twice, in module 'one' and in module 'two'"):
        Registry.load(tmp_path, entry_points=False)


# ---- entry points (a real distribution on sys.path, found by importlib.metadata)


@pytest.fixture
def installed_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "tce_sample_tools.py").write_text(
        textwrap.dedent(
            '''
            """Tools shipped by an installed package."""

            def roll(sides: int = 6) -> int:
                """Roll a die with a fixed seed.

                Args:
                    sides: Number of sides.

                Returns:
                    int: Always 4 (a fair choice).
                """
                return 4
            '''
        )
    )
    (site / "tce_broken_tools.py").write_text("raise ImportError('missing dependency foo')\n")
    dist = site / "tce_sample_tools-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tce-sample-tools\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\ndice = tce_sample_tools\nbroken = tce_broken_tools\n"
        "weather = tce_sample_tools\n"
    )
    monkeypatch.syspath_prepend(str(site))
    return site


def test_entry_point_modules_load_by_name(installed_tools: Path) -> None:
    registry = Registry.load(modules=["dice"])
    assert list(registry) == ["roll"]
    assert registry["roll"].module == "dice"
    assert registry["roll"].run({"sides": 20}) == {"data": 4, "instruction": None}


def test_entry_point_that_fails_to_import_is_an_error(installed_tools: Path) -> None:
    with pytest.raises(ToolLoadError, match=r"'broken'.*ImportError: missing dependency foo"):
        Registry.load(modules=["broken"])


def test_entry_points_can_be_switched_off(installed_tools: Path) -> None:
    with pytest.raises(ToolLoadError, match="no tool module named 'dice'"):
        Registry.load(modules=["dice"], entry_points=False)


def test_toolbox_module_shadows_an_entry_point_of_the_same_name(
    installed_tools: Path, toolbox: Path
) -> None:
    registry = Registry.load(toolbox, modules=["weather", "dice"])
    assert list(registry) == ["get_weather", "forecast", "roll"]


# ---- calling


def test_sync_tool_returns_plain_value_as_data(registry: Registry) -> None:
    assert registry["word_count"].run({"text": "to be or not to be"}) == {
        "data": 6,
        "instruction": None,
    }
    assert registry["word_count"](text="a b") == 2  # __call__ is the function itself


def test_jarvis_result_keeps_the_instruction(registry: Registry) -> None:
    assert registry["forecast"].run({"city": "Oslo", "days": 2}) == {
        "data": [4, 5],
        "instruction": "Present the forecast as a Markdown table with one row per day.",
    }


def test_async_tool_runs_from_sync_code(registry: Registry) -> None:
    assert registry["shout"].run({"text": "hi"}) == {"data": "HI", "instruction": None}


def test_async_tool_runs_from_inside_a_running_loop(registry: Registry) -> None:
    async def main() -> dict:
        return registry["shout"].run({"text": "inside"})

    assert asyncio.run(main())["data"] == "INSIDE"


def test_arun_awaits_any_kind_of_tool(registry: Registry) -> None:
    async def main() -> list:
        return [
            await registry["shout"].arun({"text": "x"}),
            await registry["word_count"].arun({"text": "a b c"}),
            await registry["countdown"].arun({"start": 1}),
        ]

    assert [r["data"] for r in asyncio.run(main())] == ["X", 3, "liftoff"]


def test_async_generator_streams_chunks_then_returns_the_last_result(registry: Registry) -> None:
    seen, result = chunks_of(registry, "spell", {"word": "abc"})
    assert seen == [("spell", "a"), ("spell", "b"), ("spell", "c")]
    assert result == {
        "data": ["a", "b", "c"],
        "instruction": "Tell the user how many letters the word has.",
    }


def test_sync_generator_streams_chunks_and_its_return_value_is_the_result(
    registry: Registry,
) -> None:
    seen, result = chunks_of(registry, "countdown", {"start": 3})
    assert [chunk for _, chunk in seen] == ["3...", "2...", "1..."]
    assert result == {"data": "liftoff", "instruction": None}


def test_stream_chunk_in_a_returned_result_goes_to_the_callback_not_the_code(
    registry: Registry,
) -> None:
    seen, result = chunks_of(registry, "get_camera_live_url", {"camera_id": "gate-1"})
    assert len(seen) == 1
    assert (
        seen[0][1].startswith("<video>\n{")
        and '"url": "rtsp://cameras.example/gate-1"' in seen[0][1]
    )
    assert result["data"] == {"url": "rtsp://cameras.example/gate-1"}
    assert result["instruction"].startswith("The video is already shown")


def test_chunks_arrive_before_the_tool_finishes() -> None:
    order: list[str] = []

    async def slow(n: int):
        for i in range(n):
            yield {"data": {"stream_chunk": i}}
            order.append(f"after {i}")
        yield "done"

    result = call_tool(slow, {"n": 2}, on_chunk=lambda _, chunk: order.append(f"chunk {chunk}"))
    assert order == ["chunk 0", "after 0", "chunk 1", "after 1"]
    assert result == {"data": "done", "instruction": None}


def test_bad_arguments_are_a_tool_argument_error(registry: Registry) -> None:
    with pytest.raises(ToolArgumentError, match="divide: missing a required argument: 'b'"):
        registry["divide"].run({"a": 1})
    with pytest.raises(ToolArgumentError, match="unexpected keyword argument 'c'"):
        registry["divide"].run({"a": 1, "b": 2, "c": 3})


def test_exceptions_of_the_tool_propagate_unchanged(registry: Registry) -> None:
    with pytest.raises(ZeroDivisionError):
        registry["divide"].run({"a": 1, "b": 0})
    with pytest.raises(ValueError, match="unknown city: Atlantis"):
        registry["get_weather"].run({"city": "Atlantis"})


def test_non_json_result_is_a_tool_call_error(toolbox: Path) -> None:
    registry = Registry.load(toolbox / "broken", modules=["bad_result"], entry_points=False)
    with pytest.raises(ToolCallError, match="tags returned data is a set, not a JSON value"):
        registry["tags"].run({"text": "a b"})


def test_call_tool_accepts_plain_callables_of_every_kind() -> None:
    async def coro(x: int) -> dict:
        return {"data": x * 2, "instruction": "double"}

    def gen():
        yield {"data": {"stream_chunk": "working"}}
        return [1, 2]

    chunks: list = []
    assert call_tool(lambda x: x + 1, {"x": 1}) == {"data": 2, "instruction": None}
    assert call_tool(coro, {"x": 2}) == {"data": 4, "instruction": "double"}
    assert call_tool(gen, name="gen", on_chunk=lambda n, c: chunks.append((n, c)))["data"] == [1, 2]
    assert chunks == [("gen", "working")]
    assert asyncio.run(acall_tool(coro, {"x": 5}))["data"] == 10


def test_a_call_with_positional_values_becomes_keyword_arguments() -> None:
    def search(query: str, limit: int = 5, *rest: str, **filters: str) -> list:
        """Search."""
        return []

    tool = as_tool(search)
    assert tool.keyword_arguments(["q"], {"lang": "en"}) == {"query": "q", "lang": "en"}
    assert tool.keyword_arguments(["q", 3]) == {"query": "q", "limit": 3}
    with pytest.raises(ToolArgumentError, match=r"search: \*rest cannot be filled"):
        tool.keyword_arguments(["q", 3, "extra"])
    with pytest.raises(ToolArgumentError, match="search: missing a required argument: 'query'"):
        tool.keyword_arguments([], {"limit": 1})


def test_as_tool_takes_a_wrapper_objects_signature_from_what_it_wraps() -> None:
    class Wrapper:  # a tool object of another library: called with keywords only
        def __init__(self, fn):
            self.fn = fn

        def __call__(self, **kwargs):
            return self.fn(**kwargs)

    async def double(x: int) -> int:
        return 2 * x

    class AsyncWrapper(Wrapper):
        async def __call__(self, **kwargs):
            return await self.fn(**kwargs)

    inc = as_tool(Wrapper(lambda x: x + 1), "inc")
    assert (inc.name, list(inc.signature.parameters)) == ("inc", ["x"])
    assert inc.keyword_arguments([1]) == {"x": 1}
    assert inc.run({"x": 1})["data"] == 2
    assert as_tool(AsyncWrapper(double), "double").is_async
    assert asyncio.run(as_tool(AsyncWrapper(double)).arun({"x": 4}))["data"] == 8
    registry_tool = Tool.from_function(_documented)
    assert as_tool(registry_tool) is registry_tool
    assert as_tool(registry_tool, "alias").name == "alias"


def _documented(x: int) -> int:
    """Return x.

    Args:
        x: a number
    """
    return x


def test_a_chunk_may_be_any_object_only_the_rest_must_be_json() -> None:
    class Frame:  # e.g. a streaming client's chunk object: shown, never returned
        pass

    frame = Frame()
    seen: list = []
    result = call_tool(lambda: {"data": {"stream_chunk": frame, "n": 1}}, name="cam",
                       on_chunk=lambda n, c: seen.append((n, c)))  # fmt: skip
    assert result == {"data": {"n": 1}, "instruction": None}
    assert seen == [("cam", frame)]


# ---- results


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"data": {"a": 1}, "instruction": "say hi"}, {"data": {"a": 1}, "instruction": "say hi"}),
        ({"data": {}, "instruction": ""}, {"data": {}, "instruction": None}),
        ({"data": [1, 2]}, {"data": [1, 2], "instruction": None}),
        ({"temperature": 3}, {"data": {"temperature": 3}, "instruction": None}),
        ({"data": 1, "extra": 2}, {"data": {"data": 1, "extra": 2}, "instruction": None}),
        ((1, "a", None), {"data": [1, "a", None], "instruction": None}),
        ("text", {"data": "text", "instruction": None}),
        (None, {"data": None, "instruction": None}),
    ],
)
def test_normalize_result(value: Any, expected: dict) -> None:
    assert normalize_result(value) == expected
    assert normalize_result(normalize_result(value)) == expected  # idempotent


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1, 2}, "data is a set"),
        ({"data": {"when": object()}}, "data['when'] is a object"),
        ({"data": [float("nan")]}, "data[0] is nan"),
        ({"data": {1: "a"}}, "key of type int"),
        ({"data": 1, "instruction": 5}, "instruction must be a string"),
    ],
)
def test_normalize_result_refuses_what_json_cannot_carry(value: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        normalize_result(value)


# ---- rendering


def test_render_tool_matches_the_seed_format(registry: Registry) -> None:
    assert render_tool(registry["divide"]) == textwrap.dedent(
        '''\
        def divide(a: float, b: float) -> float:
            """
            Divide a by b.

            Args:
                a: The dividend.
                b: The divisor; dividing by zero raises ZeroDivisionError.

            Returns:
                float: a / b.

            Example:
                >>> divide(1, 4)
                0.25
            """
            pass
        '''
    )


def test_render_shows_defaults_async_as_def_and_stream_result_type(registry: Registry) -> None:
    assert render_tool(registry["get_weather"]).startswith(
        "def get_weather(city: str, unit: str = 'celsius') -> dict:\n"
    )
    assert render_tool(registry["shout"]).startswith("def shout(text: str) -> str:\n")
    assert render_tool(registry["spell"]).startswith("def spell(word: str) -> list[str]:\n")


def test_render_keyword_only_and_docstring_types() -> None:
    def pick(items, *, count=1):
        """Pick items.

        Args:
            items (list[str]): The items.
            count (int): How many.
        """

    tool = Tool.from_function(pick)
    assert render_tool(tool).startswith("def pick(items: list[str], *, count: int = 1):\n")


def test_describe_lists_every_tool_under_the_header(registry: Registry) -> None:
    text = registry.describe()
    assert text.startswith("# ===== Available tools =====\n\ndef get_camera_live_url(")
    assert text.count("\ndef ") == len(registry)
    assert "\n\n\ndef word_count(text: str) -> int:\n" in text
    compile(text, "<describe>", "exec")  # the rendering is valid Python
    assert Registry().describe() == "# ===== Available tools =====\n\n# (no tools are available)\n"


def test_registry_from_functions_and_merged(registry: Registry) -> None:
    def ping() -> str:
        """Answer pong."""
        return "pong"

    extra = Registry.from_functions(ping, module="cells")
    merged = registry.merged(extra)
    assert list(merged)[-1] == "ping" and merged["ping"].module == "cells"
    with pytest.raises(ToolLoadError, match="defined twice"):
        merged.merged(extra)


def test_arun_keeps_the_event_loop_free_while_a_sync_tool_runs() -> None:
    import threading

    released = threading.Event()

    def wait_for_release() -> bool:
        """Wait until released."""
        return released.wait(timeout=30)

    tool = Tool.from_function(wait_for_release)

    async def main() -> dict:
        call = asyncio.ensure_future(tool.arun())
        await asyncio.sleep(0)
        released.set()  # runs only if the loop is not blocked by the tool
        return await call

    assert asyncio.run(main()) == {"data": True, "instruction": None}


def test_arun_steps_sync_generators_in_a_worker_and_chunks_in_the_loop_thread(
    registry: Registry,
) -> None:
    import threading

    chunk_threads: list[int] = []

    async def main() -> dict:
        return await registry["countdown"].arun(
            {"start": 2}, on_chunk=lambda _, __: chunk_threads.append(threading.get_ident())
        )

    assert asyncio.run(main()) == {"data": "liftoff", "instruction": None}
    assert chunk_threads == [threading.get_ident()] * 2


def test_a_single_module_name_given_as_a_string(toolbox: Path) -> None:
    assert list(Registry.load(toolbox, modules="camera", entry_points=False)) == [
        "get_camera_live_url"
    ]
