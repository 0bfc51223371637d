"""The client's side of ACP, confined to the conversation's folder: file reads and writes the
agent asks of the client, and the terminals it asks the client to run.

A path must lie inside the folder under the same rules as a path a message file names
(``trust.resolve_inside``: never above the folder, never through a link out of it, never in a
version-control, hidden or ``toolbox/`` folder) and is never the open message file itself (the
conversation's own record: the agent speaks into it through its reply). ACP's paths are
absolute; one inside the folder is checked as the relative path it is. Writes go through the
one atomic write (``format.write_text``); a terminal runs in the folder (or a folder inside
it) with the user's tool time limit and keeps at most the code-output cap of its output,
the latest part, as ACP asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust


class Folder:
    """The conversation's folder as the agent may use it; ``protected``: files it may never
    read or write (the open message file)."""

    def __init__(self, folder: os.PathLike[str] | str, *,
                 protected: tuple[os.PathLike[str] | str, ...] = ()) -> None:
        self.given = os.path.abspath(os.fspath(folder))
        self.root = os.path.realpath(self.given)
        self.protected = frozenset(os.path.realpath(os.fspath(p)) for p in protected)

    def relative(self, path: str) -> str:
        """``path`` (absolute, as ACP sends it, or relative to the folder) relative to it;
        ``TrustError`` when it is elsewhere."""
        if not os.path.isabs(path):
            return path
        for base in (self.root, self.given):
            rel = os.path.relpath(os.path.normpath(path), base)
            if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
                return rel
        raise trust.TrustError(f"{path!r} is outside the conversation's folder {self.root}",
                               "an ACP agent reads and writes only inside the folder of the "
                               "conversation; open the conversation there", kind="path")

    def check(self, path: str, what: str) -> Path:
        """The real path inside the folder that ``path`` names, for ``what`` (``read``,
        ``write``, ``terminal folder``); ``TrustError`` (kind ``path``) in one line when the
        rules refuse it."""
        rel = self.relative(path)
        # a file read must have no other hard link (its other name may lie anywhere); a write
        # replaces the name (the atomic write), never the content another name shares
        real = trust.resolve_inside(self.root, rel, what=f"ACP {what} of",
                                    directory=what == "terminal folder", one_link=what == "read")
        if os.fspath(real) in self.protected:
            raise trust.TrustError(f"ACP {what} of {rel!r}: the open message file itself",
                                   "the conversation's file changes only through its replies",
                                   kind="path")
        return real

    def read(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        """The text of a file inside the folder, from 1-based ``line``, ``limit`` lines."""
        real = self.check(path, "read")
        text = fmt.read_text(real, real=True)
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        return "".join(lines[start: None if limit is None else start + limit])

    def write(self, path: str, content: str) -> Path:
        """Replace (or create) a file inside the folder, atomically."""
        real = self.check(path, "write")
        real.parent.mkdir(parents=True, exist_ok=True)
        self.check(path, "write")  # a folder made a link meanwhile: refused, not followed
        fmt.write_text(real, content, real=True)
        return real


class Terminal:
    """One command the agent asked the client to run: its output (the last ``cap`` bytes),
    ended by the time limit, by ``kill`` or when the session closes."""

    def __init__(self, process: asyncio.subprocess.Process, line: str, *, cap: int,
                 seconds: float) -> None:
        self.process = process
        self.line = line
        self.cap = cap
        self.output = bytearray()
        self.truncated = False
        self.timed_out = False
        self.recorded = False  # told as a ClientAction (once: on exit or release)
        self._reader = asyncio.ensure_future(self._read())
        self._timer = asyncio.get_running_loop().call_later(seconds, self._time_up)

    @classmethod
    async def start(cls, command: str, args: list[str], *, cwd: Path,
                    env: dict[str, str], cap: int, seconds: float) -> Terminal:
        """Start ``command`` (a shell line when it has spaces and no ``args``) in ``cwd``, in
        a process group of its own (ended with it)."""
        argv = ["/bin/sh", "-c", command] if not args and " " in command.strip() \
            else [command, *args]
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env={**os.environ, **env}, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)
        return cls(process, " ".join([command, *args]), cap=cap, seconds=seconds)

    async def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while chunk := await stream.read(65536):
            self.output += chunk
            if len(self.output) > self.cap:
                del self.output[: len(self.output) - self.cap]
                self.truncated = True

    def _time_up(self) -> None:
        self.timed_out = True
        self.kill()

    @property
    def text(self) -> str:
        """The output kept, as text (a cut UTF-8 sequence at its start dropped)."""
        return bytes(self.output).decode("utf-8", errors="ignore" if self.truncated
                                         else "replace")

    @property
    def exit_code(self) -> int | None:
        code = self.process.returncode
        return code if code is not None and code >= 0 else None

    @property
    def signal_name(self) -> str | None:
        code = self.process.returncode
        if code is None or code >= 0:
            return None
        with contextlib.suppress(ValueError):
            return signal.Signals(-code).name
        return str(-code)

    async def wait(self) -> None:
        """Until the command has ended and its output is read."""
        await self.process.wait()
        await self._reader
        self._timer.cancel()

    def kill(self) -> None:
        """End the command and everything it started."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)

    async def close(self) -> None:
        self.kill()
        self._timer.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.wait(), 5)
