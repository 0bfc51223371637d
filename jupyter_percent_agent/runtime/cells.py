"""Cells that run without a model: ``[code]`` in the sandbox, ``[tool_call]`` and
``[toolchain]`` straight to the tools."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.session import (
    TOOL_CELLS,
    CellRun,
    OnEvent,
    RunOptions,
    _next_n,
    to_json_text,
    tools_for,
)


def _emit(run: CellRun, on_event: OnEvent, out: dict[str, Any]) -> None:
    run.outputs.append(out)
    on_event("output", out)


async def run_code_cell(cell: Mapping[str, Any], run: CellRun, on_event: OnEvent,
                        *, timeout: float = 30.0) -> None:
    """Run a ``[code]`` cell's first fence in the sandbox; stdout and errors become
    ``[python]`` outputs ``ID.n``."""
    from jupyter_percent_agent import sandbox

    attrs = fmt.cell_attrs(cell)
    lang = str(attrs.get("language") or "python").lower()
    n = _next_n(cell, run)
    if lang not in ("python", "py", "python3"):
        run.status, run.error = "error", f"only Python cells run here, not {lang!r}"
        _emit(run, on_event, fmt.error_output("LanguageError", run.error, [],
                                              out_id=f"{run.cell_id}.{n}"))
        return
    result = await sandbox.execute_async(fmt.message_text(cell), timeout=timeout)
    meta = {"status": result.status, "duration": round(result.duration, 3)}

    def stream(name: str, text: str) -> None:
        # nbformat keeps stdout and stderr as separate outputs: each gets its own ID.n
        _emit(run, on_event, fmt.stream_output(
            name, text, out_id=f"{run.cell_id}.{_next_n(cell, run)}", attrs=meta))

    if result.stdout:
        stream("stdout", result.stdout)
    if result.status == "success" and result.result is not None:
        stream("stdout", to_json_text(result.result) + "\n")
    if result.error is not None:
        run.status, run.error = "error", str(result.error)
        stream("stderr", str(result.error) + "\n")


def _tool_cell_registry(names: list[Any], options: RunOptions) -> Any:
    """The tools a ``[tool_call]``/``[toolchain]`` cell may call: installed ones, and the
    toolbox beside the file only when its folder is trusted (``TrustError`` when a named
    tool is missing and only an untrusted toolbox could hold it)."""
    base = options.base_dir
    if base is None or trust.is_trusted(base) or not (base / "toolbox").is_dir():
        return tools_for(Agent(name=TOOL_CELLS, tools=None), base)
    registry = tools_for(Agent(name=TOOL_CELLS, tools=None), None)
    if any(name not in registry for name in names):
        raise trust.refuse_toolbox(base, "this tool call")
    return registry


def _args(value: Any) -> dict[str, Any]:
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, not {value!r}")
    return value


async def run_tool_cell(cell: Mapping[str, Any], run: CellRun, options: RunOptions,
                        on_event: OnEvent) -> None:
    """Call a tool (``[tool_call] tool="x" args='{...}'``) or a chain of them
    (``[toolchain] tools=[...] params='{...}'``, each result's data feeding the next)."""
    attrs = fmt.cell_attrs(cell)
    kind = fmt.cell_kind(cell)
    names = [attrs.get("tool")] if kind == "tool_call" else list(attrs.get("tools") or [])
    n = _next_n(cell, run)
    try:
        registry = _tool_cell_registry(names, options)
        args = _args(attrs.get("args") if kind == "tool_call" else attrs.get("params"))
        timeout = float(attrs.get("timeout") or 30)
    except trust.TrustError:
        raise  # the front end says what was refused and how to allow it
    except Exception as exc:  # bad arguments or a toolbox that does not load
        run.status, run.error, run.error_type = "error", str(exc), type(exc).__name__
        _emit(run, on_event, fmt.error_output(type(exc).__name__, str(exc), [],
                                              out_id=f"{run.cell_id}.{n}"))
        return
    data: Any = args
    for i, name in enumerate(names):
        started = time.monotonic()
        status, text = "success", ""
        try:
            if name not in registry:
                known = ", ".join(sorted(registry)) or "none"
                raise KeyError(f"no tool named {name!r} (known: {known})")
            tool = registry[name]
            call_args = _chain_args(tool, data) if i else data
            result = await asyncio.wait_for(asyncio.to_thread(
                tool.run, call_args,
                on_chunk=lambda nm, chunk: on_event("chunk", (nm, chunk))), timeout)
            data = result["data"]
            text = to_json_text(data)
            if result.get("instruction"):
                text += "\n\nInstruction: " + result["instruction"]
        except Exception as exc:
            status, text = "fail", f"{type(exc).__name__}: {exc}"
            run.status, run.error, run.error_type = "error", text, type(exc).__name__
        out = fmt.tool_result_output(text, out_id=f"{run.cell_id}.{n + i}", status=status,
                                     attrs={"tool": name,
                                            "duration": round(time.monotonic() - started, 3)})
        _emit(run, on_event, out)
        if status != "success":
            return
    run.reply = to_json_text(data)


def _chain_args(tool: Any, value: Any) -> dict[str, Any]:
    """The arguments a chained tool gets from the previous result: a JSON object whose keys
    the tool accepts as keyword arguments, anything else as its first parameter."""
    params = tool.signature.parameters
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    if isinstance(value, dict) and (takes_kwargs or set(value) <= set(params)):
        return value
    names = [n for n, p in params.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return {names[0]: value} if names else {}
