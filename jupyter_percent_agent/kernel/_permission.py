"""An external agent's permission requests, asked of the person at the front end.

Jupyter's own way to ask the person while a cell runs is the stdin channel: the kernel sends
``input_request`` and the front end answers ``input_reply``. A front end says whether a
person is there with the execute request's ``allow_stdin``: JupyterLab and ``jupyter
console`` say yes; nbclient, papermill and ``jupyter execute`` say no, and then nobody is
asked (the request is rejected, unless the user's own ``--permissions`` for that agent says
otherwise: ``acp.AcpSession`` decides that, given no asker).

The request carries a plain prompt every front end can show (the tool's title, kind, command
or diff, and the agent's options, numbered) and, beside it in the message content,
:data:`PERMISSION_KEY`: the same as JSON, from which the labextension builds a proper dialog
and answers with the chosen option's id. Any answer that names no option rejects.

The wait is ``_stdin.ask_front_end``'s, the one ``input()`` in a ``[code]`` cell uses: a poll
on the event loop, so the agent's other updates stream meanwhile, and a question the turn
withdraws (an interrupt: ``acp`` cancels the wait and answers the agent "cancelled") stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jupyter_percent_agent.kernel._stdin import ask_front_end

if TYPE_CHECKING:
    from jupyter_percent_agent.acp import PermissionOption, PermissionRequest

PERMISSION_KEY = "percent_agent_permission"
"""The ``input_request`` content's field holding the request as JSON (``labextension/src/
permission.ts``): ``{"agent", "title", "kind", "locations", "command", "diffs": [{"path",
"diff"}], "options": [{"id", "name", "kind"}]}``."""

DIFF_LINES = 60
"""Lines of each diff shown in the plain prompt (the dialog shows it whole)."""


def request_json(agent: str, request: PermissionRequest) -> dict[str, Any]:
    """What the dialog shows: the tool call's title, kind, locations, command, diffs, and
    the options the agent offers."""
    call = request.tool_call
    raw = call.raw_input if isinstance(call.raw_input, dict) else {}
    command = raw.get("command")
    if isinstance(command, list):
        command = " ".join(str(part) for part in command)
    return {
        "agent": agent,
        "title": call.title,
        "kind": call.kind,
        "locations": list(call.locations),
        "command": command if isinstance(command, str) else None,
        "diffs": [{"path": d.path, "diff": d.unified()} for d in call.diffs],
        "options": [{"id": o.id, "name": o.name, "kind": o.kind} for o in request.options],
    }


def plain_prompt(asked: dict[str, Any]) -> str:
    """The request as text, for a front end that shows only the prompt."""
    lines = [f"{asked['agent']} asks permission: {asked['title']} ({asked['kind']})"]
    lines += [f"  at {where}" for where in asked["locations"]]
    if asked["command"]:
        lines.append(f"  $ {asked['command']}")
    for diff in asked["diffs"]:
        shown = diff["diff"].splitlines()
        lines += shown[:DIFF_LINES]
        if len(shown) > DIFF_LINES:
            lines.append(f"  ... {len(shown) - DIFF_LINES} more lines")
    options = ", ".join(f"{n}: {o['name']}" for n, o in enumerate(asked["options"], 1))
    lines.append(f"Answer {options} (anything else rejects): ")
    return "\n".join(lines)


def chosen_option(request: PermissionRequest, answer: str) -> PermissionOption | None:
    """The option an answer names: its id, its number in the prompt, or its name (any
    case); None (rejected) for anything else."""
    answer = answer.strip()
    for option in request.options:
        if answer == option.id:
            return option
    if answer.isdigit() and 1 <= int(answer) <= len(request.options):
        return request.options[int(answer) - 1]
    for option in request.options:
        if answer.casefold() in (option.name.casefold(), option.kind.casefold()):
            return option
    return None


class StdinAsker:
    """Asks one cell's permission requests over the stdin channel of ``kernel`` (an
    ipykernel ``Kernel``), one at a time, as the request that ran the cell (its parent and
    ident taken now: the agent asks from a task an earlier cell may have started, which
    ipykernel's context would take for that cell's); ``agent()`` names the agent asking
    (known once the turn has begun)."""

    def __init__(self, kernel: Any, agent: Callable[[], str]) -> None:
        self.kernel = kernel
        self.agent = agent
        self.request = (kernel.get_parent("shell"), kernel._parent_ident["shell"])
        self._lock = asyncio.Lock()

    async def __call__(self, request: PermissionRequest) -> PermissionOption | None:
        asked = request_json(self.agent(), request)
        async with self._lock:
            answer = await ask_front_end(self.kernel, plain_prompt(asked), False,
                                         request=self.request, extra={PERMISSION_KEY: asked})
        return chosen_option(request, answer)
