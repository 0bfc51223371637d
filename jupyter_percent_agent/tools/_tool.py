"""One tool: a documented public function, and the uniform ways to call it.

Four kinds of function are tools: plain functions, ``async def`` coroutines, and generators
(sync or async) that stream. Every value a tool returns or yields is normalized
(:func:`normalize_result`); a ``data.stream_chunk`` in it is taken out and handed to the
``on_chunk(tool_name, chunk)`` callback at once; what remains (other data keys, an instruction)
is the result. For a generator the result is the last yielded (or, for a sync generator,
returned) value that carries more than a chunk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError

from ._docstring import Docstring, DocstringError, parse_docstring
from .results import ToolResult, normalize_result, split_stream_chunk

OnChunk = Callable[[str, Any], None]


class ToolLoadError(PercentAgentError):
    """A tool module or tool that cannot be loaded; says which, where, and what is wrong."""

    error_kind = Kind.TOOL

    def __init__(
        self,
        problem: str,
        *,
        module: str | None = None,
        tool: str | None = None,
        path: str | None = None,
        line: int | None = None,
        kind: Kind = Kind.TOOL,
    ) -> None:
        self.problem = problem
        self.error_kind = kind  # Kind.USAGE: the user named a module or folder that is not there
        self.module = module
        self.tool = tool
        self.path = path
        self.line = line  # in the source that was loaded, when known (also in ``problem``)
        where = []
        if path:
            where.append(path)
        if module:
            where.append(f"module {module!r}")
        if tool:
            where.append(f"tool {tool!r}")
        super().__init__(f"{', '.join(where)}: {problem}" if where else problem)


class ToolCallError(PercentAgentError):
    """A tool call that went wrong outside the tool's own code: bad arguments, a non-JSON result."""

    error_kind = Kind.TOOL


class ToolArgumentError(ToolCallError, TypeError):
    """Arguments that do not fit the tool's signature (missing, unexpected)."""

    error_kind = Kind.USAGE


@dataclass(frozen=True, eq=False)
class Tool:
    """A tool: ``name``, ``module``, ``func``, parsed ``doc`` and ``signature``.

    ``tool(**kwargs)`` calls the function exactly as written (a coroutine function returns an
    awaitable, a generator function a generator). ``tool.run(args, on_chunk=...)`` and
    ``await tool.arun(args, on_chunk=...)`` handle every kind and return the normalized result.
    """

    name: str
    func: Callable[..., Any]
    doc: Docstring
    signature: inspect.Signature
    module: str = ""
    path: str | None = field(default=None, compare=False)

    @classmethod
    def from_function(
        cls, func: Callable[..., Any], *, module: str = "", path: str | None = None
    ) -> Tool:
        """Make a tool of ``func``; :class:`ToolLoadError` if its docstring does not fit it."""
        name = func.__name__
        try:
            doc = parse_docstring(func.__doc__)
        except DocstringError as exc:
            raise ToolLoadError(str(exc), module=module, tool=name, path=path) from None
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            raise ToolLoadError(
                f"no signature: {exc}", module=module, tool=name, path=path
            ) from None
        problem = check_docstring(doc, signature)
        if problem:
            raise ToolLoadError(problem, module=module, tool=name, path=path)
        return cls(name=name, func=func, doc=doc, signature=signature, module=module, path=path)

    @property
    def is_async(self) -> bool:
        """True for ``async def`` tools, coroutines and async generators alike."""
        call = getattr(self.func, "__call__", None)  # noqa: B004  (objects with async __call__)
        return (
            inspect.iscoroutinefunction(self.func)
            or inspect.isasyncgenfunction(self.func)
            or inspect.iscoroutinefunction(call)
        )

    @property
    def is_streaming(self) -> bool:
        """True for generator tools (sync or async), which yield stream chunks."""
        return inspect.isgeneratorfunction(self.func) or inspect.isasyncgenfunction(self.func)

    def __call__(self, **kwargs: Any) -> Any:
        return self.func(**kwargs)

    def bind(self, args: Mapping[str, Any] | None) -> inspect.BoundArguments:
        """Check ``args`` against the signature; :class:`ToolArgumentError` says what is wrong."""
        try:
            return self.signature.bind(**dict(args or {}))
        except TypeError as exc:
            raise ToolArgumentError(f"{self.name}: {exc}") from None

    def _checked(self, args: Mapping[str, Any] | None) -> dict[str, Any]:
        # Bound only to check them: the call passes keywords, which is what binding a mapping
        # gives anyway, and what wrapped tools (signature taken from their ``func``) accept.
        kwargs = dict(args or {})
        self.bind(kwargs)
        return kwargs

    def keyword_arguments(
        self, positional: Sequence[Any] = (), keywords: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """A call written with positional and keyword arguments, as keyword arguments only.

        What the sandbox needs: model code calls ``get_weather("Paris", unit="F")``, the tool
        gets ``{"city": "Paris", "unit": "F"}``. :class:`ToolArgumentError` when they do not
        fit, or when positional values would land in ``*args``.
        """
        try:
            bound = self.signature.bind(*positional, **dict(keywords or {}))
        except TypeError as exc:
            raise ToolArgumentError(f"{self.name}: {exc}") from None
        result: dict[str, Any] = {}
        for pname, value in bound.arguments.items():
            kind = self.signature.parameters[pname].kind
            if kind is inspect.Parameter.VAR_KEYWORD:
                result.update(value)
            elif kind is inspect.Parameter.VAR_POSITIONAL:
                if value:
                    raise ToolArgumentError(
                        f"{self.name}: *{pname} cannot be filled: tools take keyword arguments"
                    )
            else:
                result[pname] = value
        return result

    def run(
        self, args: Mapping[str, Any] | None = None, *, on_chunk: OnChunk | None = None
    ) -> ToolResult:
        """Call the tool to completion and return its normalized result (any kind of tool).

        Async tools run in a private event loop (in a worker thread when the calling thread
        already runs one). Exceptions raised by the tool propagate unchanged.
        """
        kwargs = self._checked(args)
        value = self.func(**kwargs)
        if not (inspect.isawaitable(value) or inspect.isasyncgen(value)):
            return _collect_sync(self.name, value, on_chunk)
        coro = _collect_async(self.name, value, on_chunk)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coro).result()

    async def arun(
        self, args: Mapping[str, Any] | None = None, *, on_chunk: OnChunk | None = None
    ) -> ToolResult:
        """Await the tool to completion and return its normalized result (any kind of tool).

        Sync tools, and each step of a sync generator tool, run in a worker thread so that the
        event loop keeps going; ``on_chunk`` is called in the loop's thread.
        """
        kwargs = self._checked(args)
        if self.is_async:
            value = self.func(**kwargs)
        else:
            value = await in_thread(functools.partial(self.func, **kwargs))
        if inspect.isawaitable(value) or inspect.isasyncgen(value):
            return await _collect_async(self.name, value, on_chunk)
        if not inspect.isgenerator(value):
            return _collect_sync(self.name, value, on_chunk)
        result: ToolResult | None = None
        while True:
            done, item = await in_thread(functools.partial(_step, value))
            if done and item is None:
                return result or {"data": None, "instruction": None}
            result = _absorb(self.name, item, on_chunk) or result
            if done:
                return result


async def in_thread(call: Callable[[], Any]) -> Any:
    """``call()`` in a daemon thread of its own, awaited (cancelling the wait leaves the
    thread to end by itself). Not an executor's: asyncio.run() waits for the loop's default
    one, and Python joins every executor's threads at exit, so a stuck sync tool held up the
    exit of a run the user had interrupted (Ctrl-C)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():  # the caller may have been cancelled meanwhile
            (future.set_result if ok else future.set_exception)(value)

    def work() -> None:
        try:
            outcome = (True, context.run(call))
        except BaseException as exc:  # handed to the caller, as an executor does
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop has closed: nobody waits for it any more
            pass

    threading.Thread(target=work, name="tool", daemon=True).start()
    return await future


def _step(generator: Any) -> tuple[bool, Any]:
    """One ``next()``: (False, item), or (True, return value) at the end (StopIteration cannot
    cross a future)."""
    try:
        return False, next(generator)
    except StopIteration as stop:
        return True, stop.value


def check_docstring(doc: Docstring, signature: inspect.Signature) -> str | None:
    """What is wrong between a docstring and the signature it documents, or ``None``."""
    params = [p.name for p in signature.parameters.values() if p.name not in ("self", "cls")]
    for name in doc.args:
        if name not in params:
            return f"Args: documents {name!r}, which is not a parameter"
    missing = [p for p in params if p not in doc.args]
    if missing:
        return (
            "parameter"
            + ("s " if len(missing) > 1 else " ")
            + ", ".join(repr(p) for p in missing)
            + " not documented in Args:"
        )
    return None


async def _collect_async(name: str, value: Any, on_chunk: OnChunk | None) -> ToolResult:
    if inspect.isasyncgen(value):
        result: ToolResult | None = None
        async for item in value:
            result = _absorb(name, item, on_chunk) or result
        return result or {"data": None, "instruction": None}
    return _collect_sync(name, await value, on_chunk)


def _collect_sync(name: str, value: Any, on_chunk: OnChunk | None) -> ToolResult:
    if not inspect.isgenerator(value):
        return _absorb(name, value, on_chunk, final=True) or {"data": None, "instruction": None}
    result: ToolResult | None = None
    while True:
        try:
            item = next(value)
        except StopIteration as stop:
            if stop.value is not None:
                result = _absorb(name, stop.value, on_chunk) or result
            return result or {"data": None, "instruction": None}
        result = _absorb(name, item, on_chunk) or result


def _absorb(
    name: str, value: Any, on_chunk: OnChunk | None, *, final: bool = False
) -> ToolResult | None:
    """Normalize one returned or yielded value, hand its chunk on, return what is left of it."""
    rest, chunk, has_chunk = split_stream_chunk(value)
    try:
        result = normalize_result(rest)
    except TypeError as exc:
        raise ToolCallError(f"{name} returned {exc}") from None
    if has_chunk and on_chunk is not None:
        on_chunk(name, chunk)
    if has_chunk and result["data"] is None and result["instruction"] is None and not final:
        return None
    return result


def call_tool(
    func: Callable[..., Any],
    args: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    on_chunk: OnChunk | None = None,
) -> ToolResult:
    """Call a :class:`Tool` or any plain callable (sync, async, generator) to a normalized result.

    For the sandbox, whose ``tools`` may be a registry or a plain mapping of callables.
    """
    return as_tool(func, name).run(args, on_chunk=on_chunk)


async def acall_tool(
    func: Callable[..., Any],
    args: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    on_chunk: OnChunk | None = None,
) -> ToolResult:
    """The async form of :func:`call_tool`."""
    return await as_tool(func, name).arun(args, on_chunk=on_chunk)


def as_tool(func: Callable[..., Any], name: str | None = None) -> Tool:
    """A :class:`Tool` for any callable (a ``Tool`` renamed to ``name`` if that differs).

    Plain callables get no docstring check. Their signature is the object's own ``signature``
    (tool objects of other libraries carry one), else that of its ``func`` or ``fn`` (wrappers),
    else its own; a callable without one takes keyword arguments only.
    """
    if isinstance(func, Tool):
        return func if name is None or name == func.name else replace(func, name=name)
    label = name or getattr(func, "__name__", "tool")
    return Tool(name=label, func=func, doc=Docstring(summary=""), signature=_signature_of(func))


def _signature_of(func: Callable[..., Any]) -> inspect.Signature:
    own = getattr(func, "signature", None)
    if isinstance(own, inspect.Signature):
        return own
    target = getattr(func, "func", None) or getattr(func, "fn", None) or func
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return inspect.Signature([inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])
