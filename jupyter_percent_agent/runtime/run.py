"""``Run``: what running one cell produced, owned by one object.

The outputs to append to the cell (with their REQ010 ids), the summaries made on the way, the
history groups dropped to fit the window, token usage, the reply, and how it ended. Code that
runs a turn changes a run only through its methods (``emit``, ``fail``, ``add_usage``...), so
that an output is always sent to the front end as it is made, and a failure always has a type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.outcome import Outcome, RunStatus
from jupyter_percent_agent.runtime.events import (
    Answering,
    Event,
    Interrupted,
    OnEvent,
    OutputMade,
    ignore,
)


class Run:
    """One cell's run; how it ended is its :class:`Outcome` (``status``: ``RunStatus``)."""

    def __init__(self, cell_id: str, *, existing: Iterable[Mapping[str, Any]] = (),
                 on_event: OnEvent = ignore) -> None:
        self.cell_id = cell_id
        self._existing = list(existing)  # the cell's outputs before this run (numbering)
        self._on_event = on_event
        self._outputs: list[dict[str, Any]] = []
        self._outcome = Outcome()
        self._error_detail: str | None = None
        self._reply = ""
        self._agent = ""
        self._summaries: dict[str, tuple[str, str]] = {}  # cell id -> (summary, content hash)
        self._dropped: list[str] = []
        self._partial: dict[str, Any] | None = None
        self._count: int | None = None
        self._proposed: list[tuple[str, str]] = []

    # -- what happened ---------------------------------------------------------------------

    @property
    def outputs(self) -> Sequence[dict[str, Any]]:
        return tuple(self._outputs)

    @property
    def outcome(self) -> Outcome:
        """How the run ended (a copy), with the seconds its model calls took."""
        o = self._outcome
        return Outcome(o.status, o.error_type, o.error, dict(o.usage),
                       model_seconds(self._outputs))

    @property
    def status(self) -> RunStatus:
        return self._outcome.status

    @property
    def ok(self) -> bool:
        return self._outcome.ok

    @property
    def error(self) -> str | None:
        """One line, safe to save in the file (no ``api_base``)."""
        return self._outcome.error

    @property
    def error_type(self) -> str | None:
        return self._outcome.error_type

    @property
    def error_detail(self) -> str | None:
        """``error`` as the terminal shows it (may name the ``api_base``)."""
        return self._error_detail or self._outcome.error

    @property
    def reply(self) -> str:
        """The final answer (or a tool cell's result), as text."""
        return self._reply

    @property
    def usage(self) -> dict[str, Any]:
        return dict(self._outcome.usage)

    @property
    def agent(self) -> str:
        """The name of the agent that answered ("" for cells that call no model)."""
        return self._agent

    @property
    def execution_count(self) -> int | None:
        """A code cell's execution count in its kernel (None for other cells)."""
        return self._count

    @property
    def proposed(self) -> list[tuple[str, str]]:
        """Code the reply proposes for the user to run: (language, code), in order."""
        return list(self._proposed)

    @property
    def summaries(self) -> Mapping[str, tuple[str, str]]:
        """Summaries made for earlier ``history="summary"`` cells: id -> (text, content hash),
        to be stored with the cells (``store.apply_summaries``)."""
        return dict(self._summaries)

    @property
    def dropped(self) -> list[str]:
        """History groups (cell ids) left out to fit the agent's context window."""
        return list(self._dropped)

    def to_json(self, *, detail: bool = False) -> dict[str, Any]:
        """How the run ended as JSON (``tce chat --json``, the MCP server's ``send_message``):
        ``cell``, ``agent``, ``status``, ``reply``, ``error`` (``detail``: as the terminal
        shows it, which may name the ``api_base``; else the line safe to save) and
        ``usage``."""
        return {"cell": self.cell_id, "agent": self.agent, "status": str(self.status),
                "reply": self.reply, "error": self.error_detail if detail else self.error,
                "usage": self.usage}

    # -- changing it ---------------------------------------------------------------------

    def tell(self, event: Event) -> None:
        """Pass an event (streamed text, a status line) on to the front end."""
        self._on_event(event)

    def answered_by(self, agent: str, model: str) -> None:
        self._agent = agent
        self._on_event(Answering(agent, model))

    def counted(self, execution_count: int) -> None:
        """The kernel ran the code cell as its ``execution_count``-th execution."""
        self._count = execution_count

    def propose(self, language: str, code: str) -> None:
        """The reply proposes ``code`` (a new ``[code]`` cell under it, never run by itself)."""
        self._proposed.append((language, code))

    def made_summaries(self, summaries: Mapping[str, tuple[str, str]]) -> None:
        self._summaries.update(summaries)

    def dropped_groups(self, groups: Iterable[str]) -> None:
        self._dropped = list(groups)

    def next_output_id(self) -> str:
        """The next ``ID.n`` of the cell (the format core's one rule for output ids)."""
        return fmt.next_output_id(self.cell_id, [*self._existing, *self._outputs])

    def emit(self, output: dict[str, Any]) -> dict[str, Any]:
        """Add an output to the cell and tell the front end."""
        self._outputs.append(output)
        self._on_event(OutputMade(output))
        return output

    def keep_partial(self, output: dict[str, Any]) -> None:
        """Keep the reply that was streaming as the turn is cancelled (the front end hears
        of it with ``Interrupted``)."""
        self._outputs.append(output)
        self._partial = output

    def fail(self, error_type: str, error: str, *, detail: str | None = None) -> None:
        """The run failed: ``error`` one line for the file, ``detail`` for the terminal."""
        self._outcome.fail(error_type, error)
        self._error_detail = detail

    def interrupt(self) -> None:
        """The turn was cancelled (Ctrl-C, the stop button)."""
        self._outcome.status = RunStatus.INTERRUPTED
        self._on_event(Interrupted(self._partial))

    def answer(self, text: str) -> None:
        """The final answer (what ``tce chat`` prints, an ``[async]`` cell writes)."""
        self._reply = text

    def add_usage(self, model: str | None, **measured: float | int | None) -> None:
        """Add one call's tokens and cost to the run's totals."""
        usage = self._outcome.usage
        for key, value in measured.items():
            if value is not None:
                usage[key] = round(usage.get(key, 0) + value, 8)
        usage["model"] = model


def model_seconds(outputs: Iterable[Mapping[str, Any]]) -> float:
    """Time spent in model calls, as the runtime measured them (replies' ``duration``)."""
    total = 0.0
    for out in outputs:
        if fmt.output_kind(out) == "reply":
            duration = fmt.output_attrs(out).get("duration")
            if isinstance(duration, int | float):
                total += float(duration)
    return total
