"""The result records returned by ``execute``: plain dataclasses holding JSON-ready values."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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
    status: str  # "success" | "error" | "timeout"
    error: str | None = None


@dataclass(frozen=True)
class SandboxResult:
    """What a sandbox run produced.

    ``status`` is ``"success"``, ``"error"``, ``"timeout"``, ``"memory"``, ``"cpu"`` or
    ``"output_limit"``; ``result`` is the JSON value of ``__result__`` (None if unset or on
    failure); ``stdout`` the captured prints; ``instructions`` the tools' ``instruction``
    strings in call order; ``duration`` wall-clock seconds, start-up included.
    """

    status: str
    result: Any = None
    stdout: str = ""
    error: ErrorInfo | None = None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    instructions: list[str] = field(default_factory=list)
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the code ran to the end without error."""
        return self.status == "success"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole result."""
        return asdict(self)
