"""One turn: running one cell of a notebook, whatever its kind, with no file I/O of its own.

``plan`` decides everything that can fail before anything is sent (the cell, its agent, where
the agent's calls may go, the selections); ``execute`` does the work (summaries, history,
the model or the ATTP loop, code and tool cells) into a ``Run``. ``run_turn`` is both.
A model failure ends as an ``[error]`` output, not an exception; cancelling the task keeps
what was complete (``Run.interrupt``). Front ends go through ``conversation.send``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime import attachments
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.agents import Agent, bound_agent, resolve_agent
from jupyter_percent_agent.runtime.asyncfile import async_file, land, landed
from jupyter_percent_agent.runtime.context import (
    Selections,
    check_selected,
    load_included,
    plan_history,
    selections,
)
from jupyter_percent_agent.runtime.events import OnEvent, Status, ignore
from jupyter_percent_agent.runtime.run import Run
from jupyter_percent_agent.runtime.settings import check_environment
from jupyter_percent_agent.runtime.transport import Transport, default_transport
from jupyter_percent_agent.runtime.variables import check_mentions, values, with_values

MODEL_FREE = frozenset({"code", "tool_call", "toolchain"})
"""Cell kinds that run without a model."""

CellRunner = Callable[[Mapping[str, Any], Run, "RunOptions"], Awaitable[None]]
"""Runs a cell of a kind the runtime does not know itself (a front end's plug-in: the kernel
runs ``[task]`` cells with the task runner) into the ``Run``."""


@dataclass(frozen=True)
class RunOptions:
    """What the caller chose: agent, model override, selections, the file's folder, the live
    text of the cell (the kernel), a step limit of the user's own."""

    agent: str | None = None
    model: str | None = None
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    base_dir: Path | None = None
    env: Mapping[str, str] | None = None
    max_steps: int | None = None
    current_text: str | None = None
    runners: Mapping[str, CellRunner] = field(default_factory=dict)
    """Cell kinds the front end runs itself (``{"task": ...}``), by kind."""
    code_kernels: Any = None
    """The session's ``codekernel.CodeKernels`` for ``[code]`` cells in a trusted folder
    (None: a kernel is started for the cell and stopped after it)."""
    path: Path | None = None
    """The message file itself: an external agent (ACP) may never read or write it."""
    permission_asker: Any = None
    """The person answering an external agent's permission requests (``acp.PermissionAsker``:
    a terminal prompt, a JupyterLab dialog); None: nobody, so they are rejected unless the
    user's ``tce acp add --permissions allow`` says otherwise."""
    acp_sessions: Any = None
    """External agents kept running across turns (``acp.AcpSessions``: the Agent kernel's,
    one per open conversation); None: the agent is started for the turn and ended with it."""

    @property
    def folder(self) -> Path:
        """Where the file's own names (toolbox, ``[async]`` files, includes) resolve."""
        return self.base_dir or Path.cwd()


@dataclass(frozen=True)
class Plan:
    """What running a cell will do, decided before anything is sent."""

    cell_id: str
    index: int  # 1-based, among the conversation's cells (as ``tce list`` numbers them)
    kind: str
    agent: Agent | None = None
    route: trust.Route | None = None
    chosen: Selections = field(default_factory=Selections)
    included: tuple[Any, ...] | None = None
    """The cells of other files ``chosen`` names, read while planning (a missing file stops
    the turn before anything is written)."""


def find_cell(nb: Mapping[str, Any], cell_id: str) -> tuple[int, dict[str, Any]]:
    """(1-based index, cell) of the cell with footnote id ``cell_id``."""
    for i, cell in enumerate(hist.conversation_cells(nb), start=1):
        if fmt.cell_id(cell) == cell_id:
            return i, cell
    raise KeyError(cell_id)


def plan(nb: Mapping[str, Any], cell_id: str, options: RunOptions) -> Plan:
    """Decide the turn: ``AgentError`` (unknown agent), ``TrustError`` (an endpoint the file
    may not choose, a URL in a model's name, an ``[async]`` file it may not write),
    ``SelectionError``, ``FormatError`` (front matter), ``TrustError`` or ``AttachmentError``
    for a file the message names (``attachments.check``) before anything runs; ``TrustError``
    too for an MCP server the agent asks for that its folder may not use (one the folder
    defines, one of the user's not marked for untrusted folders). The agent's budgets are
    bounded here (``agents.bound_agent``)."""
    index, cell = find_cell(nb, cell_id)
    kind = fmt.cell_kind(cell)
    if kind in MODEL_FREE or kind in options.runners:
        return Plan(cell_id, index, kind)
    check_environment(options.env)  # PERCENT_AGENT_RETRIES=abc: one line, nothing written
    hist.check_history_values(nb)  # history="exlcude": one line, the cell is not sent
    check_mentions(message_of(cell, options), options.folder)  # @var: refused untrusted
    agent, _ = bound_agent(resolve_agent(nb, cell, cli_agent=options.agent, model=options.model,
                                         env=options.env), options.folder)
    if agent.acp is not None:  # an external agent: the user's, in a trusted folder only
        from jupyter_percent_agent.runtime.acp_turn import check_acp_agent

        check_acp_agent(agent, options.folder)
        chosen = selections(nb, options.include, options.exclude)
        check_selected(chosen, len(hist.conversation_cells(nb)))
        attachments.check(message_of(cell, options), options.folder)
        return Plan(cell_id, index, kind, agent, None, chosen,
                    tuple(load_included(chosen, options.folder)))
    from jupyter_percent_agent.mcptools.config import McpConfigError
    from jupyter_percent_agent.runtime.toolset import check_mcp_servers

    # models a file chose (not the user's own: the environment's agent, or --model)
    from_file = agent.source != "environment" and not options.model
    route = trust.route_agent(agent.name, agent.api_base, agent.models, from_file=from_file,
                              folder=options.folder, env=options.env)
    try:  # a server this folder may not use: refused before anything starts
        if agent.has_tools:
            check_mcp_servers(agent, nb, options.folder)
    except McpConfigError:
        pass  # the user's mcp.json is broken: said in the file when the tools load
    if kind == "async":
        async_file(cell, options.folder)  # a refused [async] file stops here, nothing written
    chosen = selections(nb, options.include, options.exclude)
    check_selected(chosen, len(hist.conversation_cells(nb)))
    # a file the message names that may not or cannot go: one line, nothing sent or written
    attachments.check(options.current_text if options.current_text is not None
                      else fmt.message_text(cell), options.folder)
    return Plan(cell_id, index, kind, agent, route, chosen,
                tuple(load_included(chosen, options.folder)))


def message_of(cell: Mapping[str, Any], options: RunOptions) -> str:
    """The text of the message being sent: the live source the kernel sent, else the file's."""
    return options.current_text if options.current_text is not None else fmt.message_text(cell)


def step_limit(options: RunOptions, agent: Agent) -> int:
    """ATTP steps for one message: the caller's own limit (up to the hard cap), else the
    agent's, as ``plan`` bounded it (a file may lower the user's limit, not raise it)."""
    if options.max_steps:
        return min(options.max_steps, int(trust.LIMITS["max_steps"].hard))
    return int(agent.max_steps or trust.bound("max_steps", None, folder=None).value or 1)


async def execute(nb: Mapping[str, Any], decided: Plan, run: Run, options: RunOptions,
                  transport: Transport) -> None:
    """Run the planned cell of ``nb`` into ``run``."""
    _, cell = find_cell(nb, decided.cell_id)
    if decided.kind in options.runners:
        await options.runners[decided.kind](cell, run, options)
        return
    if decided.kind == "code":
        from jupyter_percent_agent.runtime.code import run_code_cell

        await run_code_cell(cell, run, nb=nb, folder=options.folder,
                            kernels=options.code_kernels)
        return
    if decided.kind in ("tool_call", "toolchain"):
        from jupyter_percent_agent.runtime.cells import run_tool_cell

        await run_tool_cell(cell, run, options.folder, nb)
        return
    if decided.kind == "async" and landed(cell, run, options.folder):
        return
    agent, route = decided.agent, decided.route
    if agent is not None and agent.acp is not None:
        from jupyter_percent_agent.runtime.acp_turn import acp_turn

        mentions = await values(message_of(cell, options), options.folder,
                                options.code_kernels)
        sent = with_values(message_of(cell, options), mentions) if mentions else None

        async def messages_for(vision: bool) -> list[dict[str, Any]]:
            history = await plan_history(
                nb, decided.index, agent, decided.chosen, base_dir=options.folder,
                system_prompt=agent.system_prompt, transport=transport,
                current_text=sent if sent is not None else options.current_text,
                included=decided.included, on_event=run.tell)
            run.dropped_groups(history.dropped)
            return history.messages_for(vision=vision)

        await acp_turn(nb, decided.index, agent, run, options=options,
                       messages_for=messages_for, sent=sent)
        return
    from jupyter_percent_agent.mcptools import McpConfigError, McpServerError
    from jupyter_percent_agent.runtime.summaries import make_summaries
    from jupyter_percent_agent.runtime.toolset import (
        offered_tools,
        system_prompt_for,
        tools_for,
        with_search,
    )
    from jupyter_percent_agent.tools import in_thread

    assert agent is not None and route is not None
    try:
        # off the event loop: starting an MCP server may take its 30 s, and an interrupt
        # (Ctrl-C, the kernel's stop button) must not wait for it
        toolset = await in_thread(lambda: tools_for(agent, options.folder, nb)) \
            if agent.has_tools else None
    except McpServerError as exc:  # one [error] naming the server; the conversation goes on
        run.fail(type(exc).__name__, str(exc))  # a tool's failure, not the model's
        run.emit(fmt.error_output(type(exc).__name__, str(exc), [],
                                  out_id=run.next_output_id()))
        return
    except McpConfigError as exc:  # the user's config: said in the file too, then refused
        run.fail(type(exc).__name__, str(exc))
        run.emit(fmt.error_output(type(exc).__name__, str(exc), [],
                                  out_id=run.next_output_id()))
        raise
    run.answered_by(agent.name, agent.models[0])
    offered = None
    if toolset is not None:
        cells = hist.conversation_cells(nb)
        offered = offered_tools(agent, toolset, message_of(cell, options),
                                cells[: decided.index - 1])
        if offered is not None:  # not all described: search_tools(words) finds the others
            toolset, offered = with_search(toolset, offered)
    await transport.ready()
    mentions = await values(message_of(cell, options), options.folder, options.code_kernels)
    run.made_summaries(await make_summaries(nb, decided.index, agent, run, route=route,
                                            transport=transport))
    history = await plan_history(nb, decided.index, agent, decided.chosen,
                                 base_dir=options.folder,
                                 system_prompt=system_prompt_for(agent, toolset, offered),
                                 transport=transport,
                                 current_text=with_values(message_of(cell, options), mentions)
                                 if mentions else options.current_text,
                                 included=decided.included,
                                 summaries={k: v[0] for k, v in run.summaries.items()},
                                 on_event=run.tell)
    run.dropped_groups(history.dropped)
    if mentions and mentions.images:  # a figure @var: named goes with the message
        current = next(t for t in history.turns if t.group == hist.CURRENT)
        current.images += mentions.images
    if history.warning:
        run.tell(Status(history.warning))
    messages = history.messages
    if history.has_images:  # code cells' plots: image parts for a model that sees them
        from jupyter_percent_agent.runtime.code_history import sees_images

        messages = history.messages_for(vision=sees_images(agent.vision, agent.models[0]))
    extra: dict[str, Any] = {"dropped": history.dropped} if history.dropped else {}
    if history.candidates:  # auto selection chose: which auto cells this request held
        extra["history_auto"] = [g for g in history.auto_sent if g not in history.dropped]
    if offered is not None:
        extra["tools_offered"] = list(offered)
    if history.attached:  # what went with the message: its reply's footnote says so
        extra["attached"] = history.attached
    if toolset is None:
        from jupyter_percent_agent.runtime.reply import plain_reply

        await plain_reply(run, agent, messages, route=route, transport=transport,
                          extra=extra)
    else:
        from jupyter_percent_agent.runtime.attp_loop import attp_loop
        from jupyter_percent_agent.runtime.code import output_cap

        await attp_loop(run, agent, toolset, messages, route=route,
                        transport=transport, extra=extra, max_steps=step_limit(options, agent),
                        image_cap=output_cap(options.folder))
    if decided.kind == "async" and run.ok:
        land(cell, run, options.folder)


def new_run(nb: Mapping[str, Any], cell_id: str, on_event: OnEvent = ignore) -> Run:
    """An empty run for the cell ``cell_id`` (its output ids follow the cell's outputs)."""
    _, cell = find_cell(nb, cell_id)
    return Run(cell_id, existing=cell.get("outputs") or [], on_event=on_event)


async def run_turn(nb: Mapping[str, Any], cell_id: str, options: RunOptions | None = None,
                   on_event: OnEvent = ignore, *, transport: Transport | None = None,
                   decided: Plan | None = None, run: Run | None = None) -> Run:
    """Run the cell ``cell_id`` of ``nb`` and return what it produced (nothing is written:
    the caller applies the run). Cancelling the task interrupts the run; pass ``run``
    (``new_run``) to keep what was complete when that happens."""
    options = options or RunOptions()
    decided = decided or plan(nb, cell_id, options)
    run = run or new_run(nb, cell_id, on_event)
    try:
        await execute(nb, decided, run, options, transport or default_transport())
    except asyncio.CancelledError:
        run.interrupt()
        raise
    return run
