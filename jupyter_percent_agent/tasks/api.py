"""Running a task from Python: start a run, or resume one from its transcript.

``arun_task`` / ``run_task`` check the whole SOP folder first (a problem anywhere stops the
run before any model is called), write a new transcript, and run the task to its end.
``aresume_task`` / ``resume_task`` continue a run that was killed, from its last finished step.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from jupyter_percent_agent import trust
from jupyter_percent_agent.errors import did_you_mean
from jupyter_percent_agent.outcome import RunStatus, read_status
from jupyter_percent_agent.tasks import transcript as tr
from jupyter_percent_agent.tasks.documents import Problem
from jupyter_percent_agent.tasks.events import OnEvent
from jupyter_percent_agent.tasks.runner import DEFAULT_MAX_STEPS, Runner
from jupyter_percent_agent.tasks.sop import Sop, SopError, load_sop
from jupyter_percent_agent.tasks.state import Item, State, TaskResult

RUNS = tr.RUNS_FOLDER


def as_sop(sop: Sop | str | os.PathLike[str]) -> Sop:
    """A loaded and checked SOP folder; ``SopError`` listing every problem."""
    loaded = sop if isinstance(sop, Sop) else load_sop(sop)
    loaded.raise_problems()
    return loaded


def check_task(sop: Sop, task_id: str) -> None:
    if task_id not in sop:
        hint = did_you_mean(task_id, sop.documents)
        raise SopError([Problem(f"{task_id}.md", "task_id", None,
                                f"no document {task_id!r} in {sop.root}{hint}")], sop.root)


def initial_context(context: Any) -> dict[str, Any]:
    """A JSON copy of the initial context (a JSON object)."""
    if context is None:
        return {}
    if not isinstance(context, dict):
        raise ValueError(f"the initial context must be a JSON object, not {type(context).__name__}")
    try:
        return json.loads(json.dumps(context, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the initial context is not JSON: {exc}") from None


def default_runs_dir(sop: Sop) -> Path:
    """``runs/`` beside the SOP folder, where it really is: a ``runs`` that a folder ships
    as a link out of it (to ``~/.bashrc.d``, whose files bash runs) is refused
    (:class:`trust.TrustError`), since the transcripts hold what models wrote."""
    return trust.resolve_inside(sop.base_dir, RUNS, what="the runs folder", directory=True)


async def arun_task(sop: Sop | str | os.PathLike[str], task_id: str,
                    context: dict[str, Any] | None = None, *,
                    runs_dir: str | os.PathLike[str] | None = None,
                    max_steps: int = DEFAULT_MAX_STEPS, model: str | None = None,
                    on_event: OnEvent | None = None, tag: str | None = None,
                    lowered: tuple[str, ...] = (), permission_asker: Any = None) -> TaskResult:
    """Run ``task_id`` of ``sop`` (a folder or a loaded :class:`Sop`) on ``context``.

    Writes ``runs/TASK-TIMESTAMP.msg.md`` beside the folder (or in ``runs_dir``) after every
    step. Raises :class:`SopError` (every problem of the folder) before anything runs, and
    ``ValueError`` for a context that is not a JSON object; a step that fails is not an
    exception: the result says ``failed`` and why. ``lowered``: the caller's own budgets
    that were lowered (a ``[task]`` cell's ``max_steps``), recorded in the transcript with the
    folder's (``Sop.lowered_limits``). ``permission_asker``: who answers an external agent's
    (ACP) permission requests (``acp.PermissionAsker``; None: nobody, so they are rejected
    unless the user's own setting for that agent allows them).
    """
    loaded = as_sop(sop)
    check_task(loaded, task_id)
    start = initial_context(context)
    folder = Path(runs_dir) if runs_dir is not None else default_runs_dir(loaded)
    path = tr.claim_path(folder, task_id, tag=tag)
    limits = (*lowered, *loaded.lowered_limits())
    nb = tr.new_transcript(path, task_id=task_id, sop_root=loaded.root, context=start,
                           agents=loaded.agents, max_steps=max_steps, limits=limits)
    state = State(context=json.loads(json.dumps(start)), stack=[Item(task_id)],
                  frames={0: [task_id]})
    runner = Runner(loaded, task_id, nb, path, state, max_steps=max_steps, model=model,
                    on_event=on_event, limits=limits, permission_asker=permission_asker)
    return await runner.run()


def run_task(sop: Sop | str | os.PathLike[str], task_id: str,
             context: dict[str, Any] | None = None, **options: Any) -> TaskResult:
    """:func:`arun_task` for code that has no event loop running."""
    return asyncio.run(arun_task(sop, task_id, context, **options))


def _read_transcript(path: Path) -> tuple[dict[str, Any], dict[str, Any], str, State]:
    """(the notebook, its run header, the saved status word, the state) of a transcript."""
    from jupyter_percent_agent import format as fmt

    try:
        nb = fmt.read(path)
    except fmt.RefusedFile:
        raise  # a refusal (a link out of its folder), not a broken transcript
    except fmt.FormatError as exc:
        raise tr.TranscriptError(str(exc)) from None
    header = tr.run_header(nb, path)
    status, saved = tr.read_state(nb, path)
    return nb, header, status, State.from_json(saved)


def transcript_result(transcript: str | os.PathLike[str]) -> TaskResult:
    """The run ``transcript`` records, as it stands: ended (succeeded or failed), or
    interrupted (a run saved while it went on was stopped too: it resumes the same way)."""
    path = Path(transcript)
    _, header, status, state = _read_transcript(path)
    ended = read_status(status)  # the words of today's transcripts and earlier ones
    return TaskResult.ended(ended or RunStatus.INTERRUPTED, header["task"], state.context,
                            path, state.steps, state.error)


async def aresume_task(transcript: str | os.PathLike[str], *,
                       sop: Sop | str | os.PathLike[str] | None = None,
                       max_steps: int | None = None, model: str | None = None,
                       on_event: OnEvent | None = None,
                       permission_asker: Any = None) -> TaskResult:
    """Continue the run recorded in ``transcript`` from its last finished step. A run that
    had ended (succeeded or failed) is returned as it was, nothing is called.
    ``permission_asker``: as for :func:`arun_task`."""
    path = Path(transcript)
    nb, header, status, state = _read_transcript(path)
    task_id = header["task"]
    # the transcript is a file like any other: its step budget is bounded as a [task] cell's
    steps = max_steps or int(trust.bound("task_max_steps", header.get("max_steps"),
                                         folder=path.parent).value or DEFAULT_MAX_STEPS)
    ended = read_status(status)  # the words of today's transcripts and earlier ones
    if ended in (RunStatus.OK, RunStatus.ERROR):
        return TaskResult.ended(ended, task_id, state.context, path, state.steps, state.error)
    loaded = as_sop(sop if sop is not None else tr.resume_sop(header, nb, path))
    check_task(loaded, task_id)
    gone = sorted({item.task_id for item in state.stack} - set(loaded.documents))
    if gone:  # the folder changed since: say so before any step runs again
        raise tr.TranscriptError(
            f"{path}: the run goes on with {', '.join(map(repr, gone))}, which the SOP folder "
            f"no longer has; nothing was run (start the task afresh)")
    runner = Runner(loaded, task_id, nb, path, state, max_steps=steps, model=model,
                    on_event=on_event, permission_asker=permission_asker)
    return await runner.run()


def resume_task(transcript: str | os.PathLike[str], **options: Any) -> TaskResult:
    """:func:`aresume_task` for code that has no event loop running."""
    return asyncio.run(aresume_task(transcript, **options))
