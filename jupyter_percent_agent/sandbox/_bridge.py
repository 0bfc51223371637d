"""The parent's end of the tool bridge: checks calls from the sandbox and runs the tools.

Tools run in the calling process, through the tools package's one call path (``Tool.arun``:
binding, sync tools in its worker threads, async tools in the loop, stream chunks, the
normalized ``{"data", "instruction"}`` result). What this module adds is the boundary: a call
arrives as JSON (positional and keyword arguments) and is checked (known tool, size, call
count) before anything runs; the reply is JSON of bounded size; a tool that raises is answered
with its message only, so the live exception never crosses; a display callback that fails
does not fail the call.
"""

from __future__ import annotations

import asyncio
import json
import keyword
import time
from collections.abc import Callable, Mapping
from typing import Any

from jupyter_percent_agent.tools import Tool, ToolArgumentError, as_tool

from . import _limits
from ._names import RESERVED_NAMES
from ._types import ToolCallRecord

ChunkCallback = Callable[[str, Any], None]


class ToolTable:
    """The tools of one run, by name, with the bookkeeping the parent keeps about calls."""

    def __init__(self, tools: Mapping[str, Any] | None) -> None:
        self._tools: dict[str, Tool] = {}
        if tools is not None:
            if not isinstance(tools, Mapping):
                raise TypeError("tools must be a mapping of names to callables")
            for name, tool in tools.items():
                check_tool_name(name)
                if not callable(tool):
                    raise TypeError(f"tool {name!r} is not callable")
                self._tools[name] = as_tool(tool, name)
        self.records: list[ToolCallRecord] = []
        self.instructions: list[str] = []

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    @property
    def calls(self) -> int:
        return len(self.records)

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
        tool = self._tools[name]
        try:
            kwargs = tool.keyword_arguments(args, kwargs)
        except ToolArgumentError as exc:
            return self._refuse(name, record_args, str(exc))
        return await self._run(tool, kwargs, on_chunk)

    def _refuse(self, name: str, args: dict[str, Any], error: str) -> dict[str, Any]:
        self.records.append(ToolCallRecord(name, args, 0.0, "error", error))
        return {"t": "reply", "ok": False, "error": error}

    async def _run(
        self, tool: Tool, kwargs: dict[str, Any], on_chunk: ChunkCallback | None
    ) -> dict[str, Any]:
        name = tool.name
        start = time.monotonic()
        status, error = "success", None
        reply: dict[str, Any]
        try:
            result = await tool.arun(kwargs, on_chunk=_shielded(on_chunk))
            reply = {"t": "reply", "ok": True, "data": result["data"]}
            try:
                size = len(json.dumps(reply, allow_nan=False))  # as framed: ASCII JSON
            except (TypeError, ValueError, RecursionError) as exc:  # deeper than to_json allows
                raise _BadResult(f"{name} returned a value that is not JSON ({exc})") from None
            if size > _limits.MAX_TOOL_REPLY_BYTES:
                raise _BadResult(f"{name} returned more than {_limits.MAX_TOOL_REPLY_BYTES} bytes")
            if result["instruction"]:
                self.instructions.append(result["instruction"])
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


def _shielded(on_chunk: ChunkCallback | None) -> ChunkCallback | None:
    """``on_chunk`` made harmless: a broken display callback must not fail the tool call."""
    if on_chunk is None:
        return None

    def call(name: str, chunk: Any) -> None:
        try:
            on_chunk(name, chunk)
        except Exception:
            pass

    return call


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = ""
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text[: _limits.MAX_ERROR_CHARS]
