"""The parent's end of the tool bridge: checks calls from the sandbox and runs the tools.

Registry tools run in the calling process, through the tools package's one call path
(``Tool.arun``: binding, sync tools in its worker threads, async tools in the loop, stream
chunks, the normalized ``{"data", "instruction"}`` result). What this module adds is the
boundary: a ``call`` arrives as JSON (positional and keyword arguments) and is checked (known
tool, size, call count) before anything runs; the reply is JSON of bounded size; a tool that
raises is answered with its message only, so the live exception never crosses; a display
callback that fails does not fail the call.

Tools defined in the file run in the worker; the parent only sees each call announced
(``begin``, with its bound arguments: counted and checked against the tool's ``parameters``
before it runs) and reported (``end``: status, error, instruction, stream chunk, all bounded).
Anything else from the worker about them is a protocol violation that ends the run.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.outcome import Reason, RunStatus
from jupyter_percent_agent.tools import Tool, ToolArgumentError, as_tool

from . import _limits
from ._defined import DefinedTool
from ._names import check_tool_name
from ._types import ToolCallRecord

ChunkCallback = Callable[[str, Any], None]
_TOO_LARGE = f"arguments larger than {_limits.MAX_TOOL_ARGS_BYTES} bytes"


class BridgeViolation(PercentAgentError):
    """The worker broke the protocol about defined tools; the run ends."""

    error_kind = Kind.TOOL


class ToolTable:
    """The tools of one run, by name, with the bookkeeping the parent keeps about calls."""

    def __init__(
        self, tools: Mapping[str, Any] | None, defined: Iterable[DefinedTool] = ()
    ) -> None:
        self._tools: dict[str, Tool] = {}
        if tools is not None:
            if not isinstance(tools, Mapping):
                raise TypeError("tools must be a mapping of names to callables")
            for name, tool in tools.items():
                check_tool_name(name)
                if not callable(tool):
                    raise TypeError(f"tool {name!r} is not callable")
                self._tools[name] = as_tool(tool, name)
        self._defined: dict[str, DefinedTool] = {}
        for item in defined:
            if not isinstance(item, DefinedTool):
                raise TypeError("defined must hold sandbox.DefinedTool objects")
            if item.name in self._tools or item.name in self._defined:
                raise ValueError(f"two tools are named {item.name!r}")
            self._defined[item.name] = item
        if sum(len(d.source) for d in self._defined.values()) > _limits.MAX_CODE_CHARS:
            raise ValueError(f"defined tools longer than {_limits.MAX_CODE_CHARS} characters")
        # The defined tool running: its record's index (kept in call order), name, start.
        self._open: tuple[int, str, float] | None = None
        self.records: list[ToolCallRecord] = []
        self.instructions: list[str] = []

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    @property
    def defined_jobs(self) -> list[dict[str, str]]:
        return [d.job() for d in self._defined.values()]

    @property
    def calls(self) -> int:
        return len(self.records)

    def begin(self, message: dict[str, Any], size: int) -> dict[str, Any]:
        """Handle a ``begin`` frame (a defined tool is about to run); the reply to send."""
        if self._open is not None:
            raise BridgeViolation("a defined tool began while another was running")
        name, args, error = message.get("name"), message.get("args"), message.get("error")
        shown_name = name[:100] if isinstance(name, str) else "?"
        if not isinstance(name, str) or name not in self._defined:
            return self._refuse(shown_name, {}, f"there is no tool named {shown_name!r}")
        if not isinstance(args, dict) or not (error is None or isinstance(error, str)):
            return self._refuse(name, {}, "malformed tool call")
        if size > _limits.MAX_TOOL_ARGS_BYTES:
            return self._refuse(name, {}, _TOO_LARGE)
        if error is not None:  # it could not be loaded or bound: recorded as a failed call
            return self._refuse(name, args, error[: _limits.MAX_ERROR_CHARS])
        problem = self._defined[name].arguments_problem(args)
        if problem is not None:
            return self._refuse(name, args, f"{name}: {problem}")
        self._open = (len(self.records), name, time.monotonic())
        # not ended yet: ``end`` or ``settle`` (at the latest when the run ends) says how
        self.records.append(ToolCallRecord(name, args, 0.0, RunStatus.INTERRUPTED))
        return {"t": "reply", "ok": True}

    def end(self, message: dict[str, Any], size: int, on_chunk: ChunkCallback | None) -> None:
        """Handle an ``end`` frame: the defined tool that began has finished."""
        if self._open is None or message.get("name") != self._open[1]:
            raise BridgeViolation("a defined tool ended that had not begun")
        if size > _limits.MAX_TOOL_ARGS_BYTES:
            raise BridgeViolation("a defined tool's report is too large")
        status, error = message.get("status"), message.get("error")
        instruction, chunk = message.get("instruction"), message.get("chunk")
        if (
            status not in (RunStatus.OK, RunStatus.ERROR)
            or not (error is None or isinstance(error, str))
            or not (instruction is None or isinstance(instruction, str))
        ):
            raise BridgeViolation("a defined tool's report is malformed")
        name = self._open[1]
        if message.get("has_chunk") is True and on_chunk is not None:
            _shielded(on_chunk)(name, chunk)  # type: ignore[misc]
        if instruction:
            self.instructions.append(instruction)
        self._close(RunStatus(status), error[: _limits.MAX_ERROR_CHARS] if error else None)

    def settle(self, reason: Reason | None) -> None:
        """At the end of a run (``reason``: the limit that ended it): a defined tool still
        running is recorded as cut off, by that limit."""
        if self._open is not None:
            self._close(RunStatus.ERROR, f"the run ended during the call ({reason or 'error'})",
                        reason if reason is Reason.TIMEOUT else None)

    def _close(self, status: RunStatus, error: str | None, reason: Reason | None = None) -> None:
        assert self._open is not None
        index, _, start = self._open
        self._open = None
        record = self.records[index]
        self.records[index] = replace(
            record, duration=time.monotonic() - start, status=status, error=error, reason=reason
        )

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
            return self._refuse(shown_name, {}, _TOO_LARGE)
        tool = self._tools[name]
        try:
            kwargs = tool.keyword_arguments(args, kwargs)
        except ToolArgumentError as exc:
            return self._refuse(name, record_args, str(exc))
        return await self._run(tool, kwargs, on_chunk)

    def _refuse(self, name: str, args: dict[str, Any], error: str) -> dict[str, Any]:
        self.records.append(ToolCallRecord(name, args, 0.0, RunStatus.ERROR, error))
        return {"t": "reply", "ok": False, "error": error}

    async def _run(
        self, tool: Tool, kwargs: dict[str, Any], on_chunk: ChunkCallback | None
    ) -> dict[str, Any]:
        name = tool.name
        start = time.monotonic()
        status, error = RunStatus.OK, None
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
                ToolCallRecord(name, kwargs, time.monotonic() - start, RunStatus.ERROR,
                               "cancelled", Reason.TIMEOUT)
            )
            raise
        except _BadResult as exc:
            status, error = RunStatus.ERROR, str(exc)
            reply = {"t": "reply", "ok": False, "error": error}
        except Exception as exc:
            status, error = RunStatus.ERROR, _message(exc)
            reply = {"t": "reply", "ok": False, "error": error}
        self.records.append(ToolCallRecord(name, kwargs, time.monotonic() - start, status, error))
        return reply


class _BadResult(Exception):
    pass


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
