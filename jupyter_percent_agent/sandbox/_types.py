"""The result records returned by ``execute``: plain dataclasses holding JSON-ready values,
with the package's one status vocabulary (``outcome.RunStatus``, and a ``Reason`` when a limit
ended the run)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from jupyter_percent_agent.outcome import Reason, RunStatus


@dataclass(frozen=True)
class ErrorInfo:
    """Why a run failed: exception type name, message, and line in the submitted code."""

    type: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line is not None else ""
        return f"{self.type}: {self.message}{where}"


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call made by sandboxed code, as seen by the parent."""

    name: str
    args: dict[str, Any]
    duration: float
    status: RunStatus
    error: str | None = None
    reason: Reason | None = None  # TIMEOUT: the run's time ran out during the call

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the record."""
        return asdict(self)


@dataclass(frozen=True)
class SandboxResult:
    """What a sandbox run produced.

    ``status`` is ``RunStatus.OK`` or ``RunStatus.ERROR``; ``reason`` the limit that ended a
    failed run (``Reason.TIMEOUT``, ``MEMORY``, ``CPU``, ``OUTPUT_LIMIT``; None for any other
    error); ``result`` is the JSON value of ``__result__`` (None if unset or on failure);
    ``stdout`` the captured prints; ``instructions`` the tools' ``instruction`` strings in call
    order; ``duration`` wall-clock seconds, start-up included.
    """

    status: RunStatus
    reason: Reason | None = None
    result: Any = None
    stdout: str = ""
    error: ErrorInfo | None = None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the code ran to the end without error."""
        return self.status is RunStatus.OK

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole result (``status`` and ``reason`` as their
        values: ``"ok"``, ``"error"``; ``"timeout"``...)."""
        return asdict(self)
