"""Message files on disk: a lock around every read-modify-write, and runs applied to a fresh
copy of the file, so two concurrent chats lose no message.

The lock is an ``fcntl.flock`` on a file in the user's private folder
(``trust.private_dir``) keyed by the message file's real path (the message file itself is
replaced atomically on every write, so it cannot carry the lock). Writes go through the
format core's atomic ``write``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime.run import Run
from jupyter_percent_agent.runtime.summaries import apply_summaries

EMPTY_MSG_FILE = ""


def _lock_path(path: Path) -> Path:
    folder = trust.private_dir() / "locks"
    folder.mkdir(exist_ok=True, mode=0o700)
    key = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:20]
    return folder / f"{key}.lock"


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the lock of one message file (blocking; released on exit, even on Ctrl-C)."""
    fd = os.open(_lock_path(Path(path)), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read(path: Path) -> dict[str, Any]:
    """Read a message file; a missing one is an empty conversation (the format core reads an
    empty ``.msg.md`` as one, and refuses a link out of its folder or a special file). A front
    matter whose YAML does not parse is a ``FormatError`` naming its line: nothing should be
    appended to a file whose settings cannot be read."""
    if not os.path.lexists(path):
        return fmt.reads(EMPTY_MSG_FILE, path=str(path))
    nb = fmt.read(path)
    check_front_matter(nb, str(path))
    return nb


def check_front_matter(nb: Mapping[str, Any], path: str | None = None) -> None:
    """Raise ``FormatError`` (naming the file and line) when the front matter's YAML does not
    parse, before anything is sent or written."""
    try:
        fmt.front_matter(nb)
    except fmt.FormatError as exc:
        raise fmt.FormatError(exc.reason, line=exc.line, path=path) from None


_FM = re.compile(r"\A---[ \t]*\n(.*?\n)?---[ \t]*\n", re.S)
_MESSAGES_OFF = re.compile(r"^messages[ \t]*:.*\n?", re.M)


def with_discussion(text: str, path: Path) -> str:
    """A plain ``.md``'s ``text`` with a Discussion section for messages (``tce chat
    --force``): the front matter gets ``message_section: Discussion`` and the text ends with
    that heading. Nothing is written: the section goes into the file with the first message."""
    first = text.find("\n")
    crlf = first > 0 and text[first - 1] == "\r"  # a CRLF file stays one (docs/format.md)
    if crlf:
        text = text.replace("\r\n", "\n")
    m = _FM.match(text)
    if m:  # messages: false would still say "no messages": --force means it goes
        body = _MESSAGES_OFF.sub("", m.group(1) or "")
        text = f"---\n{body}message_section: Discussion\n---\n" + text[m.end():]
    else:
        text = "---\nmessage_section: Discussion\n---\n" + text
    if not re.search(r"^#{1,6}\s+Discussion\s*$", text, re.M):
        text = text.rstrip("\n") + "\n\n## Discussion\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    fmt.reads(text, path=str(path))  # refuse what does not read back
    return text


def apply_outputs(nb: dict[str, Any], run: Run, *, text: str | None = None) -> None:
    """Append a run's outputs to its cell of ``nb`` and store the summaries it made (in
    place). A cell deleted meanwhile is appended again, with ``text``."""
    cells = nb.setdefault("cells", [])
    cell = next((c for c in cells if fmt.cell_id(c) == run.cell_id), None)
    if cell is None:
        cell = fmt.new_message(text or "", cell_id=run.cell_id)
        cells.append(cell)
    cell.setdefault("outputs", []).extend(run.outputs)
    if run.execution_count is not None:
        cell["execution_count"] = run.execution_count
    at = cells.index(cell) + 1
    for language, code in run.proposed:  # under the reply, for the user to read and run
        cells.insert(at, fmt.new_code_cell(code, language=language, cell_id=fmt.new_cell_id(nb),
                                           attrs={"proposed": True}))
        at += 1
    apply_summaries(nb, run.summaries)


def apply_run(path: Path, run: Run, *, text: str | None = None) -> dict[str, Any]:
    """Apply a run to a fresh copy of the file, under the lock; returns what was written."""
    with locked(path):
        nb = read(path)
        apply_outputs(nb, run, text=text)
        fmt.write(nb, path)
    return nb
