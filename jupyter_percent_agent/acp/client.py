"""The client an external agent talks to: its session updates become typed events, its
permission requests go to the user's answer, its file and terminal requests are served
confined to the conversation's folder (``confine``).

Built on the SDK's ``Client`` protocol (methods called with the request's fields); imported
only when an agent runs.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Awaitable, Callable
from typing import Any

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileEditToolCallContent,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from jupyter_percent_agent import trust
from jupyter_percent_agent.acp import events as ev
from jupyter_percent_agent.acp.confine import Folder, Terminal
from jupyter_percent_agent.errors import PercentAgentError

PermissionAsker = Callable[[ev.PermissionRequest], Awaitable[ev.PermissionOption | None]]
"""Asks the person: returns the option they chose (None: they rejected or could not be
asked). A front end's own (a terminal prompt, a JupyterLab dialog)."""

DEFAULT_TERMINAL_CAP = 1_000_000  # bytes, when the user's code-output cap is unlimited


def _text_of(block: Any) -> str:
    """The text of a content block (a resource or an image named, not inlined)."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind == "resource_link":
        return f"[{block.name}]({block.uri})"
    if kind == "resource":
        return getattr(block.resource, "text", "") or f"[{block.resource.uri}]"
    return f"[{kind}]"


class ConfinedClient:
    """One session's client side. ``permissions``: the user's setting for this agent
    (``ask``, ``allow``, ``reject``); ``asker``: the person, when there is one."""

    def __init__(self, folder: Folder, on_event: ev.OnAcpEvent, *, permissions: str = "ask",
                 asker: PermissionAsker | None = None) -> None:
        self.folder = folder
        self.on_event = on_event
        self.permissions = permissions
        self.asker = asker
        self.replaying = False  # a loaded session's replay: not told again
        self.cancelling = False  # session/cancel sent: pending permissions are cancelled
        self.tool_calls: dict[str, ev.AgentToolCall] = {}
        self.terminals: dict[str, Terminal] = {}
        self._asking: set[asyncio.Future[ev.PermissionOption | None]] = set()
        self._ids = itertools.count(1)

    def tell(self, event: ev.AcpEvent) -> None:
        if not self.replaying:
            self.on_event(event)

    # -- session/update ------------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk):
            self.tell(ev.MessageChunk(_text_of(update.content)))
        elif isinstance(update, AgentThoughtChunk):
            self.tell(ev.ThoughtChunk(_text_of(update.content)))
        elif isinstance(update, ToolCallStart | ToolCallProgress):
            self.tell(self._tool_call(update))
        elif isinstance(update, AgentPlanUpdate):
            self.tell(ev.PlanUpdate(tuple(ev.PlanEntry(e.content, str(e.status),
                                                       str(e.priority))
                                          for e in update.entries)))
        elif isinstance(update, UsageUpdate):
            cost = update.cost
            self.tell(ev.ContextUsage(update.used, update.size,
                                      cost.amount if cost else None,
                                      cost.currency if cost else None))

    def _tool_call(self, update: ToolCallStart | ToolCallProgress | ToolCallUpdate
                   ) -> ev.AgentToolCall:
        """The tool call with this update laid over what was known of it."""
        from dataclasses import replace

        known = self.tool_calls.get(update.tool_call_id) or ev.AgentToolCall(
            update.tool_call_id, update.title or "")
        changes: dict[str, Any] = {}
        for name in ("title", "kind", "status"):
            value = getattr(update, name, None)
            if value is not None:
                changes[name] = str(value)
        if update.locations is not None:
            changes["locations"] = tuple(
                self._shown(loc.path) + (f":{loc.line}" if loc.line is not None else "")
                for loc in update.locations)
        if update.content is not None:
            diffs, texts = [], []
            for item in update.content:
                if isinstance(item, FileEditToolCallContent):
                    diffs.append(ev.FileDiff(self._shown(item.path), item.old_text,
                                             item.new_text))
                elif getattr(item, "type", "") == "terminal":
                    texts.append(f"[terminal {item.terminal_id}]")
                else:
                    texts.append(_text_of(item.content))
            changes["diffs"], changes["text"] = tuple(diffs), "\n".join(texts)
        if update.raw_input is not None:
            changes["raw_input"] = update.raw_input
        call = replace(known, **changes)
        self.tool_calls[call.id] = call
        return call

    def _shown(self, path: str) -> str:
        """A path as the reply records it: relative to the folder when inside it."""
        try:
            return self.folder.relative(path)
        except trust.TrustError:
            return os.path.normpath(path)

    # -- session/request_permission ------------------------------------------------------

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate,
                                 options: list[Any], **kwargs: Any
                                 ) -> RequestPermissionResponse:
        request = ev.PermissionRequest(
            self._tool_call(tool_call),
            tuple(ev.PermissionOption(o.option_id, o.name, str(o.kind)) for o in options))
        if self.cancelling:
            chosen, by = None, "cancelled"
        elif self.permissions == "allow":
            chosen, by = request.option("allow_once", "allow_always"), "setting"
        elif self.permissions == "reject" or self.asker is None:
            chosen = request.option("reject_once", "reject_always")
            by = "setting" if self.permissions == "reject" else "no person"
        else:
            chosen, by = await self._ask(request), "person"
            if self.cancelling:
                chosen, by = None, "cancelled"
            elif chosen is None:
                chosen = request.option("reject_once", "reject_always")
        self.tell(ev.PermissionAnswered(request, chosen, by))
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=chosen.id, outcome="selected"))

    async def _ask(self, request: ev.PermissionRequest) -> ev.PermissionOption | None:
        """The person's answer; None when the prompt turn is cancelled meanwhile."""
        assert self.asker is not None
        task = asyncio.ensure_future(self.asker(request))
        self._asking.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            if task.cancelled() and self.cancelling:
                return None
            raise
        finally:
            self._asking.discard(task)

    def cancel_pending(self) -> None:
        """``session/cancel`` is being sent: questions still waiting for the person are
        withdrawn (answered cancelled, as ACP asks), later requests answered cancelled."""
        self.cancelling = True
        for task in list(self._asking):
            task.cancel()

    # -- fs/* ----------------------------------------------------------------------------

    def _refused(self, what: str, target: str, exc: BaseException) -> RequestError:
        line = str(exc) if isinstance(exc, PercentAgentError) else (
            f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}")
        self.tell(ev.ClientAction(what, target, False, line))
        return RequestError.invalid_params({"details": line}) \
            if isinstance(exc, trust.TrustError) else RequestError.internal_error(
                {"details": line})

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        shown = self._shown(path)
        try:
            text = self.folder.read(path, line, limit)
        except (PercentAgentError, OSError) as exc:
            raise self._refused("read", shown, exc) from None
        self.tell(ev.ClientAction("read", shown, True, f"{len(text)} characters"))
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **kwargs: Any) -> WriteTextFileResponse:
        shown = self._shown(path)
        try:
            self.folder.write(path, content)
        except (PercentAgentError, OSError) as exc:
            raise self._refused("write", shown, exc) from None
        self.tell(ev.ClientAction("write", shown, True, f"{len(content)} characters"))
        return WriteTextFileResponse()

    # -- terminal/* ----------------------------------------------------------------------

    async def create_terminal(self, session_id: str, command: str,
                              args: list[str] | None = None,
                              env: list[EnvVariable] | None = None, cwd: str | None = None,
                              output_byte_limit: int | None = None, **kwargs: Any
                              ) -> CreateTerminalResponse:
        line = " ".join([command, *(args or [])])
        try:
            where = self.folder.check(cwd, "terminal folder") if cwd else None
            root = where or self.folder.check(".", "terminal folder")
            cap = trust.bound("code_output_bytes", None, folder=root).value \
                or DEFAULT_TERMINAL_CAP
            if output_byte_limit:
                cap = min(int(cap), output_byte_limit)
            seconds = float(trust.bound("tool_timeout", None, folder=root).value or 30)
            terminal = await Terminal.start(command, list(args or []), cwd=root,
                                            env={e.name: e.value for e in env or []},
                                            cap=int(cap), seconds=seconds)
        except (PercentAgentError, OSError) as exc:
            raise self._refused("terminal", line, exc) from None
        terminal_id = f"term-{next(self._ids)}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    def _terminal(self, terminal_id: str) -> Terminal:
        if terminal_id not in self.terminals:
            raise RequestError.invalid_params({"details": f"no terminal {terminal_id!r}"})
        return self.terminals[terminal_id]

    @staticmethod
    def _exit(terminal: Terminal) -> TerminalExitStatus | None:
        if terminal.process.returncode is None:
            return None
        return TerminalExitStatus(exit_code=terminal.exit_code, signal=terminal.signal_name)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any
                              ) -> TerminalOutputResponse:
        terminal = self._terminal(terminal_id)
        return TerminalOutputResponse(output=terminal.text, truncated=terminal.truncated,
                                      exit_status=self._exit(terminal))

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any
                                     ) -> WaitForTerminalExitResponse:
        terminal = self._terminal(terminal_id)
        await terminal.wait()
        self._record(terminal)
        return WaitForTerminalExitResponse(exit_code=terminal.exit_code,
                                           signal=terminal.signal_name)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any
                            ) -> KillTerminalResponse:
        self._terminal(terminal_id).kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any
                               ) -> ReleaseTerminalResponse:
        terminal = self.terminals.pop(terminal_id, None)
        if terminal is not None:
            await terminal.close()
            self._record(terminal)
        return ReleaseTerminalResponse()

    def _record(self, terminal: Terminal) -> None:
        if terminal.recorded:
            return
        terminal.recorded = True
        detail = "stopped at the time limit" if terminal.timed_out else (
            f"exit {terminal.exit_code}" if terminal.exit_code is not None
            else f"signal {terminal.signal_name}")
        if terminal.truncated:
            detail += f"; output cut to its last {terminal.cap} bytes"
        self.tell(ev.ClientAction("terminal", terminal.line,
                                  terminal.exit_code == 0 and not terminal.timed_out,
                                  detail, terminal.text, terminal.exit_code))

    async def close(self) -> None:
        """End every terminal still running (none outlives the session)."""
        for terminal in list(self.terminals.values()):
            await terminal.close()
            self._record(terminal)
        self.terminals.clear()

    # -- what this client does not offer -------------------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None
