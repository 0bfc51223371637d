"""The MCP client side: the user's servers, started on first use and stopped with us.

One ``Host`` per process (the kernel, ``tce chat``, a helper) keeps one connection per
(server, conversation folder), made with the ``mcp`` SDK's ``Client`` (it speaks the protocol;
nothing here does). The connections live in one event loop of their own, in a daemon thread,
so any caller (sync code, another event loop, the sandbox's bridge) can reach them, and so
each connection's task both opens and closes it, as the SDK's task groups need.

A stdio server starts in the user's config folder, never in the conversation's folder,
which is offered to it as its MCP root; it gets the SDK's minimal environment plus its own
``env`` (not the user's keys). Its stderr goes to a log of its own
(``<config>/mcp-logs/NAME.log``, started afresh each time, its tail quoted in errors). It
stops when the process exits (``atexit``) or with :func:`stop_all`; were we killed, its stdin
closes and the server ends, as stdio servers must.

Failures are one :class:`McpServerError` naming the server: it did not start in time, died,
did not answer a call in time. Nothing is retried by itself: the next turn starts it again.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
import time
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.mcptools.config import ServerSpec
from jupyter_percent_agent.mcptools.schema import error_text
from jupyter_percent_agent.trust import config_dir

START_TIMEOUT = 30.0  # seconds for a server to start and list its tools
CALL_TIMEOUT = 60.0  # seconds for one call, unless the server's entry says otherwise
LOG_TAIL = 300  # characters of a server's log quoted in an error
CONNECTION_CLOSED = -32000  # the JSON-RPC code the SDK gives calls on a closed connection


class McpServerError(PercentAgentError, RuntimeError):
    """An MCP server that did not start, died, or did not answer in time; names it."""

    error_kind = Kind.TOOL


class McpToolError(PercentAgentError, RuntimeError):
    """A call an MCP server answered with an error (``isError``); its words, one line."""

    error_kind = Kind.TOOL


@dataclass(frozen=True)
class ListedTool:
    """One tool as its server lists it."""

    name: str
    description: str | None
    input_schema: Any
    output_schema: Any


def log_path(name: str) -> Path:
    return config_dir() / "mcp-logs" / f"{name}.log"


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - LOG_TAIL))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:LOG_TAIL] if lines else ""


class Connection:
    """One running server: its task holds the SDK client open until it is told to stop."""

    def __init__(self, spec: ServerSpec, root: Path | None) -> None:
        self.spec, self.root = spec, root
        self.tools: list[ListedTool] = []
        self.client: Any = None
        self.error: str | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def _fail(self, what: str) -> McpServerError:
        tail = _tail(log_path(self.spec.name)) if self.spec.transport == "stdio" else ""
        where = (
            f" (log: {log_path(self.spec.name)}" + (f": {tail})" if tail else ")")
            if self.spec.transport == "stdio"
            else ""
        )
        return McpServerError(f"MCP server {self.spec.name!r} {what}{where}")

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and self.error is None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._hold(), name=f"mcp:{self.spec.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), START_TIMEOUT)
        except TimeoutError:
            await self.stop()
            raise self._fail(f"did not start within {START_TIMEOUT:g} s") from None
        if self.error is not None:
            await self.stop()
            raise self._fail(f"did not start: {self.error}")

    async def _hold(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                self.client = await stack.enter_async_context(self._client(stack))
                self.tools = await self._list()
                if self.error is None:
                    self._ready.set()
                await self._stop.wait()
        except BaseException as exc:
            self.error = self.error or _describe(exc)
            self._ready.set()
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
        finally:
            self.client = None

    def _client(self, stack: AsyncExitStack) -> Any:
        import mcp
        import mcp_types

        # The SDK logs a server's faults with tracebacks; ours is the one line that says it.
        if not logging.getLogger("mcp").handlers:
            logging.getLogger("mcp").addHandler(logging.NullHandler())
            logging.getLogger("mcp").propagate = False

        root = self.root

        async def roots(_context: Any) -> Any:
            listed = [mcp_types.Root(uri=root.resolve().as_uri(), name=root.name)] if root else []
            return mcp_types.ListRootsResult(roots=listed)

        timeout = self.spec.timeout or CALL_TIMEOUT
        if self.spec.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(
                headers=dict(self.spec.headers), timeout=httpx2.Timeout(30.0, read=300.0)
            )
            stack.push_async_callback(http.aclose)
            server: Any = streamable_http_client(self.spec.url, http_client=http)
        else:
            folder = config_dir()
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            log = log_path(self.spec.name)
            log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            errlog = stack.enter_context(open(log, "w", encoding="utf-8"))
            server = mcp.StdioServerParameters(
                command=self.spec.command or "",
                args=list(self.spec.args),
                env=dict(self.spec.env) or None,
                cwd=folder,
            )
            from mcp.client.stdio import stdio_client

            server = stdio_client(server, errlog=errlog)

        async def on_message(message: Any) -> None:
            if isinstance(message, Exception):  # not MCP on its stdout, or its stdout broke
                self.error = self.error or "wrote something that is not MCP to its stdout"
                self._ready.set()
                self._stop.set()

        return mcp.Client(
            server,
            list_roots_callback=roots,
            read_timeout_seconds=timeout,
            message_handler=on_message,
            client_info=mcp_types.Implementation(name="jupyter-percent-agent", version="1"),
        )

    async def _list(self) -> list[ListedTool]:
        out: list[ListedTool] = []
        cursor = None
        for _ in range(100):  # pages: a server that never stops paging cannot hang us
            page = await self.client.list_tools(cursor=cursor)
            out += [
                ListedTool(t.name, t.description, t.input_schema, t.output_schema)
                for t in page.tools
            ]
            cursor = page.next_cursor
            if not cursor:
                break
        return out

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[Any, Any]:
        """The SDK's result of a successful call, and the tool's output schema (the caller
        makes the value: an image it shows must reach the caller's run)."""
        if not self.alive:
            raise self._fail(f"is not running ({self.error or 'stopped'})")
        timeout = self.spec.timeout or CALL_TIMEOUT
        call = asyncio.ensure_future(self.client.call_tool(name, arguments))
        try:
            done, _ = await asyncio.wait(
                {call, self._task},
                timeout=timeout,  # type: ignore[arg-type]
                return_when=asyncio.FIRST_COMPLETED,
            )
        except asyncio.CancelledError:  # the caller was interrupted: so is its call
            call.cancel()
            raise
        if call not in done:
            call.cancel()
            if self._task in done:
                raise self._fail(f"died during a call to {name} ({self.error or 'ended'})")
            raise self._fail(f"did not answer a call to {name} within {timeout:g} s")
        try:
            result = call.result()
        except Exception as exc:
            if getattr(exc, "code", None) == CONNECTION_CLOSED:  # it died: start it anew
                self.error = self.error or "its connection closed"
                self._stop.set()
                raise self._fail(f"died during a call to {name}") from None
            raise self._fail(f"failed a call to {name}: {_describe(exc)}") from None
        if getattr(result, "is_error", False):
            raise McpToolError(f"{name} (MCP server {self.spec.name!r}): {error_text(result)}")
        listed = next((t for t in self.tools if t.name == name), None)
        return result, listed.output_schema if listed else None

    async def stop(self) -> None:
        """Close the connection: the SDK closes the server's stdin, then ends its process
        tree. A connection that failed may be stuck in a request, and one still starting
        waits for a server that may never answer: both are cancelled at once."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if self.error is not None or not self._ready.is_set():
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=8)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=5)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions[:3])
    if isinstance(exc, FileNotFoundError):
        return f"no such command: {exc.filename or exc}"
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Host:
    """The connections of this process, in an event loop of their own."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._connections: dict[tuple[str, str, str], Connection] = {}

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mcp-host", daemon=True).start()
                self._loop = loop
                atexit.register(self.stop_all)
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run ``coro`` in the host's loop and wait for it (from any thread but the host's)."""
        return self.submit(coro).result(timeout)

    async def _connection(self, spec: ServerSpec, root: Path | None) -> Connection:
        key = (spec.name, repr(spec.to_json()), str(root or ""))
        conn = self._connections.get(key)
        if conn is not None and conn.alive:
            return conn
        if conn is not None:
            await conn.stop()
        conn = Connection(spec, root)
        self._connections[key] = conn
        await conn.start()
        return conn

    def connect(self, spec: ServerSpec, root: Path | None) -> Connection:
        """The running connection to ``spec`` for ``root`` (started now if need be)."""
        try:
            return self.run(self._connection(spec, root), START_TIMEOUT + 20)
        except concurrent.futures.TimeoutError:
            raise McpServerError(
                f"MCP server {spec.name!r} did not start within {START_TIMEOUT:g} s"
            ) from None

    async def acall(
        self, conn: Connection, name: str, arguments: dict[str, Any]
    ) -> tuple[Any, Any]:
        """Call a tool from any event loop: the call runs in the host's. The SDK's result
        and the tool's output schema."""
        return await asyncio.wrap_future(self.submit(conn.call(name, arguments)))

    def stop_all(self) -> None:
        """Stop every server this process started (each within a few seconds)."""
        if self._loop is None or not self._connections:
            return
        conns, self._connections = list(self._connections.values()), {}

        async def stop() -> None:
            await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)

        deadline = time.monotonic() + 10
        try:
            self.run(stop(), max(0.1, deadline - time.monotonic()))
        except Exception:
            pass


HOST = Host()
