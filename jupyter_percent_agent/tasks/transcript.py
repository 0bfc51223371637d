"""A run's transcript: a message file with one cell per step and the run's state last.

The front matter holds the task, the SOP folder (relative to the transcript) and the initial
context (``task_run:``), and the SOP folder's agents (``agents:``, so the runtime finds them and
the file can be re-run in JupyterLab). Each step is a cell titled with its ``task_id``
(attributes ``task_id``, ``task_type``, ``attempt``, ``step``; ``history="exclude"``): a message
cell for the LLM (the rendered prompt as its body) or a ``[tool_call]`` cell (the parameters),
whose outputs are the reply, tool results, verdict and errors. The last cell, ``[raw]`` titled
``Context``, holds the context and what a resume needs, rewritten after every step. Every write
is atomic (the format core's ``write``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.outcome import VERDICT_WORDS, RunStatus

STATE_ATTR = "task_state"
STATE_TITLE = "Context"
RUN_KEY = "task_run"


class TranscriptError(PercentAgentError, ValueError):
    """A file that is not a task transcript, or whose state cannot be read."""

    error_kind = Kind.BAD_FILE


def file_name(task_id: str, *, tag: str | None = None) -> str:
    """``blog-generate_blog-20260712-153000-TAG.msg.md``."""
    slug = re.sub(r"[^\w.-]+", "-", task_id.replace("/", "-")).strip("-") or "task"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return f"{slug}-{stamp}-{tag or secrets.token_hex(2)}.msg.md"


def claim_path(runs_dir: Path, task_id: str, *, tag: str | None = None) -> Path:
    """A new, unused transcript path in ``runs_dir`` (created empty, so no two runs share it),
    made in the folder as it really is, following no link (``format.opening.open_real``)."""
    from jupyter_percent_agent.format.opening import open_real

    runs_dir.mkdir(parents=True, exist_ok=True)
    dfd = open_real(os.path.realpath(runs_dir), directory=True)
    try:
        for n in range(100):
            suffix = tag if n == 0 else f"{tag or 'run'}-{secrets.token_hex(2)}"
            name = file_name(task_id, tag=suffix)
            try:
                fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o644, dir_fd=dfd)
            except FileExistsError:
                continue
            os.close(fd)
            return runs_dir / name
    finally:
        os.close(dfd)
    raise OSError(f"cannot find a free transcript name in {runs_dir}")


def new_transcript(path: Path, *, task_id: str, sop_root: Path, context: Any,
                   agents: Mapping[str, Any], max_steps: int,
                   limits: tuple[str, ...] = ()) -> dict[str, Any]:
    """The notebook of a new run (not written yet). ``limits``: the budgets its files asked
    for that were lowered, recorded in the header (``task_run: limits:``)."""
    nb = fmt.reads("", path=str(path))
    sop = Path(os.path.relpath(sop_root.resolve(), path.parent.resolve())).as_posix()
    header: dict[str, Any] = {
        "task": task_id, "sop": sop, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "max_steps": max_steps, "context": context}
    if not _beside(sop_root, path):
        header[SOP_SEAL] = _sop_seal(task_id, sop)
    if limits:
        header["limits"] = list(limits)
    fmt.set_front_matter(nb, RUN_KEY, header)
    if agents:
        fmt.set_front_matter(nb, "agents", {k: dict(v) for k, v in agents.items()})
    return nb


def run_header(nb: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """``task_run`` of a transcript's front matter, with ``sop`` made a path."""
    try:
        header = fmt.front_matter(nb).get(RUN_KEY)
    except fmt.FormatError as exc:
        raise TranscriptError(f"{path}: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("task"), str):
        raise TranscriptError(f"{path}: not a task transcript (no task_run: in its front "
                              "matter)")
    header = dict(header)
    header["sop"] = (path.parent / str(header.get("sop") or ".")).resolve()
    return header


# Where a transcript's run may find its SOP folder when it is resumed by the transcript alone
# (``tce run --resume``): in the folder its runs/ folder is in (where ``tce run`` puts it), or
# anywhere when this user's tce wrote the transcript there (``--runs``: the header is sealed
# with the user's key). A transcript that came with a folder may not make a resume read (and
# send to a model, and run the trusted toolbox of) a SOP folder of the user's elsewhere.
SOP_SEAL = "sop_seal"
RUNS_FOLDER = "runs"  # tasks.api.RUNS: where tce run puts transcripts


def resume_sop(header: Mapping[str, Any], nb: Mapping[str, Any], path: Path) -> Path:
    """The SOP folder a resume of the transcript at ``path`` runs (``header`` is
    :func:`run_header`'s); :class:`trust.TrustError` for one outside the transcript's
    project folder that this user's tce did not record."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.trust.secret import sealed_by_user

    sop = Path(header["sop"])
    if _beside(sop, path):
        return sop
    raw = fmt.front_matter(nb).get(RUN_KEY) or {}
    written = str(raw.get("sop") or ".")
    if sealed_by_user("transcript-sop", _sop_text(header["task"], written), raw.get(SOP_SEAL)):
        return sop
    raise trust.TrustError(
        f"{path} names the SOP folder {written!r}, outside {_project(path)}, and your tce did "
        "not write it there (a transcript that came with a folder may not choose which SOP "
        "folder runs)", "run the task again with tce run TASK --sop FOLDER", kind="path")


def _project(path: Path) -> Path:
    """The folder a transcript belongs to: the one its ``runs/`` folder is in (where ``tce
    run`` puts transcripts), else its own folder."""
    folder = Path(os.path.realpath(path)).parent
    return folder.parent if folder.name == RUNS_FOLDER else folder


def _beside(sop: Path, path: Path) -> bool:
    """Whether ``sop`` lies strictly inside the transcript's project folder (the folder
    itself would put its runs/ and toolbox/ in the folder above)."""
    project = str(_project(path)).rstrip(os.sep) + os.sep
    return os.path.realpath(sop).startswith(project)


def _sop_text(task_id: str, sop: str) -> bytes:
    return json.dumps([task_id, sop]).encode()


def _sop_seal(task_id: str, sop: str) -> str:
    from jupyter_percent_agent.trust.secret import seal

    return seal("transcript-sop", _sop_text(task_id, sop))


def step_cell(body: str, *, task_id: str, task_type: str, attempt: int, step: int,
              agent: str | None = None, tool: str | None = None,
              args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The cell of one step: a message for the LLM (``agent``), a ``[tool_call]`` for a tool."""
    attrs: dict[str, Any] = {"task_id": task_id, "task_type": task_type, "attempt": attempt,
                             "step": step, "history": "exclude"}
    kind = "message"
    if tool is not None:
        kind = "tool_call"
        attrs.update(tool=tool, args=dict(args or {}))
    elif agent is not None:
        attrs["agent"] = agent
    return fmt.new_message(body, attrs=attrs, title=task_id, kind=kind)


def next_output_id(cell: Mapping[str, Any]) -> str:
    """The id of the next output of a step cell (the format core's one rule)."""
    return fmt.next_output_id(fmt.cell_id(cell), cell.get("outputs") or [])


def mark_interrupted(cell: dict[str, Any]) -> None:
    """Mark a step cell whose call was cut short."""
    fmt.set_cell_attrs(cell, {"interrupted": True})


def verdict_output(cell: Mapping[str, Any], verdict: Any) -> dict[str, Any]:
    attrs = {"status": verdict.word}
    if not verdict.ok:
        attrs["error_type"] = verdict.error_type
    text = verdict.message or (verdict.word if verdict.ok else verdict.error_type)
    return fmt.reply_output(text, agent="verdict", out_id=next_output_id(cell), attrs=attrs)


def is_verdict(out: Mapping[str, Any]) -> bool:
    return fmt.output_kind(out) == "reply" and fmt.output_attrs(out).get("agent") == "verdict"


def verdict_passed(out: Mapping[str, Any]) -> bool:
    return fmt.output_attrs(out).get("status") == VERDICT_WORDS[RunStatus.OK]


def verdict_error_type(out: Mapping[str, Any]) -> str | None:
    return fmt.output_attrs(out).get("error_type")


def error_output(cell: Mapping[str, Any], error_type: str, message: str,
                 then: str | None = None) -> dict[str, Any]:
    return fmt.error_output(error_type, message, [], out_id=next_output_id(cell),
                            attrs={"then": then} if then else None)


def state_cell(state: Mapping[str, Any], *, status: str, steps: int) -> dict[str, Any]:
    body = json.dumps(state, ensure_ascii=False, indent=2)
    return fmt.new_message(body, attrs={STATE_ATTR: status, "steps": steps},
                           title=STATE_TITLE, cell_id="context", kind="raw")


def set_state(nb: dict[str, Any], state: Mapping[str, Any], *, status: str, steps: int) -> None:
    """Put the run's state in the last cell (replacing the one there)."""
    cells = nb.setdefault("cells", [])
    if cells and STATE_ATTR in fmt.cell_attrs(cells[-1]):
        cells.pop()
    cells.append(state_cell(state, status=status, steps=steps))


def append_step(nb: dict[str, Any], cell: dict[str, Any]) -> None:
    """Add a step's cell before the state cell."""
    cells = nb.setdefault("cells", [])
    at = len(cells) - 1 if cells and STATE_ATTR in fmt.cell_attrs(cells[-1]) else len(cells)
    cells.insert(at, cell)


def read_state(nb: Mapping[str, Any], path: Path) -> tuple[str, dict[str, Any]]:
    """(status, state) from the last cell of a transcript."""
    cells = nb.get("cells") or []
    if not cells or STATE_ATTR not in fmt.cell_attrs(cells[-1]):
        raise TranscriptError(f"{path}: its last cell is not the run's state ([raw] "
                              f'{STATE_ATTR}="...")')
    cell = cells[-1]
    try:
        state = json.loads(fmt.message_text(cell))
    except ValueError as exc:
        raise TranscriptError(f"{path}: the run's state does not parse: {exc}") from None
    if not isinstance(state, dict):
        raise TranscriptError(f"{path}: the run's state is not a JSON object")
    return str(fmt.cell_attrs(cell)[STATE_ATTR]), state


SYNC_EVERY = 5.0
"""Seconds between two background fsyncs of one transcript (each costs a disk flush; ext4
commits its journal every 5 s by default, so a power loss loses no more than it would)."""


class Saver:
    """Writes a run's transcript after every step, atomically, without holding others up.

    ``await save(nb)`` writes with the format core's atomic ``write`` on a thread (a rename
    can wait on the disk's journal: other runs of the event loop go on meanwhile) and returns
    once the file is in place: from then on the step survives the process being killed. The
    fsync that makes it survive a power loss too (about 10 ms on a disk) is left out of that
    write and done on a thread beside the run, at most once a ``SYNC_EVERY``; ``flush``
    syncs what is left (a run's end, an interrupt). Writes land in the order they were
    asked for; a failed one is raised by the next ``save`` or ``flush``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        # where it really is, as the run starts: each write goes there following no link
        # (a runs/ folder swapped for a link meanwhile is refused, not written through)
        self._real = os.path.realpath(path)
        self._dirty = False
        self._writing: Any = None
        self._syncing: Any = None
        self._last = 0.0
        self.write_seconds = 0.0  # waited for by the run
        self.sync_seconds = 0.0   # on a thread, beside the run (for benchmarks)

    async def save(self, nb: Mapping[str, Any]) -> None:
        self._raise_failure(self._syncing)
        if self._writing is not None and not self._writing.done():
            await asyncio.shield(self._writing)  # in order
        # the cells as they are now: a later change to the list does not reach this write
        snapshot = {**nb, "cells": list(nb.get("cells") or [])}
        started = time.perf_counter()
        self._writing = asyncio.ensure_future(asyncio.to_thread(self._write, snapshot))
        await asyncio.shield(self._writing)  # a write under way always finishes
        self.write_seconds += time.perf_counter() - started
        self._dirty = True
        if (self._syncing is None or self._syncing.done()) and \
                time.monotonic() - self._last >= SYNC_EVERY:
            self._syncing = asyncio.ensure_future(self._sync())

    def _write(self, nb: Mapping[str, Any]) -> None:
        fmt.write_text(self._real, fmt.writes(nb, path=str(self.path)), durable=False,
                       real=True)

    async def _sync(self) -> None:
        self._last = time.monotonic()
        self._dirty = False
        self.sync_seconds += await asyncio.to_thread(_fsync, self.path)

    async def flush(self) -> None:
        """Wait until everything saved is on disk."""
        for task in (self._writing, self._syncing):
            while task is not None and not task.done():
                await asyncio.shield(task)
            self._raise_failure(task)
        if self._dirty:
            self._syncing = asyncio.ensure_future(self._sync())
            await asyncio.shield(self._syncing)
            self._raise_failure(self._syncing)

    def _raise_failure(self, task: Any) -> None:
        if task is not None and task.done() and not task.cancelled() and task.exception():
            raise task.exception()


def _fsync(path: Path) -> float:
    """fsync a file and its folder (``format.make_durable``); seconds taken."""
    started = time.perf_counter()
    fmt.make_durable(path)
    return time.perf_counter() - started
