"""The parent's end of the tool bridge: validates calls from the sandbox and runs the tools.

Tools run in the calling process. A call arrives as JSON (positional and keyword arguments);
it is checked (known tool, argument types and size, call count), bound to the tool's
parameters, run (sync tools in a thread so the event loop and the wall clock keep going,
async tools and async generators in the loop), normalised (Jarvis ``{"data", "instruction"}``
or any JSON value) and answered with JSON. A tool that raises is answered with its message
only; the live exception never crosses.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import json
import keyword
import time
from collections.abc import Callable, Mapping
from typing import Any

from . import _limits
from ._names import RESERVED_NAMES
from ._types import ToolCallRecord

ChunkCallback = Callable[[str, Any], None]

# Not the loop's default executor: asyncio.run() waits for that one at exit, so a sync tool
# still running past the wall clock would hold the caller after the run has timed out.
_EXECUTOR = concurrent.futures.ThreadPoolExecutor(8, thread_name_prefix="sandbox-tool")


class ToolTable:
    """The tools of one run, by name, with the bookkeeping the parent keeps about calls."""

    def __init__(self, tools: Mapping[str, Any] | None) -> None:
        self._tools: dict[str, Any] = {}
        self._signatures: dict[str, inspect.Signature | None] = {}
        if tools is not None:
            if not isinstance(tools, Mapping):
                raise TypeError("tools must be a mapping of names to callables")
            for name, tool in tools.items():
                check_tool_name(name)
                if not callable(tool):
                    raise TypeError(f"tool {name!r} is not callable")
                self._tools[name] = tool
        self.records: list[ToolCallRecord] = []
        self.instructions: list[str] = []

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    @property
    def calls(self) -> int:
        return len(self.records)

    def _signature(self, name: str) -> inspect.Signature | None:
        if name not in self._signatures:
            tool = self._tools[name]
            sig = getattr(tool, "signature", None)  # tools.Tool carries its own
            if not isinstance(sig, inspect.Signature):
                sig = getattr(tool, "__signature__", None)
            if not isinstance(sig, inspect.Signature):
                target = getattr(tool, "func", None) or getattr(tool, "fn", None) or tool
                try:
                    sig = inspect.signature(target)
                except (TypeError, ValueError):
                    sig = None
            self._signatures[name] = sig
        return self._signatures[name]

    async def call(
        self, message: dict[str, Any], size: int, on_chunk: ChunkCallback | None
    ) -> dict[str, Any]:
        """Handle one ``call`` frame; the reply frame to send back."""
        name = message.get("name")
        args = message.get("args", [])
        kwargs = message.get("kwargs", {})
        shown_name = name if isinstance(name, str) else "?"
        shown_name = shown_name[:100]
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            return self._refuse(shown_name, {}, "malformed tool call")
        record_args = {"args": args, **kwargs} if args else dict(kwargs)
        if not isinstance(name, str) or name not in self._tools:
            return self._refuse(shown_name, {}, f"there is no tool named {shown_name!r}")
        if size > _limits.MAX_TOOL_ARGS_BYTES:
            return self._refuse(
                shown_name, {}, f"arguments larger than {_limits.MAX_TOOL_ARGS_BYTES} bytes"
            )
        try:
            kwargs = self._bind(name, args, kwargs)
        except TypeError as exc:
            return self._refuse(name, record_args, f"{name}: {exc}")
        return await self._run(name, kwargs, on_chunk)

    def _bind(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        sig = self._signature(name)
        if sig is None:
            if args:
                raise TypeError("call this tool with keyword arguments")
            return kwargs
        bound = sig.bind(*args, **kwargs)
        result: dict[str, Any] = {}
        for pname, value in bound.arguments.items():
            kind = sig.parameters[pname].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                result.update(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    raise TypeError("tools taking *args cannot be called from the sandbox")
            else:
                result[pname] = value
        return result

    def _refuse(self, name: str, args: dict[str, Any], error: str) -> dict[str, Any]:
        self.records.append(ToolCallRecord(name, args, 0.0, "error", error))
        return {"t": "reply", "ok": False, "error": error}

    async def _run(
        self, name: str, kwargs: dict[str, Any], on_chunk: ChunkCallback | None
    ) -> dict[str, Any]:
        tool = self._tools[name]
        start = time.monotonic()
        status, error = "success", None
        reply: dict[str, Any]
        try:
            value = await _invoke(tool, kwargs)
            data, instruction = await _collect(name, value, on_chunk)
            if instruction:
                self.instructions.append(instruction)
            reply = {"t": "reply", "ok": True, "data": data}
            try:
                size = len(json.dumps(reply, allow_nan=False))  # as framed: ASCII JSON
            except (TypeError, ValueError, RecursionError) as exc:
                raise _BadResult(f"{name} returned a value that is not JSON ({exc})") from None
            if size > _limits.MAX_TOOL_REPLY_BYTES:
                raise _BadResult(f"{name} returned more than {_limits.MAX_TOOL_REPLY_BYTES} bytes")
        except asyncio.CancelledError:
            self.records.append(
                ToolCallRecord(name, kwargs, time.monotonic() - start, "timeout", "cancelled")
            )
            raise
        except _BadResult as exc:
            status, error = "error", str(exc)
            reply = {"t": "reply", "ok": False, "error": error}
        except Exception as exc:
            status, error = "error", _message(exc)
            reply = {"t": "reply", "ok": False, "error": error}
        self.records.append(ToolCallRecord(name, kwargs, time.monotonic() - start, status, error))
        return reply


class _BadResult(Exception):
    pass


def check_tool_name(name: object) -> None:
    """A tool name must be a public identifier that does not hide a sandbox name."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"tool name {name!r} is not a Python identifier")
    if name.startswith("_"):
        raise ValueError(f"tool name {name!r} starts with '_'")
    if name in RESERVED_NAMES:
        raise ValueError(f"tool name {name!r} is reserved in the sandbox")


def _is_async(tool: Any) -> bool:
    if getattr(tool, "is_async", False) is True:
        return True
    return (
        inspect.iscoroutinefunction(tool)
        or inspect.isasyncgenfunction(tool)
        or inspect.iscoroutinefunction(getattr(tool, "__call__", None))  # noqa: B004
    )


async def _invoke(tool: Any, kwargs: dict[str, Any]) -> Any:
    if _is_async(tool):
        value = tool(**kwargs)
    else:
        context = contextvars.copy_context()
        call = functools.partial(context.run, tool, **kwargs)
        value = await asyncio.get_running_loop().run_in_executor(_EXECUTOR, call)
    if inspect.isawaitable(value):
        value = await value
    return value


def _normalize(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, Mapping) and "data" in value and set(value) <= {"data", "instruction"}:
        instruction = value.get("instruction")
        return value["data"], instruction if isinstance(instruction, str) else None
    return value, None


def _take_chunk(name: str, data: Any, on_chunk: ChunkCallback | None) -> tuple[Any, bool]:
    if isinstance(data, Mapping) and "stream_chunk" in data:
        if on_chunk is not None:
            try:
                on_chunk(name, data["stream_chunk"])
            except Exception:  # a broken display callback must not fail the tool call
                pass
        return {k: v for k, v in data.items() if k != "stream_chunk"} or None, True
    return data, False


async def _collect(name: str, value: Any, on_chunk: ChunkCallback | None) -> tuple[Any, str | None]:
    """The data and instruction of a tool's return value, streaming chunks on the way.

    Generators (async, or sync stepped in a thread) yield chunks; the last item that is not
    only a chunk (or a sync generator's return value) is the result.
    """
    if not (inspect.isasyncgen(value) or inspect.isgenerator(value)):
        data, instruction = _normalize(value)
        data, _ = _take_chunk(name, data, on_chunk)
        return data, instruction
    state: dict[str, Any] = {"data": None, "instruction": None}

    def absorb(item: Any) -> None:
        item_data, item_instruction = _normalize(item)
        item_data, was_chunk = _take_chunk(name, item_data, on_chunk)
        if item_instruction:
            state["instruction"] = item_instruction
        if not was_chunk or item_data:
            state["data"] = item_data

    if inspect.isasyncgen(value):
        async for item in value:
            absorb(item)
    else:
        loop = asyncio.get_running_loop()
        while True:
            done, item = await loop.run_in_executor(_EXECUTOR, _step, value)
            if done:
                if item is not None:
                    absorb(item)
                break
            absorb(item)
    return state["data"], state["instruction"]


def _step(generator: Any) -> tuple[bool, Any]:
    # StopIteration cannot cross a future: turn the end into a flag.
    try:
        return False, next(generator)
    except StopIteration as stop:
        return True, stop.value


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = ""
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text[: _limits.MAX_ERROR_CHARS]
