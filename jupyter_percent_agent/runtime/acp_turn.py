"""A turn answered by an external agent over ACP (``agents: {coder: {acp: NAME}}``).

``check_acp_agent`` is the plan's part: the user's agent of that name must exist and the
file's folder must be trusted (the agent reads, writes and runs commands with the user's
rights), else the turn is refused before anything is written or started. ``acp_turn``
starts the agent in the folder, continues the session the file's last reply from it
recorded (``session/load``) when nothing before the new message changed since, else opens a
new session with the history the file's rules select, and records what the agent sends as
the message's outputs, in the order it came:

- message text: the reply (text before a tool call is a step, ``reasoning=1``, as in the
  ATTP loop); thoughts: a reply with ``reasoning=1`` and ``thought=true`` (shown folded);
- each tool call: a ``[tool]`` call (``kind``, ``title``, ``locations``) and its result
  (``status``; ACP's own status in ``tool_status``; its text and each edit as a unified
  diff; how a permission asked for it was answered in ``permission``);
- each file read or write and terminal the agent asked of the client: a ``[tool]`` call named
  ``read``, ``write`` or ``terminal`` and its result (a terminal's output, capped);
- the plan, last as it stood: a checklist (``reasoning=1``, ``plan=true``);
- the answer's footnote: ``agent``, ``acp`` (the user's name for it), ``acp_agent`` (the
  agent's own name and version), ``session_id``, ``session_hash`` (what continuing checks),
  ``tokens_in``/``tokens_out``, ``cost`` (a new session's; a continued one's running total is
  ``session_cost``), ``context_used``/``context_size``, ``stop_reason`` when not
  ``end_turn``, ``new_session`` saying why a recorded session was not continued.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.outcome import RunStatus, sandbox_word
from jupyter_percent_agent.runtime import attachments
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.code_history import with_images
from jupyter_percent_agent.runtime.events import Delta, Reasoning, Status
from jupyter_percent_agent.runtime.run import Run


def check_acp_agent(agent: Agent, folder: Path) -> None:
    """Refuse the turn before anything is written or started: ``AcpConfigError`` for a name
    the user never added, ``TrustError`` for a folder the user did not trust."""
    from jupyter_percent_agent.acp import find_agent

    assert agent.acp is not None
    find_agent(agent.acp)
    folder = folder.resolve()
    if not trust.is_trusted(folder):
        raise trust.TrustError(
            f"agent {agent.name!r} is the external agent {agent.acp!r}, which reads, writes and "
            f"runs commands with your rights, and {folder} is not trusted",
            f"to allow it: tce trust {folder}", kind="acp", folder=folder)


def _texts(cell: Mapping[str, Any]) -> list[str]:
    return [fmt.message_text(cell), *(fmt.output_text(o) for o in cell.get("outputs") or [])]


def session_hash(cells: list[Mapping[str, Any]], message: str, outputs: list[str]) -> str:
    """What a continued session must find unchanged: the text of every cell before the
    message (outputs included), the message, and what this turn wrote under it."""
    data = json.dumps([[_texts(c) for c in cells], message, outputs], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def recorded_session(cells: list[Mapping[str, Any]], agent: Agent) -> tuple[str | None, str]:
    """The session to continue (None: a new one) and, when a recorded one is not continued,
    why, in words for the reply (``""``: there was none)."""
    for i in range(len(cells) - 1, -1, -1):
        replies = [o for o in cells[i].get("outputs") or []
                   if fmt.output_kind(o) == "reply"
                   and fmt.output_attrs(o).get("agent") == agent.name
                   and fmt.output_attrs(o).get("session_id")]
        if not replies:
            continue
        attrs = fmt.output_attrs(replies[-1])
        sid = str(attrs["session_id"])
        if attrs.get("acp") != agent.acp:
            return None, f"session {sid} was another ACP agent's"
        if i != len(cells) - 1:
            return None, f"cells were added after session {sid}'s last reply"
        outputs = [fmt.output_text(o) for o in cells[i].get("outputs") or []]
        if attrs.get("session_hash") != session_hash(cells[:i], fmt.message_text(cells[i]),
                                                     outputs):
            return None, f"the cells before this message changed since session {sid}"
        return sid, ""
    return None, ""


def takes_images(info: Any) -> bool:
    """Whether the agent said at ``initialize`` that its prompts take images
    (``promptCapabilities.image``)."""
    caps = info.capabilities if info is not None else {}
    return bool((caps.get("promptCapabilities") or {}).get("image"))


def _split(content: Any) -> tuple[str, list[dict[str, str]]]:
    """A chat message's content (``code_history.with_images``: a text, or a text part and
    image parts as data URLs) as its text and its ACP image blocks."""
    if isinstance(content, str):
        return content, []
    texts, images = [], []
    for part in content:
        if part.get("type") == "image_url":
            head, _, data = part["image_url"]["url"].partition(",")
            images.append({"type": "image", "mimeType": head.removeprefix("data:")
                           .removesuffix(";base64"), "data": data})
        else:
            texts.append(part.get("text", ""))
    return "\n".join(texts), images


def prompt_blocks(messages: list[dict[str, Any]], file_name: str) -> list[dict[str, str]]:
    """The history the file's rules selected, as one prompt for a new session (ACP content
    blocks): the earlier turns labelled by role, then the new message; each turn's images
    (an agent that takes them) as image blocks after its text."""
    *earlier, last = messages
    turns = [(f"[{m['role']}]\n", m["content"]) for m in earlier]
    turns.append(("[the new message]\n" if earlier else "", last["content"]))
    blocks: list[dict[str, str]] = []
    text = f"The conversation so far, from the message file {file_name}:\n\n" if earlier \
        else ""
    for n, (label, content) in enumerate(turns):
        said, images = _split(content)
        text += label + said + ("\n\n" if n < len(turns) - 1 else "")
        if images:
            blocks += [{"type": "text", "text": text}, *images]
            text = ""
    return blocks + ([{"type": "text", "text": text}] if text or not blocks else [])


class _Recorder:
    """Turns the session's events into the run's outputs and the front end's events."""

    def __init__(self, run: Run, agent: Agent) -> None:
        self.run, self.agent = run, agent
        self.text = ""  # message text since the last thing that was not text
        self.thought = ""
        self.calls: dict[str, tuple[str, Any]] = {}  # ACP id -> (our call id, last snapshot)
        self.done: set[str] = set()  # tool calls whose result is recorded
        self.permissions: dict[str, str] = {}
        self.plan: Any = None
        self.context: Any = None
        self.said: list[str] = []  # the texts of what was recorded (for session_hash)

    def emit(self, output: dict[str, Any]) -> None:
        self.said.append(fmt.output_text(output))
        self.run.emit(output)

    def reply(self, text: str, **attrs: Any) -> dict[str, Any]:
        """A reply output of this agent (the next output id)."""
        kept = {k: v for k, v in attrs.items() if v is not None}
        return fmt.reply_output(text, agent=self.agent.name, out_id=self.run.next_output_id(),
                                attrs={"agent": self.agent.name, **kept})

    def flush_thought(self) -> None:
        if self.thought.strip():
            self.emit(self.reply(self.thought, reasoning=1, thought=True))
        self.thought = ""

    def flush_text(self) -> None:
        """Text followed by something else: a step, as an ATTP step is kept."""
        self.flush_thought()
        if self.text.strip():
            self.emit(self.reply(self.text, reasoning=1))
            if not self.text.endswith("\n"):
                self.run.tell(Delta("\n"))  # the next step's text starts on a line of its own
        self.text = ""

    def __call__(self, event: Any) -> None:
        from jupyter_percent_agent import acp

        match event:
            case acp.MessageChunk(text=text):
                self.flush_thought()
                self.text += text
                self.run.tell(Delta(text))
            case acp.ThoughtChunk(text=text):
                self.thought += text
                self.run.tell(Reasoning(text))
            case acp.AgentToolCall() as call:
                self.tool_call(call)
            case acp.PermissionAnswered(request=request, chosen=chosen, by=by):
                self.tool_call(request.tool_call)
                word = chosen.kind if chosen is not None else "rejected"
                self.permissions[request.tool_call.id] = \
                    "cancelled" if by == "cancelled" else f"{word} ({by})"
                self.run.tell(Status(f"permission for {request.tool_call.title or 'a tool'}: "
                                     f"{chosen.name if chosen else 'rejected'} ({by})"))
            case acp.ClientAction() as action:
                self.client_action(action)
            case acp.PlanUpdate() as plan:
                self.plan = plan
                self.run.tell(Status("plan:\n" + plan.checklist()))
            case acp.ContextUsage() as usage:
                self.context = usage

    def tool_call(self, call: Any) -> None:
        if call.id in self.done:
            return
        if call.id in self.calls:
            cid = self.calls[call.id][0]
        else:
            self.flush_text()
            cid = fmt.tool_call_id(self.run.cell_id)
            body = "\n".join([call.title, *call.locations]) + (
                "\n" + json.dumps(call.raw_input, ensure_ascii=False, indent=1)
                if call.raw_input is not None else "")
            self.emit(fmt.tool_call_output(call.title or call.kind, body, out_id=cid, attrs={
                "kind": call.kind, "title": call.title, "locations": list(call.locations)}))
            self.run.tell(Status(f"tool: {call.title} ({call.kind})"))
        self.calls[call.id] = (cid, call)
        if call.finished:
            self.flush_text()  # what the agent said while the tool ran comes before its result
            self.tool_result(call.id, interrupted=False)

    def tool_result(self, acp_id: str, *, interrupted: bool) -> None:
        cid, call = self.calls.pop(acp_id)
        self.done.add(acp_id)
        ok = call.status == "completed"
        status = str(RunStatus.INTERRUPTED) if interrupted and not call.finished else \
            sandbox_word(RunStatus.OK if ok else RunStatus.ERROR, None)
        body = "\n".join(x for x in [call.text, *(d.unified() for d in call.diffs)] if x)
        attrs: dict[str, Any] = {"tool_status": call.status}
        if acp_id in self.permissions:
            attrs["permission"] = self.permissions[acp_id]
        if call.diffs:
            attrs["diff"] = [d.path for d in call.diffs]
        self.emit(fmt.tool_result_output(body, out_id=f"{cid}.1", status=status, attrs=attrs))

    def client_action(self, action: Any) -> None:
        self.flush_text()
        cid = fmt.tool_call_id(self.run.cell_id)
        self.emit(fmt.tool_call_output(action.what, action.target, out_id=cid))
        body = "\n".join(x for x in (action.detail, action.output) if x)
        attrs = {"exit_code": action.exit_code} if action.exit_code is not None else {}
        self.emit(fmt.tool_result_output(
            body, out_id=f"{cid}.1", status=sandbox_word(
                RunStatus.OK if action.ok else RunStatus.ERROR, None), attrs=attrs))
        self.run.tell(Status(f"{action.what} {action.target}: "
                             f"{'done' if action.ok else action.detail}"))

    def finish(self, *, interrupted: bool) -> None:
        """What is still open: thoughts, tool calls that never finished, the plan."""
        self.flush_thought()
        for acp_id in list(self.calls):
            self.tool_result(acp_id, interrupted=interrupted)
        if self.plan is not None and self.plan.entries:
            self.emit(self.reply(self.plan.checklist(), reasoning=1, plan=True))
            self.plan = None


async def acp_turn(nb: Mapping[str, Any], index: int, agent: Agent, run: Run, *,
                   options: Any, messages_for: Any, sent: str | None = None) -> None:
    """Answer the cell at 1-based ``index`` with the external agent ``agent.acp``.
    ``messages_for(vision)``: the history as the file's rules select it, its images as image
    parts when ``vision`` (the agent takes images) else the line saying they are not shown
    (awaited only for a new session); ``options``: the turn's ``RunOptions`` (folder, the
    message file, the asker);
    ``sent``: the message as it is sent when it differs from the cell's text (the values its
    ``@var:`` mentions name)."""
    from jupyter_percent_agent import acp

    spec = acp.find_agent(agent.acp or "")
    cells = hist.conversation_cells(nb)
    cell = cells[index - 1]
    message = options.current_text if options.current_text is not None \
        else fmt.message_text(cell)
    earlier = cells[: index - 1]
    recorded, why_new = recorded_session(earlier, agent)
    run.answered_by(agent.name, f"acp:{spec.name}")
    recorder = _Recorder(run, agent)
    protected = (options.path,) if options.path is not None else ()
    started, stop, usage, loaded = time.monotonic(), None, None, False
    kept = options.acp_sessions
    session = None
    try:
        try:
            if kept is not None:
                session = await kept.session(spec, options.folder, on_event=recorder,
                                             asker=options.permission_asker,
                                             protected=protected)
            else:  # the agent starts before the SDK is imported: their start-ups overlap
                process = await acp.start_process(spec, os.path.realpath(options.folder))
                try:
                    session = acp.AcpSession(spec, options.folder, on_event=recorder,
                                             asker=options.permission_asker,
                                             protected=protected)
                except BaseException:
                    await acp.end_process(process)
                    raise
                await session.start(process)
            loaded = await session.open(recorded)
            if recorded and not loaded:
                why_new = f"{spec.name} could not load session {recorded}"
            if why_new:
                run.tell(Status(f"new session: {why_new}"))
            name = options.path.name if options.path is not None else "the file"
            vision = takes_images(session.info)
            if loaded:  # the new message alone, with the files it names
                expanded = attachments.expand(sent or message, options.folder)
                content = with_images(expanded.content, expanded.images, vision=vision)
                prompt = prompt_blocks([{"role": "user", "content": content}], name)
            else:
                prompt = prompt_blocks(await messages_for(vision), name)
            result = await session.prompt(prompt)
            stop, usage = result.stop_reason, result.usage
        finally:
            if kept is None and session is not None:
                await session.close()
    except asyncio.CancelledError:
        recorder.finish(interrupted=True)
        if recorder.text:
            run.keep_partial(recorder.reply(recorder.text, interrupted=True,
                                            acp=spec.name,
                                            session_id=session.session_id if session else None))
        raise
    except acp.AcpAgentError as exc:
        recorder.finish(interrupted=False)
        if recorder.text.strip():
            recorder.emit(recorder.reply(recorder.text, incomplete=True))
        run.fail(type(exc).__name__, str(exc))
        run.emit(fmt.error_output(type(exc).__name__, str(exc), [],
                                  out_id=run.next_output_id(), attrs={"agent": agent.name}))
        return
    recorder.finish(interrupted=False)
    info = session.info
    attrs: dict[str, Any] = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "duration": round(time.monotonic() - started, 3),
        "acp": spec.name, "acp_agent": info.described if info else spec.name,
        "session_id": session.session_id,
    }
    cost = None
    context = recorder.context
    if usage is not None:
        attrs.update(tokens_in=usage.input_tokens, tokens_out=usage.output_tokens)
    if context is not None:
        attrs.update(context_used=context.used, context_size=context.size)
        if context.cost is not None:
            if loaded:
                attrs["session_cost"] = context.cost
            else:
                cost = attrs["cost"] = context.cost
    if stop and stop != "end_turn":
        attrs["stop_reason"] = stop
    if why_new:
        attrs["new_session"] = why_new
    run.add_usage(f"acp:{spec.name}", tokens_in=usage.input_tokens if usage else None,
                  tokens_out=usage.output_tokens if usage else None, cost=cost)
    answer = recorder.text
    attrs["session_hash"] = session_hash(earlier, message, [*recorder.said, answer])
    run.answer(answer)
    run.emit(recorder.reply(answer, **attrs))
