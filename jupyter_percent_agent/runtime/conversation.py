"""Sending a message: the one use case every front end shares.

``send(conversation, options, on_event, transport=...)``: the conversation hands over the
notebook with the message in it and the turn planned (``begin``), the turn runs, and the
conversation keeps what it produced (``finish``), also when the turn was interrupted.

- ``FileConversation`` (``tce chat``): a message file on disk. ``begin``
  reads it under its lock, appends the message, plans the turn (an unknown agent, a refused
  endpoint or a bad selection stop here, and the file is left as it was) and saves it;
  ``finish`` applies the run to a fresh copy under the lock, so concurrent chats lose nothing.
- The agent kernel's conversation (``kernel._notebook.LiveConversation``): the notebook on
  disk with what the front end knows better laid over it; ``finish`` keeps the outputs and
  summaries for the rest of the session (JupyterLab saves the file, not the kernel).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.runtime import store
from jupyter_percent_agent.runtime.context import resolve_item
from jupyter_percent_agent.runtime.events import OnEvent, ignore
from jupyter_percent_agent.runtime.history import conversation_cells
from jupyter_percent_agent.runtime.ranges import Selection, parse_selection
from jupyter_percent_agent.runtime.run import Run
from jupyter_percent_agent.runtime.transport import Transport, default_transport
from jupyter_percent_agent.runtime.turn import Plan, RunOptions, new_run, plan, run_turn


class Conversation(Protocol):
    """Where a turn's notebook comes from and where its run goes."""

    def begin(self, options: RunOptions) -> tuple[dict[str, Any], Plan]: ...

    def finish(self, run: Run) -> None: ...


class PlainMarkdown(PercentAgentError, ValueError):
    """A plain ``.md`` without a Discussion section: messages need ``--force``."""

    error_kind = Kind.USAGE


async def send(conversation: Conversation, options: RunOptions, on_event: OnEvent = ignore,
               *, transport: Transport | None = None) -> Run:
    """Run the conversation's new (or re-run) message and keep what it produced."""
    nb, decided = conversation.begin(options)
    run = new_run(nb, decided.cell_id, on_event)
    try:
        await run_turn(nb, decided.cell_id, options, transport=transport or default_transport(),
                       decided=decided, run=run)
    finally:
        conversation.finish(run)
    return run


def default_title(message: str, width: int = 60) -> str:
    """The heading title of a new message: its first line, shortened."""
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    line = line.lstrip("#").strip()
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


class FileConversation:
    """A message appended to a message file on disk."""

    def __init__(self, path: Path, message: str, *, title: str | None = None,
                 force: bool = False, save: tuple[Sequence[str], Sequence[str]] | None = None
                 ) -> None:
        self.path = path
        self.message = message
        self.title = title if title is not None else default_title(message)
        self.force = force
        self.save = save  # (include, exclude) to remember in the file (``--save``)
        self.cell_id: str | None = None

    def _read(self) -> dict[str, Any]:
        """The file as a notebook that can take the message (under the lock): a ``.md``
        without a Discussion section gets one with ``--force``, in memory (written with the
        message). A notebook, a script that is not a script message file (``NAME.msg.py``) or
        another file that is not Markdown is refused, ``--force`` or not."""
        path = self.path
        fmt.check_markdown(path)
        fmt.check_writable(path)  # before any model call (a summary) is paid for
        if fmt.is_message_path(path.name) or fmt.is_script_path(path.name):
            return store.read(path)
        if not os.path.lexists(path):
            text = ""
        else:
            text = fmt.read_text(path)
            if fmt.message_section(text) is not None:
                return store.read(path)
            if not self.force:
                raise PlainMarkdown(f"{path} is a plain Markdown file; use --force to add a "
                                    "Discussion section for messages")
        nb = fmt.reads(store.with_discussion(text, path), path=str(path))
        store.check_front_matter(nb, str(path))
        return nb

    def begin(self, options: RunOptions) -> tuple[dict[str, Any], Plan]:
        """Everything is checked (the file, the agent, the selections, the included files)
        before the one write: a refused message leaves the file byte-identical."""
        with store.locked(self.path):
            nb = self._read()
            if self.save is not None:
                save_choices(nb, *self.save, folder=self.path.parent)
            cid = fmt.new_cell_id(nb)
            nb.setdefault("cells", []).append(
                fmt.new_message(self.message, cell_id=cid, title=self.title))
            decided = plan(nb, cid, options)  # fails before anything is written
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fmt.write(nb, self.path)
        self.cell_id = cid
        return nb, decided

    def finish(self, run: Run) -> None:
        store.apply_run(self.path, run, text=self.message)


class CellInFile:
    """A cell already in a message file, run (again) where it is (``tce exec``): ``begin``
    empties its outputs in the file (a ``[code]`` cell run by the user is no longer
    ``proposed``; a ``[task]`` cell's runner still gets its last ones, as in the Agent kernel)
    and plans it under the file's lock; ``finish`` saves what the run made."""

    def __init__(self, path: Path, cell_id: str) -> None:
        self.path = path
        self.cell_id: str | None = cell_id

    def begin(self, options: RunOptions) -> tuple[dict[str, Any], Plan]:
        cid = self.cell_id or ""
        with store.locked(self.path):
            nb = store.read(self.path)
            fmt.check_writable(self.path)  # before the cell runs: its outputs could not be kept
            cell = next((c for c in conversation_cells(nb) if fmt.cell_id(c) == cid), None)
            if cell is None:
                raise CellGone(f"cell {cid} is no longer in {self.path}")
            decided = plan(nb, cid, options)  # fails before anything is written
            if cell.get("outputs") or fmt.cell_attrs(cell).get("proposed") is not None:
                last = list(cell.get("outputs") or [])
                fmt.clear_outputs(cell)
                fmt.set_cell_attrs(cell, {"proposed": None})
                fmt.write(nb, self.path)
                if fmt.cell_kind(cell) == "task":  # its runner reads them: the output of an
                    cell["outputs"] = last      # interrupted run names the transcript to go on
        return nb, decided

    def finish(self, run: Run) -> None:
        if run.outputs or run.execution_count is not None or run.summaries:
            store.apply_run(self.path, run)  # a refused cell made nothing: nothing is written


class WarmingUp:
    """A conversation whose turn starts the model client's import (``transport.warm_up``) as
    soon as it is planned, so the import overlaps building the history, and only when the
    turn goes to a model through litellm: an external agent's turn (ACP), a code, tool or
    task cell calls none (a task's model steps import it when they call), and the import
    would only compete with the agent for the processor (it nearly doubled such a command's
    time: 3.0 s against 1.7 s)."""

    def __init__(self, conversation: Conversation, transport: Transport) -> None:
        self.conversation, self.transport = conversation, transport

    def begin(self, options: RunOptions) -> tuple[dict[str, Any], Plan]:
        nb, decided = self.conversation.begin(options)
        if decided.agent is not None and decided.agent.acp is None:
            self.transport.warm_up()
        return nb, decided

    def finish(self, run: Run) -> None:
        self.conversation.finish(run)


class CellGone(PercentAgentError, LookupError):
    """The cell to run was removed from the file meanwhile."""

    error_kind = Kind.USAGE


def _saved_form(sel: Selection, folder: Path) -> str:
    """A selection of another file as the front matter keeps it: relative to the file's
    folder, which it may not leave (a file may only include files of its own folder)."""
    assert sel.path is not None
    real = resolve_item(sel.path, folder).resolve()
    rel = os.path.relpath(real, folder.resolve())
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise trust.TrustError(f"--save would keep {sel.path!r}, outside the file's folder, in "
                               "its front matter", "use -i without --save for files elsewhere",
                               kind="path")
    text = sel.text.strip()
    rest = text[len(sel.path):] if text.startswith(sel.path) else ""
    return rel + rest if rest else rel


def save_choices(nb: dict[str, Any], include: Sequence[str], exclude: Sequence[str], *,
                 folder: Path) -> None:
    """``--save``: selections of other files go into the front matter (every later message
    uses them), relative to the file's folder; cells of this file get their ``history``
    attribute set."""
    cells = conversation_cells(nb)
    fm = fmt.front_matter(nb)
    for key, sels, mode in (("include", include, "include"), ("exclude", exclude, "exclude")):
        parsed = [parse_selection(s) for s in sels]
        others = [_saved_form(s, folder) for s in parsed if s.path is not None]
        if others:
            old = fm.get(key) or []
            old = [old] if isinstance(old, str) else list(old)
            fmt.set_front_matter(nb, key, old + [s for s in others if s not in old])
        for sel in parsed:
            if sel.path is None:
                for i in sel.indices(len(cells)):
                    fmt.set_cell_attrs(cells[i - 1], {"history": mode})
