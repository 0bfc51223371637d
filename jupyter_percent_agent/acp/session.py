"""One external agent's process and session: started in the conversation's folder from the
user's command, initialised, a session made or loaded, prompted, cancelled, and ended with
everything it started.

The process runs in a process group of its own (a terminal's Ctrl-C reaches ``tce``, which
sends ``session/cancel``, not the agent) and is ended with its group when the session closes,
so no agent outlives its turn. What the agent writes on standard output must be JSON-RPC: the
first line that is not ends the connection with one line saying what it wrote; a process that
exits says its exit code and the last line of its standard error.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from jupyter_percent_agent.acp import events as ev
from jupyter_percent_agent.acp.client import ConfinedClient, PermissionAsker
from jupyter_percent_agent.acp.config import AcpAgentSpec
from jupyter_percent_agent.acp.confine import Folder
from jupyter_percent_agent.acp.process import (
    LINE_LIMIT,
    AcpAgentError,
    agent_error,
    end_process,
    start_process,
)
from jupyter_percent_agent.errors import PercentAgentError

START_SECONDS = 60.0
"""How long an agent may take to start and answer ``initialize``."""

CANCEL_SECONDS = 5.0
"""How long a cancelled prompt may take to end after ``session/cancel`` (what arrives
meanwhile is kept)."""

class _Lines:
    """Newline-delimited JSON-RPC over the process's pipes, as the SDK's message transport:
    a line that is not a JSON object ends the stream (and is remembered, to be named)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.garbage: str | None = None

    async def send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        await stdin.drain()

    async def receive(self) -> dict[str, Any] | None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            try:
                line = await stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                self.garbage = f"a line longer than {LINE_LIMIT} bytes"
                return None
            if not line:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                text = line.decode("utf-8", "replace").strip()
                self.garbage = repr(text[:120] + ("…" if len(text) > 120 else ""))
                return None
            return message

    async def close(self) -> None:
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()


class AcpSession:
    """One conversation turn (or, in the Agent kernel, one open conversation) with an
    external agent over ACP.

    ::

        async with AcpSession(spec, folder, on_event=tell, asker=ask,
                              protected=(message_file,)) as session:
            info = session.info                      # AgentInfo: name, version, load_session
            loaded = await session.open(recorded_id)  # session/load when it can, else new
            result = await session.prompt(text)       # events stream to on_event
            session.session_id                        # to record in the reply

        async for item in session.stream(text):       # or: events as an async iterator,
            ...                                       # the PromptResult last

    ``folder``: the conversation's folder; the agent runs there and the client serves its file
    and terminal requests only inside it (``protected``: files it may never touch, the open
    message file). ``asker``: the person answering permission requests (None: nobody, so
    they are rejected unless the user's ``spec.permissions`` is ``allow``). Cancelling the
    task awaiting ``prompt`` sends ``session/cancel`` and keeps what arrives until the agent
    stops (at most :data:`CANCEL_SECONDS`) before the cancellation goes on. Leaving the
    ``async with`` ends the process, its terminals and everything it started.
    """

    def __init__(self, spec: AcpAgentSpec, folder: os.PathLike[str] | str, *,
                 on_event: ev.OnAcpEvent = ev.ignore, asker: PermissionAsker | None = None,
                 protected: tuple[os.PathLike[str] | str, ...] = ()) -> None:
        self.spec = spec
        self.folder = Folder(folder, protected=protected)
        self.client = ConfinedClient(self.folder, on_event, permissions=spec.permissions,
                                     asker=asker)
        self.info: ev.AgentInfo | None = None
        self.session_id: str | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._lines: _Lines | None = None
        self._conn: Any = None
        self._stderr: deque[str] = deque(maxlen=20)
        self._stderr_task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AcpSession:
        try:
            await self.start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the process -----------------------------------------------------------------------

    def _error(self, what: str) -> AcpAgentError:
        return agent_error(self.spec, what)

    async def _died(self, doing: str, exc: BaseException | None = None) -> AcpAgentError:
        """The one line for a connection that ended while ``doing``."""
        if self._lines is not None and self._lines.garbage is not None:
            return self._error(f"wrote something that is not ACP (JSON-RPC) while {doing}: "
                               f"{self._lines.garbage}")
        process = self._process
        if process is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 1)
            if self._stderr_task is not None:
                with contextlib.suppress(TimeoutError, Exception):
                    await asyncio.wait_for(asyncio.shield(self._stderr_task), 1)
            if process.returncode is not None:
                said = f": {self._stderr[-1]}" if self._stderr else ""
                return self._error(f"exited with code {process.returncode} while {doing}{said}")
        why = f" ({exc})" if exc is not None and str(exc) else ""
        return self._error(f"closed the connection while {doing}{why}")

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        async for raw in self._process.stderr:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                self._stderr.append(line[:300])

    async def start(self, process: asyncio.subprocess.Process | None = None) -> ev.AgentInfo:
        """Start the agent in the folder (``process``: already started there by
        ``process.start_process``, this session now ends it) and ``initialize`` it,
        advertising file reads, file writes and terminals; ``AcpAgentError`` when it cannot
        start or answer."""
        from acp import PROTOCOL_VERSION, connect_to_agent
        from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

        from jupyter_percent_agent import __version__

        self._process = process or await start_process(self.spec, self.folder.root)
        self._stderr_task = asyncio.ensure_future(self._read_stderr())
        self._lines = _Lines(self._process)
        self._conn = connect_to_agent(self.client, self._lines)
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
        try:
            response = await asyncio.wait_for(self._conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities,
                client_info=Implementation(name="jupyter-percent-agent", title="tce",
                                           version=__version__)), START_SECONDS)
        except TimeoutError:
            raise self._error(f"did not answer initialize within {START_SECONDS:g} s") from None
        except ConnectionError as exc:
            raise await self._died("starting", exc) from None
        except Exception as exc:  # the agent's own error (RequestError), or a reply that is
            raise self._error(f"initialize failed: {exc}") from None  # not an ACP one
        agent = response.agent_info
        caps = response.agent_capabilities
        self.info = ev.AgentInfo(
            name=agent.name if agent else self.spec.name,
            version=agent.version if agent else "",
            title=agent.title if agent else None,
            load_session=bool(caps and caps.load_session),
            capabilities=caps.model_dump(mode="json", by_alias=True, exclude_none=True)
            if caps else {})
        return self.info

    async def close(self) -> None:
        """End the agent: its terminals, then its input closed, then its process group
        (terminated, then killed) once it has had ``process.STOP_SECONDS``."""
        await self.client.close()
        if self._conn is not None:
            with contextlib.suppress(Exception):
                await self._conn.close()
        if self._process is not None:
            await end_process(self._process)
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._stderr_task

    # -- the session -----------------------------------------------------------------------

    async def _call(self, doing: str, call: Any) -> Any:
        try:
            return await call
        except ConnectionError as exc:
            raise await self._died(doing, exc) from None
        except PercentAgentError:
            raise
        except Exception as exc:
            message = getattr(exc, "message", None) or str(exc)
            data = getattr(exc, "data", None)
            if isinstance(data, dict) and data.get("details"):
                message += f" ({data['details']})"
            raise self._error(f"{doing} failed: {message}") from None

    @property
    def alive(self) -> bool:
        """Whether the agent's process is running and its connection open."""
        return (self._process is not None and self._process.returncode is None
                and self._lines is not None and self._lines.garbage is None)

    def rebind(self, on_event: ev.OnAcpEvent, asker: PermissionAsker | None) -> None:
        """The next turn's caller: where its events go and who answers its permissions."""
        self.client.on_event, self.client.asker = on_event, asker
        self.client.cancelling = False

    async def open(self, session_id: str | None = None) -> bool:
        """Load the recorded session ``session_id`` when the agent can (its replay is not
        told), else make a new one in the folder. True when it was continued: loaded, or
        the session this process has open already (a kept session: nothing to load)."""
        assert self.info is not None, "start() first"
        if session_id and session_id == self.session_id:
            return True
        cwd = self.folder.root
        if session_id and self.info.load_session:
            self.client.replaying = True
            try:
                await self._call("loading the session", self._conn.load_session(
                    cwd=cwd, session_id=session_id, mcp_servers=[]))
            except AcpAgentError:
                if self._process is not None and self._process.returncode is not None:
                    raise
            else:
                self.session_id = session_id
                return True
            finally:
                self.client.replaying = False
        response = await self._call("making a session",
                                    self._conn.new_session(cwd=cwd, mcp_servers=[]))
        self.session_id = response.session_id
        return False

    async def prompt(self, text: str | Sequence[Mapping[str, str]]) -> ev.PromptResult:
        """Send ``text`` as the session's next prompt (a text, or ACP content blocks as
        JSON: ``{"type": "text", "text"}``, ``{"type": "image", "mimeType", "data"}``);
        events stream to ``on_event`` until the agent ends its turn."""
        from acp import image_block, text_block

        assert self.session_id is not None, "open() first"
        sid = self.session_id
        blocks = [text_block(text)] if isinstance(text, str) else [
            image_block(b["data"], b["mimeType"]) if b["type"] == "image"
            else text_block(b["text"]) for b in text]
        task = asyncio.ensure_future(self._call("answering", self._conn.prompt(
            session_id=sid, prompt=blocks)))
        try:
            response = await asyncio.shield(task)
        except asyncio.CancelledError:
            self.client.cancel_pending()
            with contextlib.suppress(Exception):
                await self._conn.cancel(session_id=sid)
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(task, CANCEL_SECONDS)
            task.cancel()
            raise
        usage = response.usage
        return ev.PromptResult(
            str(response.stop_reason),
            ev.TokenUsage(usage.input_tokens, usage.output_tokens, usage.total_tokens,
                          usage.thought_tokens) if usage else None)

    async def stream(self, text: str) -> AsyncIterator[ev.AcpEvent | ev.PromptResult]:
        """:meth:`prompt` as an async iterator: each event as it arrives, then the
        :class:`PromptResult` last (the session's ``on_event`` is not called meanwhile).
        Leaving the loop early cancels the prompt (``session/cancel``)."""
        queue: asyncio.Queue[ev.AcpEvent | ev.PromptResult | BaseException] = asyncio.Queue()
        told, self.client.on_event = self.client.on_event, queue.put_nowait

        async def run() -> None:
            try:
                queue.put_nowait(await self.prompt(text))
            except BaseException as exc:
                queue.put_nowait(exc)

        task = asyncio.ensure_future(run())
        try:
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
                if isinstance(item, ev.PromptResult):
                    return
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            self.client.on_event = told


class AcpSessions:
    """Sessions kept open across turns, one per agent and folder: the Agent kernel keeps its
    conversation's agent running while the conversation is open (``RunOptions.acp_sessions``)
    and calls :meth:`close` when it ends. ``tce`` keeps none: its agent ends with the turn."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], AcpSession] = {}

    async def session(self, spec: AcpAgentSpec, folder: os.PathLike[str] | str, *,
                      on_event: ev.OnAcpEvent = ev.ignore,
                      asker: PermissionAsker | None = None,
                      protected: tuple[os.PathLike[str] | str, ...] = ()) -> AcpSession:
        """The started session of ``spec`` in ``folder``, bound to this turn's ``on_event``
        and ``asker``: the one kept, else a new one (also when the user changed the agent's
        definition or its process ended)."""
        key = (spec.name, os.path.realpath(os.fspath(folder)))
        session = self._open.get(key)
        if session is not None and (session.spec != spec or not session.alive
                                    or session.folder.protected != Folder(
                                        folder, protected=protected).protected):
            await session.close()
            session = None
        if session is None:
            session = AcpSession(spec, folder, on_event=on_event, asker=asker,
                                 protected=protected)
            try:
                await session.start()
            except BaseException:
                await session.close()
                raise
            self._open[key] = session
        session.rebind(on_event, asker)
        return session

    async def close(self) -> None:
        """End every kept agent (the conversation closed, the kernel shuts down)."""
        sessions, self._open = list(self._open.values()), {}
        for session in sessions:
            await session.close()


async def probe(spec: AcpAgentSpec, folder: os.PathLike[str] | str | None = None
                ) -> ev.AgentInfo:
    """Start the agent (in ``folder``, else in an empty temporary folder: the current one may
    be a clone whose settings an agent reads at start), ask what it is, end it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="acp-probe-") as empty:
        async with AcpSession(spec, Path(folder or empty)) as session:
            assert session.info is not None
            return session.info
