"""What a task run tells its front end, as typed events, beside the runtime's own
(``runtime.events``: ``Delta``, ``Retry``, ``OutputMade``... of each step's turn, passed on)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class RunStarted:
    """The run's transcript is ``path`` (written after every step). ``limits``: the budgets
    its files asked for that were lowered (``trust.Bounded.describe``), as its transcript
    records them."""

    path: Path
    limits: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StepStarted:
    """A step begins (``info``: a ``runner.StepInfo``: step, task_id, task_type, attempt)."""

    info: Any


@dataclass(frozen=True, slots=True)
class StepFinished:
    """A step ended (``info.outcome``, ``detail``, ``then``, ``seconds``)."""

    info: Any


OnEvent = Callable[[Any], None]
"""Called with a task event or a runtime event."""


def ignore(event: Any) -> None:
    """The ``on_event`` of a caller that wants only the result."""
