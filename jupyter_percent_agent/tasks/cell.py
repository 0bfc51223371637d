"""A ``[task]`` cell: run a workflow from a notebook, for the agent kernel.

A ``[task]`` cell names the task (``task_id``) and the SOP folder (``sop``, relative to the
notebook's folder; default ``sop``); its body is the initial context as JSON. Running it runs the
workflow like ``tce run`` (transcript in ``runs/`` beside the SOP folder, or the cell's
``runs``) and produces the cell's outputs as they happen: each model reply and tool result, a
line per step, and the final context. Cancelling the task (the kernel's interrupt) stops the
run with a resumable transcript; running the cell again continues it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.outcome import RUN_WORDS, Outcome, RunStatus, read_status
from jupyter_percent_agent.runtime.events import (
    Answering,
    Chunk,
    Delta,
    OutputMade,
    Reasoning,
    Retry,
    Status,
)
from jupyter_percent_agent.tasks import transcript as tr
from jupyter_percent_agent.tasks.events import RunStarted, StepFinished, StepStarted

OnEvent = Callable[[Any], None]
TASK_KIND = "task"


@dataclass
class TaskCellRun:
    """What running a ``[task]`` cell produced: ``outputs`` (for the cell), how it ended
    (``outcome``: the runtime's one type), the run's ``result`` and its ``transcript``."""

    cell_id: str
    outputs: list[dict[str, Any]] = field(default_factory=list)
    outcome: Outcome = field(default_factory=Outcome)
    transcript: Path | None = None
    result: Any = None

    @property
    def status(self) -> RunStatus:
        return self.outcome.status

    @property
    def error(self) -> str | None:
        return self.outcome.error

    @property
    def error_type(self) -> str | None:
        return self.outcome.error_type


def is_task_cell(cell: dict[str, Any]) -> bool:
    return fmt.cell_kind(cell) == TASK_KIND


def previous_transcript(cell: dict[str, Any], base_dir: Path) -> Path | None:
    """The transcript of this cell's last run when that run was interrupted (running the cell
    again continues it); ``None`` otherwise."""
    for out in reversed(cell.get("outputs") or []):
        attrs = fmt.output_attrs(out, cell)
        if "task_status" in attrs:
            path = attrs.get("transcript")
            if read_status(attrs["task_status"]) is RunStatus.INTERRUPTED \
                    and isinstance(path, str):
                full = trust.resolve_inside(base_dir, path, what="[task] transcript")
                return full if full.is_file() else None
            return None
    return None


class _Outputs:
    """Turns the runner's events into this cell's outputs (ids ``CELL.n``) and passes the
    live model text through."""

    def __init__(self, run: TaskCellRun, on_event: OnEvent, base_dir: Path) -> None:
        self.run = run
        self.on_event = on_event
        self.base_dir = base_dir
        self.step: Any = None

    def _id(self) -> str:
        return fmt.next_output_id(self.run.cell_id, self.run.outputs)

    def emit(self, out: dict[str, Any]) -> None:
        self.run.outputs.append(out)
        self.on_event(OutputMade(out))

    def line(self, text: str) -> None:
        self.emit(fmt.stream_output("stdout", text + "\n", out_id=self._id()))

    def __call__(self, event: Any) -> None:
        match event:
            case RunStarted(path=path, limits=limits):
                self.run.transcript = path
                for limit in limits:
                    self.line(f"limit lowered: {limit}")
            case StepStarted(info=info):
                self.step = info
            case StepFinished(info=info):
                text = f"[{info.step}] {info.task_id} ({info.task_type}, attempt " \
                       f"{info.attempt}): {info.shown}"
                if info.detail:
                    text += f": {info.detail}"
                if info.then:
                    text += f" -> {info.then}"
                self.line(text)
            case OutputMade(output=out):
                self._copy(out)
            case Delta() | Reasoning() | Retry() | Status() | Chunk() | Answering():
                self.on_event(event)

    def _copy(self, out: dict[str, Any]) -> None:
        """A reply or tool result of a step, as an output of this cell."""
        okind = fmt.output_kind(out)
        attrs = fmt.output_attrs(out)
        step = {"task_id": self.step.task_id, "attempt": self.step.attempt} if self.step else {}
        if okind == "reply" and attrs.get("agent") != "verdict":
            agent = str(attrs.pop("agent", "agent"))
            self.emit(fmt.reply_output(fmt.output_text(out), agent=agent, out_id=self._id(),
                                       attrs={**step, **attrs}))
        elif okind == "tool_result":
            status = str(attrs.pop("status", "success"))
            self.emit(fmt.tool_result_output(fmt.output_text(out), out_id=self._id(),
                                             status=status, attrs={**step, **attrs}))

    def final(self, status: RunStatus, context: Any, extra: dict[str, Any]) -> None:
        path = self.run.transcript
        shown = str(path.relative_to(self.base_dir)) if path is not None and \
            path.is_relative_to(self.base_dir) else str(path)
        text = ("```json\n" + json.dumps(context, ensure_ascii=False, indent=2) + "\n```"
                if status is not RunStatus.INTERRUPTED
                else f"interrupted: run the cell again to continue {shown}")
        self.emit(fmt.reply_output(text, agent="task", out_id=self._id(), attrs={
            "task_status": RUN_WORDS[status], "transcript": shown, **extra}))


async def run_task_cell(cell: dict[str, Any], *, base_dir: Path,
                        on_event: OnEvent | None = None, run: TaskCellRun | None = None,
                        model: str | None = None, permission_asker: Any = None
                        ) -> TaskCellRun:
    """Run a ``[task]`` cell (``cell`` as in the notebook, its outputs those of earlier runs)
    for the notebook in ``base_dir``. Streams through ``on_event`` (the runtime's typed
    events: ``OutputMade`` with each new output of the cell, ``Delta`` with live model text);
    returns what to record in the cell.
    Problems (a bad context, a SOP folder with problems) end as an error output, never an
    exception; cancel the task to interrupt (``run.outputs`` then says how to continue).
    ``permission_asker``: who answers its external agents' permission requests (the
    turn's: a JupyterLab dialog; None: nobody)."""
    from jupyter_percent_agent import errors
    from jupyter_percent_agent.tasks.api import aresume_task, arun_task
    from jupyter_percent_agent.tasks.sop import load_sop

    base_dir = Path(os.path.realpath(base_dir))  # the paths the cell names resolve in it
    emit = on_event or (lambda event: None)
    run = run or TaskCellRun(cell_id=fmt.cell_id(cell))
    outputs = _Outputs(run, emit, base_dir)
    attrs = fmt.cell_attrs(cell)
    try:
        resume = previous_transcript(cell, base_dir)
        if resume is not None:
            saved = fmt.reads(fmt.read_text(resume, real=True), path=str(resume))
            sop_dir = _sop_folder(base_dir, os.path.relpath(
                tr.run_header(saved, resume)["sop"], base_dir))
            outputs.line(f"continuing {resume.relative_to(base_dir)}")
            result = await aresume_task(resume, sop=load_sop(sop_dir, real=True),
                                        model=model, on_event=outputs,
                                        permission_asker=permission_asker)
        else:
            task_id, sop, context = _read(cell, attrs, base_dir)
            runs = trust.resolve_inside(base_dir, str(attrs["runs"]), what="[task] runs",
                                        directory=True) if attrs.get("runs") else None
            steps = trust.bound("task_max_steps", attrs.get("max_steps"), folder=base_dir)
            # the folder as checked: its documents are read without following a link
            result = await arun_task(load_sop(sop, real=True), task_id, context,
                                     runs_dir=runs, model=model,
                                     on_event=outputs, permission_asker=permission_asker,
                                     max_steps=int(steps.value or 0),
                                     lowered=(f"[task] cell: {steps.describe()}",)
                                     if steps.lowered else ())
    except (errors.PercentAgentError, ValueError, OSError) as exc:
        shown = errors.report(exc)  # the kind's name (as a step's) and the line every
        run.outcome.fail(*((shown.error_type, shown.message) if shown  # front end shows
                           else (type(exc).__name__, str(exc))))
        outputs.emit(fmt.error_output(run.error_type, run.error, [], out_id=outputs._id()))
        return run
    except BaseException:  # cancelled (interrupt): the transcript is saved and resumable
        run.outcome.status = RunStatus.INTERRUPTED
        if run.transcript is not None:
            outputs.final(RunStatus.INTERRUPTED, None, {})
        raise
    run.result = result
    extra: dict[str, Any] = {"steps": result.steps}
    run.outcome.seconds = result.outcome.seconds
    if not result.outcome.ok:
        err = result.error or {}
        run.outcome.fail(str(err.get("error_type") or "TaskFailed"),
                         f"{err.get('task_id')}: {err.get('message')}")
        extra["error"] = run.error
        outputs.emit(fmt.error_output(run.error_type, run.error, [], out_id=outputs._id()))
    outputs.final(result.status, result.context, extra)
    return run


def _sop_folder(base_dir: Path, link: str) -> Path:
    """The SOP folder a [task] cell (or the transcript it continues) names: a folder strictly
    inside the file's folder. (A run's runs/ and toolbox/ are beside the SOP folder, so the
    file's folder itself would put them in its parent.)"""
    sop = trust.resolve_inside(base_dir, link, what="[task] sop", directory=True)
    if sop == base_dir:
        raise trust.TrustError(f"[task] sop {link!r} is the file's own folder; its runs/ and "
                               "toolbox/ would be those of the folder above",
                               "name a SOP folder inside it, e.g. sop=\"sop\"", kind="path")
    return sop


def _read(cell: dict[str, Any], attrs: dict[str, Any], base_dir: Path
          ) -> tuple[str, Path, dict[str, Any]]:
    task_id = attrs.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise ValueError('a [task] cell names its task: task_id="blog/generate_blog"')
    sop = _sop_folder(base_dir, str(attrs.get("sop") or "sop"))
    body = fmt.message_text(cell).strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rstrip().removesuffix("```")
    try:
        context = json.loads(body) if body.strip() else {}
    except ValueError as exc:
        raise ValueError(f"the [task] cell's body is the initial context as JSON: {exc}"
                         ) from None
    if not isinstance(context, dict):
        raise ValueError("the [task] cell's body is the initial context: a JSON object")
    return task_id, sop, context


async def run_in_turn(cell: Any, run: Any, options: Any) -> None:
    """The runtime's ``CellRunner`` for ``[task]`` cells (``RunOptions.runners``), which the
    agent kernel plugs in: the workflow runs, each of its outputs is emitted into the turn's
    ``Run`` as it comes, live model text is passed on, and a failed run fails the ``Run``."""
    task_run = TaskCellRun(cell_id=run.cell_id)

    def on_event(event: Any) -> None:
        if isinstance(event, OutputMade):
            run.emit(event.output)
        else:
            run.tell(event)

    await run_task_cell(dict(cell), base_dir=options.folder, on_event=on_event, run=task_run,
                        permission_asker=options.permission_asker)
    if task_run.status is RunStatus.ERROR:
        run.fail(task_run.error_type or "TaskFailed", task_run.error or "the task failed")
    elif task_run.result is not None:
        run.answer(json.dumps(task_run.result.context, ensure_ascii=False))
