"""``execute`` and ``execute_async``: one sandbox run from the parent's side.

Takes a worker from the pool, connects its pipes to the running event loop, sends the job,
answers tool calls until the ``done`` frame, and always kills the worker's process group at
the end, whether the run finished, hit the wall clock, broke the protocol or was cancelled.
The wall clock starts when the job is sent; tool time counts against it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import signal
import subprocess
import time
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any

from jupyter_percent_agent.outcome import Reason, RunStatus

from . import _limits, _process
from ._bridge import BridgeViolation, ChunkCallback, ToolTable
from ._defined import DefinedTool
from ._pool import POOL
from ._protocol import FrameDecoder, ProtocolError, encode
from ._types import ErrorInfo, SandboxResult

_Frame = tuple[int, dict[str, Any]]
_EOF = (0, {"t": "eof"})


class _Reader(asyncio.Protocol):
    """Feeds the child's stdout into a frame decoder; violations end the run."""

    def __init__(self, queue: asyncio.Queue[_Frame | BaseException]) -> None:
        self._queue = queue
        self._decoder = FrameDecoder(_limits.MAX_FRAME_BYTES)
        self._failed = False
        self.transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if self._failed:
            return
        try:
            frames = self._decoder.feed(data)
        except ProtocolError as exc:
            self._fail(exc)
            return
        for frame in frames:
            if self._queue.qsize() >= _limits.MAX_PENDING_FRAMES:
                self._fail(ProtocolError("the sandbox sent frames without waiting for replies"))
                return
            self._queue.put_nowait(frame)

    def _fail(self, exc: BaseException) -> None:
        self._failed = True
        self._queue.put_nowait(exc)
        if self.transport is not None:
            self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._failed:
            self._queue.put_nowait(_EOF)


class _Failure(Exception):
    """A run that ended failed before the worker reported (``reason``: the limit, if one)."""

    def __init__(self, reason: Reason | None, type_: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.type, self.message = reason, type_, message


async def execute_async(
    code: str,
    *,
    tools: Mapping[str, Any] | None = None,
    defined: Iterable[DefinedTool] = (),
    timeout: float = 10.0,
    memory_mb: int = 512,
    on_chunk: ChunkCallback | None = None,
) -> SandboxResult:
    """Run ``code`` in a fresh sandbox process from asyncio code; cancelling kills it at once.

    Arguments are those of :func:`execute`. Async tools are awaited in the running loop.
    """
    if not isinstance(code, str):
        raise TypeError("code must be a string")
    return await _run_job(code, None, ToolTable(tools, defined), timeout, memory_mb, on_chunk)


def execute(
    code: str,
    *,
    tools: Mapping[str, Any] | None = None,
    defined: Iterable[DefinedTool] = (),
    timeout: float = 10.0,
    memory_mb: int = 512,
    on_chunk: ChunkCallback | None = None,
) -> SandboxResult:
    """Run ``code`` in a fresh sandbox process and wait for its result.

    ``tools``: a mapping of names to callables (sync or async, e.g. a ``tools.Registry``),
    run in this process and reached from the sandbox as plain functions over a JSON bridge.
    ``defined``: tools written in the message file (:class:`DefinedTool`), whose code runs in
    the sandbox too, each in a namespace of its own; the code calls them by name like the
    others. ``timeout``: wall-clock seconds from the moment the worker receives the code, tool
    time included. ``memory_mb``: address space the code may add to the worker's own footprint.
    ``on_chunk(tool_name, chunk)``: receives each ``data.stream_chunk`` a tool streams.
    Never raises for anything the code does; the outcome is in ``SandboxResult.status``.

    Safe to call from a thread that runs an event loop (the run then happens on a helper
    thread with its own loop; async tools run there).
    """
    return _sync(execute_async(code, tools=tools, defined=defined, timeout=timeout,
                               memory_mb=memory_mb, on_chunk=on_chunk))  # fmt: skip


async def call_defined_async(
    tool: DefinedTool,
    args: Mapping[str, Any] | None = None,
    *,
    tools: Mapping[str, Any] | None = None,
    timeout: float = 10.0,
    memory_mb: int = 512,
    on_chunk: ChunkCallback | None = None,
) -> SandboxResult:
    """Call one defined tool with JSON keyword arguments (``[tool_call]``, ``[toolchain]``).

    The arguments are checked here first, against the tool's ``parameters`` and its
    signature: :class:`~jupyter_percent_agent.tools.ToolArgumentError` if they do not fit.
    Then the tool runs in a sandbox worker exactly as when model code calls it (``tools``:
    the registry tools its code may call). ``result`` is the tool's ``data``,
    ``instructions`` its instruction, ``tool_calls`` the call; a tool that raises gives
    status ``error`` with its message.
    """
    if not isinstance(tool, DefinedTool):
        raise TypeError("tool must be a sandbox.DefinedTool")
    kwargs = tool.check_arguments(args)
    table = ToolTable(tools, [tool])
    return await _run_job("", {"name": tool.name, "kwargs": kwargs}, table, timeout, memory_mb,
                          on_chunk)  # fmt: skip


def call_defined(
    tool: DefinedTool,
    args: Mapping[str, Any] | None = None,
    *,
    tools: Mapping[str, Any] | None = None,
    timeout: float = 10.0,
    memory_mb: int = 512,
    on_chunk: ChunkCallback | None = None,
) -> SandboxResult:
    """:func:`call_defined_async`, waiting for the result (like :func:`execute`)."""
    return _sync(call_defined_async(tool, args, tools=tools, timeout=timeout,
                                    memory_mb=memory_mb, on_chunk=on_chunk))  # fmt: skip


def _sync(coro: Coroutine[Any, Any, SandboxResult]) -> SandboxResult:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sandbox") as pool:
        return pool.submit(asyncio.run, coro).result()


async def _run_job(
    code: str,
    call: dict[str, Any] | None,
    table: ToolTable,
    timeout: float,
    memory_mb: int,
    on_chunk: ChunkCallback | None,
) -> SandboxResult:
    if not timeout > 0:
        raise ValueError("timeout must be positive")
    if int(memory_mb) < 16:
        raise ValueError("memory_mb must be at least 16")
    started = time.monotonic()
    if len(code) > _limits.MAX_CODE_CHARS:
        return _result(table, started, RunStatus.ERROR, error=ErrorInfo(
            "CodeTooLong", f"code longer than {_limits.MAX_CODE_CHARS} characters"))  # fmt: skip
    job = {"t": "job", "code": code, "timeout": float(timeout), "memory_mb": int(memory_mb),
           "tools": table.names, "defined": table.defined_jobs}  # fmt: skip
    if call is not None:
        job["call"] = call
    # A pooled worker that died while idle fails before it gets the job: retry once, fresh.
    for proc in (POOL.acquire(), None):
        run = _Run(proc or _process.spawn(), table, on_chunk)
        try:
            result = await run.run(job, started)
        finally:
            run.close()
        if run.job_sent or proc is None:
            return result
    raise AssertionError("unreachable")


class _Run:
    def __init__(
        self, proc: subprocess.Popen[bytes], table: ToolTable, on_chunk: ChunkCallback | None
    ) -> None:
        self.proc = proc
        self.table = table
        self.on_chunk = on_chunk
        self.queue: asyncio.Queue[_Frame | BaseException] = asyncio.Queue()
        self.read_transport: asyncio.BaseTransport | None = None
        self.write_transport: asyncio.WriteTransport | None = None
        self.stdout = ""
        self.job_sent = False
        self.replies = 0  # tool-call replies sent; a call must say it read them all

    async def run(self, job: dict[str, Any], started: float) -> SandboxResult:
        loop = asyncio.get_running_loop()
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.read_transport, _ = await loop.connect_read_pipe(
            lambda: _Reader(self.queue), self.proc.stdout
        )
        self.write_transport, _ = await loop.connect_write_pipe(asyncio.Protocol, self.proc.stdin)
        try:
            ready = await self._next(time.monotonic() + _limits.STARTUP_TIMEOUT, starting=True)
            if ready[1].get("t") != "ready":
                raise _Failure(None, "ProtocolError", "the sandbox did not start properly")
            self._send(job)
            self.job_sent = True
            timeout = job["timeout"]
            deadline = time.monotonic() + timeout
            try:
                done = await asyncio.wait_for(self._serve(deadline), timeout)
            except TimeoutError:
                raise _Failure(
                    Reason.TIMEOUT, "Timeout",
                    f"the code ran longer than {timeout:g} s (wall clock)"
                ) from None
        except _Failure as failure:
            _process.kill_group(self.proc)
            return _result(self.table, started, RunStatus.ERROR, failure.reason,
                           stdout=self.stdout,
                           error=ErrorInfo(failure.type, failure.message))  # fmt: skip
        return self._finish(done, started)

    async def _serve(self, deadline: float) -> dict[str, Any]:
        while True:
            size, message = await self._next(deadline)
            kind = message.get("t")
            if kind == "done":
                return message
            if kind == "out":  # printed so far: kept in case the run is killed
                text = message.get("text")
                room = _limits.MAX_OUTPUT_CHARS - len(self.stdout)
                if isinstance(text, str) and room > 0:
                    self.stdout += text[:room]
                continue
            try:
                await self._answer(kind, size, message)
            except BridgeViolation as exc:
                raise _Failure(None, "ProtocolError", f"protocol violation: {exc}") from None

    async def _answer(self, kind: Any, size: int, message: dict[str, Any]) -> None:
        """A tool frame: ``call`` (a registry tool), ``begin`` / ``end`` (a defined tool)."""
        if kind == "end":
            self.table.end(message, size, self.on_chunk)
            return
        if kind not in ("call", "begin"):
            raise _Failure(None, "ProtocolError", f"unexpected frame {kind!r} from sandbox")
        if message.get("n") != self.replies:
            raise _Failure(None, "ProtocolError", "the sandbox sent a tool call before "
                           "reading the reply to the previous one")  # fmt: skip
        if self.table.calls >= _limits.MAX_TOOL_CALLS:
            limit = f"more than {_limits.MAX_TOOL_CALLS} tool calls in one run"
            raise _Failure(None, "ToolCallLimit", limit)
        if kind == "begin":
            self._send(self.table.begin(message, size))
        else:
            self._send(await self.table.call(message, size, self.on_chunk))

    async def _next(self, deadline: float, *, starting: bool = False) -> _Frame:
        try:
            item = await asyncio.wait_for(self.queue.get(), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            if starting:
                raise _Failure(None, "StartupTimeout", "the sandbox did not start") from None
            raise
        if isinstance(item, BaseException):
            raise _Failure(None, "ProtocolError", f"sandbox protocol violation: {item}")
        if item is _EOF:
            raise await self._died()
        return item

    async def _died(self) -> _Failure:
        for _ in range(200):
            if self.proc.poll() is not None:
                break
            await asyncio.sleep(0.005)
        code = self.proc.returncode
        if code is not None and code < 0:
            sig = -code
            if sig == signal.SIGXCPU:
                return _Failure(Reason.CPU, "CPULimit", "the code used up its CPU time")
            if sig == signal.SIGKILL:
                return _Failure(Reason.MEMORY, "Killed",
                                "the sandbox process was killed (memory?)")
            name = signal.Signals(sig).name
            return _Failure(None, "Crashed", f"the sandbox process died ({name})")
        return _Failure(None, "Crashed", f"the sandbox process exited early (code {code})")

    def _send(self, message: dict[str, Any]) -> None:
        self.replies += message.get("t") == "reply"
        assert self.write_transport is not None
        if not self.write_transport.is_closing():
            self.write_transport.write(encode(message))

    def _finish(self, done: dict[str, Any], started: float) -> SandboxResult:
        # the worker reports one of these; anything else is an error with no reason
        status = RunStatus.OK if done.get("status") == RunStatus.OK else RunStatus.ERROR
        reason = done.get("reason")
        reason = Reason(reason) if isinstance(reason, str) and reason in _WORKER_REASONS \
            else None
        stdout = done.get("stdout", "")
        stdout = stdout[: _limits.MAX_OUTPUT_CHARS] if isinstance(stdout, str) else ""
        error = _error_info(done.get("error")) if status is not RunStatus.OK else None
        result = None
        if status is RunStatus.OK:
            text = done.get("result_json")
            if not isinstance(text, str) or len(text) > _limits.MAX_RESULT_BYTES:
                status, error = RunStatus.ERROR, ErrorInfo("ProtocolError",
                                                           "bad result from sandbox")
            else:
                try:
                    result = json.loads(text)
                except (ValueError, RecursionError):
                    status, error = RunStatus.ERROR, ErrorInfo("ResultError",
                                                               "__result__ is not JSON")
        return _result(self.table, started, status, reason, result=result, stdout=stdout,
                       error=error)

    def close(self) -> None:
        _process.kill_group(self.proc)
        for transport in (self.read_transport, self.write_transport):
            if transport is not None:
                transport.close()
        _process.discard(self.proc)


def _error_info(raw: Any) -> ErrorInfo:
    if not isinstance(raw, dict):
        return ErrorInfo("Error", "the sandbox reported an error without details")
    line = raw.get("line")
    return ErrorInfo(
        str(raw.get("type", "Error"))[:100],
        str(raw.get("message", ""))[: _limits.MAX_ERROR_CHARS],
        line if isinstance(line, int) and not isinstance(line, bool) else None,
    )


# The limits the worker itself may name (the others it cannot know: the parent sees them).
_WORKER_REASONS = frozenset({Reason.MEMORY, Reason.OUTPUT_LIMIT})


def _result(table: ToolTable, started: float, status: RunStatus, reason: Reason | None = None,
            **fields: Any) -> SandboxResult:
    table.settle(reason if status is RunStatus.ERROR else None)
    return SandboxResult(status=status, reason=reason, tool_calls=list(table.records),
                         instructions=list(table.instructions),
                         duration=time.monotonic() - started, **fields)  # fmt: skip


__all__ = ["call_defined", "call_defined_async", "execute", "execute_async"]
