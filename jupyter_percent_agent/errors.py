"""One error vocabulary for the whole package: a base class, a small closed set of kinds, and
the one table that says what a kind means to each front end.

Every public exception class of the package derives from :class:`PercentAgentError` (keeping
its other bases: a ``FormatError`` is still a ``ValueError``, a ``TrustError`` a
``PermissionError``) and names its :class:`Kind`. A front end (``tce``, the kernel, the
contents manager, the task runner) never maps exception classes itself: it asks
:func:`report` for the kind, the one-line message and the name to show, and :data:`TABLE`
for the exit code, the HTTP status and the title. A new family of errors is one subclass
naming an existing kind; a new kind is one member of :class:`Kind` and one row of
:data:`TABLE`.

Standard library only: the format core and the sandbox's worker import it.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


class Kind(enum.Enum):
    """What went wrong, as a user needs to know it."""

    BAD_FILE = "bad_file"          # a file (message file, SOP folder, transcript) is malformed
    REFUSED = "refused"            # refused by trust: only the user's trust could allow it
    MODEL = "model"                # every model (and retry) failed
    TOOL = "tool"                  # a tool did not load, a tool or the sandbox failed
    USAGE = "usage"                # bad options, selections or arguments; nothing to read
    AGENT = "agent"                # an unknown agent, or an agent definition that is wrong
    FAILED = "failed"              # a workflow ended failed (a step failed past its handling)
    INTERRUPTED = "interrupted"    # Ctrl-C, the kernel's interrupt: what was complete is kept


@dataclass(frozen=True)
class Meaning:
    """What one kind means to the front ends: ``tce``'s exit code, the contents manager's
    HTTP status, the title of an HTTP error, and the ``error_type`` of a task step's
    ``[error]`` output (the name a task document's ``on_failure`` routes match)."""

    exit_code: int
    http_status: int
    title: str
    error_type: str


EXIT_OK = 0

TABLE: dict[Kind, Meaning] = {
    Kind.MODEL: Meaning(1, 502, "Model failed", "model_error"),
    Kind.FAILED: Meaning(1, 500, "Run failed", "runner_error"),
    Kind.USAGE: Meaning(2, 400, "Bad request", "runner_error"),
    Kind.BAD_FILE: Meaning(3, 400, "Malformed file", "runner_error"),
    Kind.TOOL: Meaning(4, 500, "Tool failed", "tool_error"),
    Kind.AGENT: Meaning(5, 400, "Bad agent", "runner_error"),
    Kind.REFUSED: Meaning(6, 403, "Refused", "trust_error"),
    Kind.INTERRUPTED: Meaning(130, 500, "Interrupted", "interrupted"),
}


def did_you_mean(name: str, known: Iterable[str], n: int = 3) -> str:
    """`` (did you mean 'a', 'b'?)`` naming the known names closest to ``name``, or ``""``:
    an argument that matches nothing is refused with this, never replaced by its nearest."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=n, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def exit_code(kind: Kind) -> int:
    """``tce``'s exit code for ``kind``."""
    return TABLE[kind].exit_code


class PercentAgentError(Exception):
    """The base of every error of the package: a one-line message for a user, where it
    happened (``path``, ``line``, ``cell``; ``None`` when not known) and its kind.

    Subclasses name their kind (``error_kind``) and may set ``path``, ``line`` and ``cell``
    on the instance; ``reason`` is the message without where (``str(self)`` unless set).
    """

    error_kind: Kind = Kind.USAGE
    path: str | None = None
    line: int | None = None
    cell: str | None = None

    @property
    def trust_folder(self) -> Path | None:
        """The folder whose trust would allow what was refused (None: no trust would)."""
        return None

    @property
    def ename(self) -> str:
        """The name shown in a kernel's error and an ``[error]`` output."""
        return type(self).__name__

    def user_message(self, path: str | None = None, *, root: str | None = None) -> str:
        """One line: where (the error's own path, else ``path`` when the file is what is
        wrong; then the line and the cell) and what. A path already in the reason is not
        repeated; a path under ``root`` is shown relative to it (a server never shows its
        own folders)."""
        reason = getattr(self, "reason", None) or str(self)
        shown = self.path if self.path is not None else (
            path if self.error_kind is Kind.BAD_FILE else None)
        if shown is not None and root is not None:
            shown = _relative(str(shown), root)
        where = []
        if shown is not None and str(shown) not in reason:
            where.append(str(shown))
            if self.line is not None:
                where.append(str(self.line))
        elif shown is None and self.line is not None and f"line {self.line}" not in reason:
            where.append(f"line {self.line}")
        if self.cell is not None and self.cell not in reason:
            where.append(f"cell {self.cell}")
        return _one_line((":".join(where) + ": " if where else "") + reason)


@dataclass(frozen=True)
class Report:
    """A failure as every front end shows it: its kind, a name, one line; for a refusal that
    trusting a folder lifts, that folder (a front end may offer to trust it)."""

    kind: Kind
    ename: str
    message: str
    trust_folder: Path | None = None

    @property
    def exit_code(self) -> int:
        return TABLE[self.kind].exit_code

    @property
    def http_status(self) -> int:
        return TABLE[self.kind].http_status

    @property
    def title(self) -> str:
        return TABLE[self.kind].title

    @property
    def error_type(self) -> str:
        return TABLE[self.kind].error_type


def find(exc: BaseException | None) -> PercentAgentError | None:
    """The package's error ``exc`` is, or was raised from (a library in between, such as
    jupytext, may wrap it)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, PercentAgentError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def report(exc: BaseException, *, path: str | None = None,
           root: str | None = None) -> Report | None:
    """How ``exc`` is shown: ``path`` is the file the front end was reading (named when the
    error does not say which file), ``root`` a folder whose paths are shown relative to it.
    ``None`` for an error none of the package's kinds describes (a bug: the front end lets
    it through, or logs its traceback)."""
    if isinstance(exc, PercentAgentError):
        return Report(exc.error_kind, exc.ename, exc.user_message(path, root=root),
                      exc.trust_folder)
    asyncio = sys.modules.get("asyncio")  # not imported: nothing could be cancelled
    if isinstance(exc, KeyboardInterrupt) or (
            asyncio is not None and isinstance(exc, asyncio.CancelledError)):
        return Report(Kind.INTERRUPTED, "KeyboardInterrupt", "interrupted")
    if isinstance(exc, FileNotFoundError):
        return Report(Kind.USAGE, type(exc).__name__,
                      f"{exc.filename or path}: no such file")
    if isinstance(exc, UnicodeDecodeError):
        return Report(Kind.BAD_FILE, type(exc).__name__, _one_line(f"{path}: {exc}"))
    if isinstance(exc, IsADirectoryError):
        return Report(Kind.BAD_FILE, type(exc).__name__,
                      f"{exc.filename or path}: a folder, not a file")
    if isinstance(exc, OSError):
        where = exc.filename or path
        return Report(Kind.USAGE, type(exc).__name__,
                      _one_line(f"{where}: {exc.strerror or exc}" if where else str(exc)))
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _relative(path: str, root: str) -> str:
    import os

    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
