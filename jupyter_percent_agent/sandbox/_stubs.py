"""What sandboxed code calls as tools (imported only inside the sandbox child).

Registry tools run in the parent: each is a stub that sends a ``call`` frame and blocks for the
``reply``; every call frame says how many replies were read before it (``n``), so the parent
can tell a flood of calls sent without waiting from a well-behaved worker.

Tools defined in the message file (``[tool]`` cells) run here, in the sandbox: on its first
call a defined tool's source is compiled with the sandbox policy and run in a namespace of its
own (the allow-listed modules, the registry stubs and ``ToolError``; neither the model code's
names nor the other defined tools). Each call is announced to the parent (``begin``, with the
bound arguments; answered like a call: the parent counts it and checks the tool's
``parameters``) and reported when done (``end``: status, error, instruction, stream chunk).
Arguments and results cross between caller and tool as JSON copies, normalized by the tools
package's rules, so a defined tool behaves like a registry tool. Every stub is a plain closure:
model code can call it, and reach nothing through it.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.outcome import RunStatus

# The tools package's own result rules (the package __init__ is too heavy for a worker).
from jupyter_percent_agent.tools.results import normalize_result, split_stream_chunk

from . import _limits
from ._policy import compile_code


class ToolError(PercentAgentError):
    """A tool call failed; carries the message only."""

    error_kind = Kind.TOOL


def error_line(tb: Any, filename: str) -> int | None:
    """The line of the innermost traceback entry in ``filename`` (None if it is not there)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def describe_exception(exc: BaseException) -> str:
    """``str(exc)``, whatever a sandbox-defined ``__str__`` does, cut to the error cap."""
    try:
        text = str(exc)
    except BaseException:  # a sandbox-defined __str__ may raise anything
        text = "<unprintable error>"
    return text[: _limits.MAX_ERROR_CHARS]


def registry_stub(name: str, channel: Any) -> Callable[..., Any]:
    """The function that calls the parent's tool ``name`` over the channel."""

    def stub(*args: Any, **kwargs: Any) -> Any:
        try:
            message = {"t": "call", "name": name, "args": list(args), "kwargs": kwargs,
                       "n": channel.replies}  # fmt: skip
            frame_text = json.dumps(message, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ToolError(f"{name}: arguments must be JSON values ({exc})") from None
        if len(frame_text) > _limits.MAX_TOOL_ARGS_BYTES:
            raise ToolError(f"{name}: arguments larger than {_limits.MAX_TOOL_ARGS_BYTES} bytes")
        channel.send(message)
        return _reply(name, channel)

    stub.__name__ = stub.__qualname__ = name
    return stub


def defined_stub(
    spec: dict[str, Any], channel: Any, make_globals: Callable[[], dict[str, Any]]
) -> Callable[..., Any]:
    """The function model code calls for the defined tool ``spec`` (name, source, function)."""
    name, source, function = str(spec["name"]), str(spec["source"]), str(spec["function"])
    filename = f"<tool {name}>"
    state: dict[str, Any] = {}  # "fn" once loaded, "error" if it cannot be

    def load() -> tuple[Callable[..., Any], Any]:
        if "error" in state:
            raise ToolError(state["error"])
        if "fn" not in state:
            try:
                state["fn"] = _load(name, source, function, filename, make_globals)
            except ToolError as exc:
                state["error"] = str(exc)
                raise
            import inspect  # only runs that call a defined tool pay for it

            state["signature"] = inspect.signature(state["fn"])
        return state["fn"], state["signature"]

    def stub(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = _json_copy(name, args, kwargs)
        try:
            fn, signature = load()
            call_args, call_kwargs, named = _bind(name, signature, args, kwargs)
        except ToolError as exc:  # the parent records a failed call and refuses it
            channel.send({"t": "begin", "name": name, "args": _shown(args, kwargs),
                          "error": str(exc), "n": channel.replies})  # fmt: skip
            _reply(name, channel)  # raises the refusal
            raise
        channel.send({"t": "begin", "name": name, "args": named, "n": channel.replies})
        _reply(name, channel)
        report: dict[str, Any] = {"t": "end", "name": name, "status": RunStatus.ERROR}
        try:
            data = _run(name, fn, call_args, call_kwargs, filename, report)
        finally:
            channel.send(report)
        return data

    stub.__name__ = stub.__qualname__ = name
    return stub


def _reply(name: str, channel: Any) -> Any:
    reply = channel.recv()
    if reply.get("t") != "reply":
        raise ToolError(f"{name}: unexpected reply from the host")
    if reply.get("ok"):
        return reply.get("data")
    raise ToolError(str(reply.get("error", "tool failed")))


def _json_copy(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list, dict]:
    try:
        text = json.dumps({"args": list(args), "kwargs": kwargs}, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ToolError(f"{name}: arguments must be JSON values ({exc})") from None
    if len(text) > _limits.MAX_TOOL_ARGS_BYTES:
        raise ToolError(f"{name}: arguments larger than {_limits.MAX_TOOL_ARGS_BYTES} bytes")
    copy = json.loads(text)
    return copy["args"], copy["kwargs"]


def _shown(args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"args": args, **kwargs} if args else kwargs


def _load(
    name: str,
    source: str,
    function: str,
    filename: str,
    make_globals: Callable[[], dict[str, Any]],
) -> Callable[..., Any]:
    """Compile and run a defined tool's source in a namespace of its own; its function."""
    code, error = compile_code(source, filename)
    if error is not None:
        line = error.get("line")
        where = f" (line {line})" if line and not error["message"].startswith("Line") else ""
        raise ToolError(
            f"tool {name!r} could not be loaded{where}: {error['type']}: {error['message']}"
        )
    namespace = make_globals()
    try:
        exec(code, namespace)
    except MemoryError:
        raise  # a real one (code cannot name MemoryError): the run's memory status
    except BaseException as exc:
        line = error_line(exc.__traceback__, filename)
        where = f" (line {line})" if line is not None else ""
        raise ToolError(
            f"tool {name!r} could not be loaded{where}: {type(exc).__name__}: "
            f"{describe_exception(exc)}"
        ) from None
    fn = namespace.get(function)
    if type(fn) is not types.FunctionType or fn.__code__.co_filename != filename:
        raise ToolError(f"tool {name!r}: its code does not define a function {function!r}")
    return fn


def _bind(
    name: str, signature: Any, args: list[Any], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]:
    """Positional and keyword arguments for the function, and the same by parameter name."""
    import inspect  # loaded by then

    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise ToolError(f"{name}: {exc}") from None
    named: dict[str, Any] = {}
    for pname, value in bound.arguments.items():
        kind = signature.parameters[pname].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[pname] = list(value) if kind is inspect.Parameter.VAR_POSITIONAL else value
    return bound.args, bound.kwargs, named


def _run(
    name: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    filename: str,
    report: dict[str, Any],
) -> Any:
    """Call the tool; fill ``report`` (the ``end`` frame) and return a JSON copy of its data."""
    try:
        value = fn(*args, **kwargs)
    except MemoryError:
        report["error"] = "MemoryError"
        raise
    except BaseException as exc:
        report["error"] = _failure(exc, name, filename)
        raise ToolError(report["error"]) from None
    try:
        rest, chunk, has_chunk = split_stream_chunk(value)
        result = normalize_result(rest)
        data = json.loads(json.dumps(result["data"], allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        report["error"] = f"{name} returned {describe_exception(exc)}"
        raise ToolError(report["error"]) from None
    extra = {"instruction": result["instruction"], "chunk": chunk, "has_chunk": has_chunk}
    try:
        size = len(json.dumps(extra, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        report["error"] = f"{name} returned a stream_chunk that is not a JSON value"
        raise ToolError(report["error"]) from None
    if size > _limits.MAX_TOOL_ARGS_BYTES:
        report["error"] = (
            f"{name} returned an instruction and stream chunk larger than "
            f"{_limits.MAX_TOOL_ARGS_BYTES} bytes"
        )
        raise ToolError(report["error"])
    report.update(extra, status=RunStatus.OK)
    return data


def _failure(exc: BaseException, name: str, filename: str) -> str:
    """``Type: message (line N of tool 'name')``: what a defined tool's code raised."""
    line = error_line(exc.__traceback__, filename)
    where = f" (line {line} of tool {name!r})" if line is not None else ""
    return f"{type(exc).__name__}: {describe_exception(exc)}{where}"
