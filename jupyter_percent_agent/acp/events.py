"""What an external agent's turn tells its caller, as typed events (no SDK types leak out).

A caller passes ``on_event(event)`` to :class:`~jupyter_percent_agent.acp.AcpSession` and
matches on the class. Every ``session/update`` the agent sends becomes one event; so does every
request the agent made of the client (a file read or write, a terminal) and every permission
answered, so that a front end can record all of them in the reply. A tool call arrives as a
:class:`AgentToolCall` snapshot each time it changes (the same ``id``; the last one is its state).
Standard library only.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class MessageChunk:
    """A piece of the agent's reply text, as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ThoughtChunk:
    """A piece of the agent's thinking: shown folded, never the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class FileDiff:
    """An edit a tool call makes: ``old_text`` None for a new file."""

    path: str
    old_text: str | None
    new_text: str

    def unified(self) -> str:
        """The edit as a unified diff (``--- a/PATH`` / ``+++ b/PATH``)."""
        old = (self.old_text or "").splitlines(keepends=True)
        new = self.new_text.splitlines(keepends=True)
        lines = difflib.unified_diff(old, new, "/dev/null" if self.old_text is None
                                     else f"a/{self.path}", f"b/{self.path}")
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True, slots=True)
class AgentToolCall:
    """A tool call of the agent as it stands now. ``kind``: ACP's ``read``, ``edit``,
    ``delete``, ``move``, ``search``, ``execute``, ``think``, ``fetch``, ``other``;
    ``status``: ``pending``, ``in_progress``, ``completed``, ``failed``; ``locations``:
    ``PATH`` or ``PATH:LINE``; ``text``: its text content (output, a terminal's id named)."""

    id: str
    title: str
    kind: str = "other"
    status: str = "pending"
    locations: tuple[str, ...] = ()
    diffs: tuple[FileDiff, ...] = ()
    text: str = ""
    raw_input: Any = None

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """One step of the agent's plan: ``status`` ``pending``, ``in_progress``, ``completed``."""

    content: str
    status: str = "pending"
    priority: str = "medium"


@dataclass(frozen=True, slots=True)
class PlanUpdate:
    """The agent's whole plan, as it stands now (each update replaces the last)."""

    entries: tuple[PlanEntry, ...]

    def checklist(self) -> str:
        """The plan as a Markdown checklist (``- [x]`` done, ``- [ ]`` not yet)."""
        marks = {"completed": "[x]", "in_progress": "[ ]"}
        return "\n".join(f"- {marks.get(e.status, '[ ]')} {e.content}"
                         + (" (in progress)" if e.status == "in_progress" else "")
                         for e in self.entries)


@dataclass(frozen=True, slots=True)
class ContextUsage:
    """The session's context window (``used`` of ``size`` tokens) and cost so far, as the
    agent reports it (``usage_update``)."""

    used: int
    size: int
    cost: float | None = None
    currency: str | None = None


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """The tokens one prompt turn took (the ``session/prompt`` response's ``usage``)."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    thought_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ClientAction:
    """A request the agent made of the client, and what the client did: ``what`` is
    ``read``, ``write`` or ``terminal``; ``target`` the path (relative to the folder) or the
    command line; ``ok`` False when it was refused or failed (``detail`` says why, in one
    line); a terminal's ``output`` (capped) and ``exit_code``."""

    what: str
    target: str
    ok: bool
    detail: str = ""
    output: str = ""
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class PermissionOption:
    """One answer the agent offers: ``kind`` is ``allow_once``, ``allow_always``,
    ``reject_once`` or ``reject_always``."""

    id: str
    name: str
    kind: str

    @property
    def allows(self) -> bool:
        return self.kind.startswith("allow")


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    """The agent asks before a tool call: what it would do, and the answers it offers."""

    tool_call: AgentToolCall
    options: tuple[PermissionOption, ...]

    def option(self, *kinds: str) -> PermissionOption | None:
        """The first offered option of the first of ``kinds`` offered."""
        for kind in kinds:
            for opt in self.options:
                if opt.kind == kind:
                    return opt
        return None


@dataclass(frozen=True, slots=True)
class PermissionAnswered:
    """How a permission request was answered: ``chosen`` the option (None: rejected with no
    reject option offered, or cancelled); ``by`` is ``person``, ``setting`` (the user's
    ``--permissions``), ``no person`` (nobody to ask: rejected) or ``cancelled`` (the turn was
    cancelled before an answer)."""

    request: PermissionRequest
    chosen: PermissionOption | None
    by: str

    @property
    def allowed(self) -> bool:
        return self.chosen is not None and self.chosen.allows


AcpEvent = (MessageChunk | ThoughtChunk | AgentToolCall | PlanUpdate | ContextUsage
            | ClientAction | PermissionAnswered)
OnAcpEvent = Callable[[AcpEvent], None]


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """What the agent said it is at ``initialize``: its own ``name``, ``title`` and
    ``version``, whether it can load a session, and its capabilities as JSON."""

    name: str
    version: str
    title: str | None = None
    load_session: bool = False
    capabilities: dict[str, Any] = field(default_factory=dict)

    @property
    def described(self) -> str:
        """``NAME VERSION``, as a reply records it."""
        return f"{self.name} {self.version}".strip()


@dataclass(frozen=True, slots=True)
class PromptResult:
    """How one prompt turn ended: ACP's ``stop_reason`` (``end_turn``, ``max_tokens``,
    ``max_turn_requests``, ``refusal``, ``cancelled``) and its token usage, when given."""

    stop_reason: str
    usage: TokenUsage | None = None


def ignore(event: AcpEvent) -> None:
    """The ``on_event`` of a caller that wants only the result."""
