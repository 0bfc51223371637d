"""Cells that run without a model: a Python ``[code]`` cell in the sandbox (an untrusted
folder's, ``runtime.code`` decides), ``[tool_call]`` and ``[toolchain]`` straight to the
tools."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.outcome import sandbox_word
from jupyter_percent_agent.runtime.attp_loop import to_json_text
from jupyter_percent_agent.runtime.events import Chunk
from jupyter_percent_agent.runtime.run import Run
from jupyter_percent_agent.runtime.toolset import Toolset, tool_cell_tools

CODE_TIMEOUT = 30.0


async def run_in_sandbox(cell: Mapping[str, Any], emit: Callable[[dict[str, Any]], Any],
                         next_id: Callable[[], str], *,
                         timeout: float = CODE_TIMEOUT) -> tuple[str, str] | None:
    """Run a Python ``[code]`` cell's first fence in the sandbox; stdout, its ``__result__``
    (an ``execute_result``) and errors become ``[python]`` outputs given to ``emit`` (ids
    from ``next_id``). Returns the error's (type, one line) when it failed."""
    from jupyter_percent_agent import sandbox

    result = await sandbox.execute_async(fmt.message_text(cell), timeout=timeout)
    # the word every version wrote for the run (success, error, timeout...)
    meta = {"status": sandbox_word(result.status, result.reason),
            "duration": round(result.duration, 3)}

    def stream(name: str, text: str) -> None:
        # nbformat keeps stdout and stderr as separate outputs: each gets its own ID.n
        emit(fmt.stream_output(name, text, out_id=next_id(), attrs=meta))

    if result.stdout:
        stream("stdout", result.stdout)
    if result.ok and result.result is not None:
        # the cell's value (__result__), as Jupyter shows a cell's value: Out[n]
        emit(fmt.result_output(to_json_text(result.result), out_id=next_id(), attrs=meta))
    if result.error is not None:
        stream("stderr", str(result.error) + "\n")
        return result.error.type or "SandboxError", str(result.error)
    return None


def _args(value: Any) -> dict[str, Any]:
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, not {value!r}")
    return value


async def run_tool_cell(cell: Mapping[str, Any], run: Run, base_dir: Path | None,
                        nb: Mapping[str, Any]) -> None:
    """Call a tool (``[tool_call] tool="x" args='{...}'``) or a chain of them
    (``[toolchain] tools=[...] params='{...}'``, each result's data feeding the next)."""
    attrs = fmt.cell_attrs(cell)
    kind = fmt.cell_kind(cell)
    names = [attrs.get("tool")] if kind == "tool_call" else list(attrs.get("tools") or [])
    try:
        toolset = tool_cell_tools(names, base_dir, nb)
        args = _args(attrs.get("args") if kind == "tool_call" else attrs.get("params"))
        timeout = trust.bound("tool_timeout", attrs.get("timeout"), folder=base_dir)
    except trust.TrustError:
        raise  # the front end says what was refused and how to allow it
    except Exception as exc:  # bad arguments or a toolbox that does not load
        run.fail(type(exc).__name__, str(exc))
        run.emit(fmt.error_output(type(exc).__name__, str(exc), [],
                                  out_id=run.next_output_id()))
        return
    data: Any = args
    for i, name in enumerate(names):
        started = time.monotonic()
        status, text = "success", ""
        try:
            data, instruction = await _call(toolset, name, data, first=not i, run=run,
                                            timeout=float(timeout.value or 0))
            # a text result reads as written (seed 000: "北京 25°C 晴朗"); data as JSON
            text = data if isinstance(data, str) else to_json_text(data)
            if instruction:
                text += "\n\nInstruction: " + instruction
        except Exception as exc:
            kind = exc.kind if isinstance(exc, SandboxFailure) else type(exc).__name__
            status, text = "fail", f"{kind}: {exc}"
            run.fail(kind, text)
        shown: dict[str, Any] = {"tool": name,
                                 "duration": round(time.monotonic() - started, 3)}
        if timeout.lowered:  # the file asked for more time than it may have: say so
            shown["limits"] = timeout.describe()
        run.emit(fmt.tool_result_output(text, out_id=run.next_output_id(), status=status,
                                        attrs=shown))
        if status != "success":
            return
    run.answer(to_json_text(data))


class SandboxFailure(PercentAgentError):
    """A tool defined in the file failed in the sandbox (``kind``: the error's type there)."""

    error_kind = Kind.TOOL

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


async def _call(toolset: Toolset, name: Any, data: Any, *, first: bool, run: Run,
                timeout: float) -> tuple[Any, str | None]:
    """Call one tool of a ``[tool_call]``/``[toolchain]`` cell: (its data, its instruction).
    A tool defined in the file runs in the sandbox; an installed or toolbox one here."""
    from jupyter_percent_agent import sandbox

    def chunk(tool: str, value: Any) -> None:
        run.tell(Chunk(tool, value))

    if name in toolset.defined:
        tool = toolset.defined[name]
        res = await sandbox.call_defined_async(
            tool, data if first else _chain_args(tool, data), tools=toolset.registry,
            timeout=timeout, on_chunk=chunk)
        if res.error is not None:
            raise SandboxFailure(res.error.type, res.error.message)
        return res.result, "\n".join(res.instructions) or None
    if name not in toolset.registry:
        known = ", ".join(sorted(toolset.names())) or "none"
        raise KeyError(f"no tool named {name!r} (known: {known})")
    tool = toolset.registry[name]
    call = asyncio.ensure_future(tool.arun(data if first else _chain_args(tool, data),
                                           on_chunk=chunk))
    try:
        result = await asyncio.wait_for(call, timeout)
    except TimeoutError:
        if not call.cancelled():  # the tool's own TimeoutError: its words
            raise
        raise TimeoutError(f"{name} did not return within {timeout:g} s (tool_timeout)") from None
    return result["data"], result.get("instruction")


def _chain_args(tool: Any, value: Any) -> dict[str, Any]:
    """The arguments a chained tool gets from the previous result: a JSON object whose keys
    the tool accepts as keyword arguments, anything else as its first parameter."""
    params = tool.signature.parameters
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    if isinstance(value, dict) and (takes_kwargs or set(value) <= set(params)):
        return value
    names = [n for n, p in params.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return {names[0]: value} if names else {}
