"""Trust withheld from a conversation whose file is not confirmed.

A folder's trust covers the files in it. The Agent kernel knows which file it serves only from
what its start names (``JPY_SESSION_NAME``) or, under a runner that names none (papermill,
nbclient, ``jupytext --execute``, ``nbconvert --execute``), from a message file of its working
folder that holds the running cells. When neither confirms the file (a copy a runner wrote, a
renamed notebook that is not the file the kernel was started for), the kernel runs the cell
inside ``withholding(...)``: meanwhile no folder is trusted in this process (``is_trusted``
says no), so ``[code]`` cells go to the sandbox, no ``toolbox/`` is imported, no budget is
raised; and every refusal that would name ``tce trust FOLDER`` names why trust is withheld and
how to run the conversation trusted instead (``TrustError``).

The switch is the process's, not a context variable: threads a run starts (tool calls, MCP
hosts) see it too, and it can only make a decision stricter. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Withheld:
    """Why a conversation runs untrusted, and how the user runs it trusted instead."""

    why: str
    how: str

    def __str__(self) -> str:
        return f"this conversation runs untrusted: {self.why}; to run it trusted: {self.how}"


_CURRENT: list[Withheld] = []


def withheld() -> Withheld | None:
    """The reason trust is withheld in this process right now (None: it is not)."""
    return _CURRENT[-1] if _CURRENT else None


@contextmanager
def withholding(reason: Withheld | None) -> Iterator[None]:
    """No folder is trusted while inside, when ``reason`` is given (None: nothing changes)."""
    if reason is None:
        yield
        return
    _CURRENT.append(reason)
    try:
        yield
    finally:
        _CURRENT.remove(reason)
