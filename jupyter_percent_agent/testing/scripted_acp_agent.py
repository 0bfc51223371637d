"""A scripted ACP agent on the official SDK (``agent-client-protocol``), for tests.

``python -m jupyter_percent_agent.testing.scripted_acp_agent SCRIPT.json`` (or the script's
path in ``SCRIPTED_ACP_SCRIPT``) speaks ACP on its standard input and output like any
external agent, and does what the script says::

    {"name": "scripted", "version": "1.0", "load_session": true,
     "images": false,                              # promptCapabilities.image
     "start": "ok" | "exit" | "garbage",          # exit 3 / a line that is not JSON-RPC
     "log": "calls.jsonl",                         # every call it answered, one JSON a line
                                                   # (else $SCRIPTED_ACP_LOG, if set)
     "state": "sessions/",                         # loadable sessions (default: beside log)
     "prompts": [[STEP, ...], ...]}                # the n-th prompt runs prompts[n % len]

Steps, in order: ``{"say": TEXT}`` (a message chunk), ``{"think": TEXT}``, ``{"echo":
true}`` (the prompt's text as a chunk), ``{"tool": {"id", "title", "kind", "status",
"locations": [PATH], "diff": {"path", "old", "new"}}}``, ``{"update": {"id", "status",
...}}``, ``{"permission": {"id", "title", "kind"}}`` (says ``permission: OPTION`` or
``permission: cancelled``), ``{"read": PATH}`` / ``{"write": {"path", "content"}}`` (say
``read: TEXT`` / ``wrote PATH`` or ``refused: ERROR``), ``{"terminal": {"command", "args"}}``
(says ``terminal exit CODE: OUTPUT``), ``{"terminal_start": {"command", "args"}}`` (left
running), ``{"plan": [[CONTENT, STATUS], ...]}``, ``{"usage":
{"used", "size", "cost"}}``, ``{"sleep": SECONDS}`` (ended early by ``session/cancel``),
``{"wait_file": PATH}`` (until PATH exists, or the prompt is cancelled), ``{"exit": CODE}``
(the process exits at once), ``{"garbage": TEXT}`` (a line that is not
JSON-RPC), ``{"prompt_usage": {"input", "output"}}`` (the prompt response's usage).
Each prompt is logged with its text and its ``blocks`` (type, and an image's ``mimeType``
and the length of its ``data``). A path in a step is relative to the session's folder unless
absolute. Loading a session
replays its messages as ``user_message_chunk`` / ``agent_message_chunk`` updates.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    plan_entry,
    run_agent,
    start_tool_call,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ToolCallLocation,
    ToolCallUpdate,
    Usage,
    UsageUpdate,
)


def _load_script() -> dict[str, Any]:
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ["SCRIPTED_ACP_SCRIPT"]
    return json.loads(Path(path).read_text(encoding="utf-8"))


class ScriptedAgent:
    """The agent side: answers as the script says, logs every call."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.script = script
        self.conn: Any = None
        log = script.get("log") or os.environ.get("SCRIPTED_ACP_LOG")
        self.log = Path(log) if log else None
        state = script.get("state") or (str(self.log.parent / "sessions") if self.log else None)
        self.state = Path(state) if state else None
        self.sessions: dict[str, dict[str, Any]] = {}
        self.prompts = 0
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    def record(self, **call: Any) -> None:
        if self.log is not None:
            with self.log.open("a", encoding="utf-8") as f:
                f.write(json.dumps(call) + "\n")

    # -- sessions ------------------------------------------------------------------------

    def _session_file(self, sid: str) -> Path | None:
        return None if self.state is None else self.state / f"{sid}.json"

    def _save(self, sid: str) -> None:
        path = self._session_file(sid)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(self.sessions[sid]), encoding="utf-8")

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        caps = client_capabilities.model_dump(by_alias=True, exclude_none=True) \
            if client_capabilities else {}
        self.record(method="initialize", client_capabilities=caps, pid=os.getpid(),
                    cwd=os.getcwd())
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=bool(self.script.get("load_session", True)),
                prompt_capabilities=PromptCapabilities(
                    image=bool(self.script.get("images", False)))),
            agent_info=Implementation(name=self.script.get("name", "scripted"),
                                      version=str(self.script.get("version", "1.0"))))

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any
                          ) -> NewSessionResponse:
        sid = f"s-{uuid.uuid4().hex[:8]}"
        self.sessions[sid] = {"cwd": cwd, "messages": []}
        self._save(sid)
        self.record(method="new_session", cwd=cwd, session_id=sid)
        return NewSessionResponse(session_id=sid)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None,
                           **kwargs: Any) -> LoadSessionResponse:
        path = self._session_file(session_id)
        if path is None or not path.exists():
            self.record(method="load_session", session_id=session_id, found=False)
            raise RequestError.invalid_params({"details": f"no session {session_id}"})
        self.sessions[session_id] = json.loads(path.read_text(encoding="utf-8"))
        for role, text in self.sessions[session_id]["messages"]:
            update = update_user_message_text(text) if role == "user" \
                else update_agent_message_text(text)
            await self.conn.session_update(session_id=session_id, update=update)
        self.record(method="load_session", session_id=session_id, found=True)
        return LoadSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.record(method="cancel", session_id=session_id)
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    # -- a prompt ------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(b, "text", "") for b in prompt)
        blocks = [{"type": b.type, "mimeType": b.mime_type, "bytes": len(b.data)}
                  if b.type == "image" else {"type": b.type} for b in prompt]
        self.record(method="prompt", session_id=session_id, text=text, blocks=blocks)
        turns = self.script.get("prompts") or [[{"say": "ok"}]]
        steps = turns[self.prompts % len(turns)]
        self.prompts += 1
        cancelled = self.cancelled.setdefault(session_id, asyncio.Event())
        cancelled.clear()
        said: list[str] = []
        usage = None
        for step in steps:
            if cancelled.is_set():
                break
            kind, value = next(iter(step.items()))
            if kind == "prompt_usage":
                usage = Usage(input_tokens=value["input"], output_tokens=value["output"],
                              total_tokens=value["input"] + value["output"])
                continue
            out = await self.step(session_id, kind, value, text, cancelled)
            if out:
                said.append(out)
                await self.conn.session_update(session_id=session_id,
                                               update=update_agent_message_text(out))
        session = self.sessions.setdefault(session_id, {"cwd": "", "messages": []})
        session["messages"] += [["user", text], ["agent", "".join(said)]]
        self._save(session_id)
        return PromptResponse(stop_reason="cancelled" if cancelled.is_set() else "end_turn",
                              usage=usage)

    def _path(self, session_id: str, path: str) -> str:
        cwd = self.sessions.get(session_id, {}).get("cwd") or os.getcwd()
        return path if os.path.isabs(path) else os.path.join(cwd, path)

    async def step(self, sid: str, kind: str, value: Any, text: str,
                   cancelled: asyncio.Event) -> str | None:
        """One step; the text to say as a message chunk, if any."""
        conn = self.conn
        if kind == "say":
            return str(value)
        if kind == "echo":
            return text
        if kind == "think":
            await conn.session_update(session_id=sid, update=update_agent_thought_text(value))
        elif kind in ("tool", "update"):
            diff = value.get("diff")
            content = [tool_diff_content(diff["path"], diff["new"], diff.get("old"))] \
                if diff else None
            locations = [ToolCallLocation(path=p) for p in value.get("locations", [])] or None
            if kind == "tool":
                update: Any = start_tool_call(value["id"], value.get("title", value["id"]),
                                              kind=value.get("kind", "other"),
                                              status=value.get("status", "pending"),
                                              content=content, locations=locations,
                                              raw_input=value.get("input"))
            else:
                update = update_tool_call(value["id"], status=value.get("status"),
                                          title=value.get("title"), content=content,
                                          locations=locations)
            await conn.session_update(session_id=sid, update=update)
        elif kind == "permission":
            options = [PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
                       PermissionOption(option_id="always", name="Always allow",
                                        kind="allow_always"),
                       PermissionOption(option_id="reject", name="Reject", kind="reject_once")]
            answer = await conn.request_permission(
                session_id=sid, options=options,
                tool_call=ToolCallUpdate(tool_call_id=value["id"], title=value.get("title"),
                                         kind=value.get("kind", "execute")))
            outcome = answer.outcome
            return f"permission: {getattr(outcome, 'option_id', None) or outcome.outcome}"
        elif kind == "read":
            try:
                got = await conn.read_text_file(session_id=sid, path=self._path(sid, value))
            except RequestError as exc:
                return f"refused: {exc.data or exc}"
            return f"read: {got.content}"
        elif kind == "write":
            try:
                await conn.write_text_file(session_id=sid, path=self._path(sid, value["path"]),
                                           content=value["content"])
            except RequestError as exc:
                return f"refused: {exc.data or exc}"
            return f"wrote {value['path']}"
        elif kind == "terminal":
            try:
                made = await conn.create_terminal(session_id=sid, command=value["command"],
                                                  args=value.get("args", []),
                                                  cwd=value.get("cwd"))
            except RequestError as exc:
                return f"refused: {exc.data or exc}"
            tid = made.terminal_id
            done = await conn.wait_for_terminal_exit(session_id=sid, terminal_id=tid)
            out = await conn.terminal_output(session_id=sid, terminal_id=tid)
            await conn.release_terminal(session_id=sid, terminal_id=tid)
            return f"terminal exit {done.exit_code}: {out.output.strip()}"
        elif kind == "terminal_start":  # left running: the client ends it with the session
            made = await conn.create_terminal(session_id=sid, command=value["command"],
                                              args=value.get("args", []))
            return f"started {made.terminal_id}"
        elif kind == "plan":
            await conn.session_update(session_id=sid, update=update_plan(
                [plan_entry(c, status=s) for c, s in value]))
        elif kind == "usage":
            await conn.session_update(session_id=sid, update=UsageUpdate(
                session_update="usage_update", used=value["used"], size=value["size"],
                cost={"amount": value["cost"], "currency": "USD"} if "cost" in value else None))
        elif kind == "sleep":
            try:
                await asyncio.wait_for(cancelled.wait(), float(value))
            except TimeoutError:
                pass
        elif kind == "wait_file":
            while not os.path.exists(self._path(sid, value)) and not cancelled.is_set():
                await asyncio.sleep(0.05)
        elif kind == "exit":
            os._exit(int(value))
        elif kind == "garbage":
            sys.stdout.write(str(value) + "\n")
            sys.stdout.flush()
        return None


async def main() -> None:
    script = _load_script()
    start = script.get("start", "ok")
    if start == "exit":
        print("scripted agent: told to fail at start", file=sys.stderr)
        sys.exit(3)
    if start == "garbage":
        print("Welcome! This is not JSON-RPC.", flush=True)
        await asyncio.sleep(30)
        return
    await run_agent(ScriptedAgent(script))


if __name__ == "__main__":
    asyncio.run(main())

