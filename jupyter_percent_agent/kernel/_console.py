"""What a console (``jupyter console``, qtconsole, the conformance suite) asks of a kernel
besides running cells: is this input a whole message yet, and what was run before.

A message is complete unless it is blank or ends inside an unclosed code fence (the user is
still typing the block: the console then keeps reading lines). Nothing a user types is
*invalid*: any Markdown is a message. History is this kernel's inputs (and, on request, the
text of their last output), in the shapes of the Jupyter protocol's ``history_request``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from jupyter_percent_agent import format as fmt

SESSION = 1
"""History session number: this kernel keeps no history across restarts."""


def is_complete(code: str) -> dict[str, str]:
    """The ``is_complete_reply`` content for ``code``."""
    if not code.strip() or fmt.unclosed_fence(code.rstrip("\n")) is not None:
        return {"status": "incomplete", "indent": ""}
    return {"status": "complete"}


@dataclass
class _Entry:
    line: int
    code: str
    output: str | None


class InputHistory:
    """The inputs this kernel ran, numbered by execution count."""

    def __init__(self) -> None:
        self.entries: list[_Entry] = []

    def record(self, line: int, code: str, output: str | None) -> None:
        self.entries.append(_Entry(line, code, output))

    def query(self, hist_access_type: str, output: bool = False, session: int | None = None,
              start: int | None = None, stop: int | None = None, n: int | None = None,
              pattern: str | None = None, unique: bool = False) -> list[Any]:
        """The ``history`` list of a ``history_reply``: ``(session, line, input)`` tuples, or
        ``(session, line, (input, output))`` with ``output``."""
        entries = self.entries
        if hist_access_type == "tail":
            entries = entries[-n:] if n else entries
        elif hist_access_type == "range":
            if session not in (None, SESSION, 0):
                entries = []
            else:
                lo = start or 0
                entries = [e for e in entries if e.line >= lo and (stop is None or e.line < stop)]
        elif hist_access_type == "search":
            entries = [e for e in entries if fnmatch.fnmatchcase(e.code, pattern or "*")]
            if unique:
                seen: set[str] = set()
                kept = []
                for e in reversed(entries):
                    if e.code not in seen:
                        seen.add(e.code)
                        kept.append(e)
                entries = kept[::-1]
            if n:
                entries = entries[-n:]
        else:
            entries = []
        if output:
            return [(SESSION, e.line, (e.code, e.output)) for e in entries]
        return [(SESSION, e.line, e.code) for e in entries]
