"""What a running turn tells its front end, as typed events.

A front end passes ``on_event(event)`` and matches on the class (``match event: case
Delta(text): ...``). Streamed text (``Delta``, ``Reasoning``) may be dropped by a front end
that only wants results; every output that will be saved arrives as ``OutputMade``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Answering:
    """The agent that answers this cell, and the model it tries first."""

    agent: str
    model: str


@dataclass(frozen=True, slots=True)
class Delta:
    """A piece of the reply being streamed (of an ATTP step when ``Step`` came before)."""

    text: str


@dataclass(frozen=True, slots=True)
class Reasoning:
    """A piece of a reasoning model's thinking: shown, never the answer."""

    text: str


@dataclass(frozen=True, slots=True)
class Retry:
    """The call failed and is tried again (or on the next model): what was streamed of this
    attempt is void. ``reason`` may name the ``api_base`` (terminal only, never saved)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Status:
    """A line for the user about what the turn is doing (e.g. summarizing a cell)."""

    line: str


@dataclass(frozen=True, slots=True)
class Step:
    """The ATTP loop begins model step ``n`` (1-based)."""

    n: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """A tool streamed an intermediate result (``data.stream_chunk``)."""

    tool: str
    data: Any


@dataclass(frozen=True, slots=True)
class CodeText:
    """A piece of a ``[code]`` cell's stdout or stderr (``name``) as its kernel prints it;
    the saved stream output, joined, arrives later as ``OutputMade``."""

    name: str
    text: str


@dataclass(frozen=True, slots=True)
class OutputMade:
    """An output (an nbformat output dict) was added to the cell: it will be saved."""

    output: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The turn was cancelled; what was complete is kept. ``partial``: the reply that was
    streaming, kept with ``interrupted=true`` (None when nothing was streaming)."""

    partial: dict[str, Any] | None = None


Event = (Answering | Delta | Reasoning | Retry | Status | Step | Chunk | CodeText | OutputMade
         | Interrupted)
OnEvent = Callable[[Event], None]


def ignore(event: Event) -> None:
    """The ``on_event`` of a caller that wants only the result."""
