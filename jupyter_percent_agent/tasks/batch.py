"""Many inputs: one run per line of a JSONL file, at most N at once, each with its transcript.

On one machine the runs share one event loop (model calls are I/O); ``cluster`` sends the same
jobs to a Dask distributed cluster. A failed input never stops the others: its result says
``failed`` and why. Results come back as plain dicts (``TaskResult.to_json()`` plus ``input``,
the input's line number).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_percent_agent.runtime.outcome import RUN_WORDS, RunStatus
from jupyter_percent_agent.tasks.runner import DEFAULT_MAX_STEPS
from jupyter_percent_agent.tasks.sop import Sop

OnResult = Callable[[dict[str, Any]], None]


@dataclass
class Job:
    """One input: its line number and initial context, or why the line is no context."""

    index: int
    context: Any = None
    error: str | None = None


def read_inputs(path: str | os.PathLike[str]) -> list[Job]:
    """The inputs of a JSONL file (blank lines skipped); a line that is not a JSON object is
    a job that fails with the reason."""
    return list(parse_inputs(Path(path).read_text(encoding="utf-8")))


def parse_inputs(text: str) -> Iterator[Job]:
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            yield Job(n, error=f"line {n} is not JSON: {exc}")
            continue
        if not isinstance(value, dict):
            yield Job(n, error=f"line {n} is not a JSON object (an initial context)")
            continue
        yield Job(n, value)


def failed(job: Job, message: str, error_type: str = "bad_input", *,
           task_id: str = "") -> dict[str, Any]:
    return {"input": job.index, "status": RUN_WORDS[RunStatus.ERROR], "task_id": task_id,
            "context": job.context,
            "transcript": None, "steps": 0,
            "error": {"task_id": task_id, "error_type": error_type, "message": message}}


def tag(job: Job) -> str:
    """The transcript name's suffix of an input: its line number."""
    return f"{job.index:04d}"


async def run_job(sop: Sop, task_id: str, job: Job, *, runs_dir: Path | None,
                  max_steps: int = DEFAULT_MAX_STEPS, model: str | None = None
                  ) -> dict[str, Any]:
    """Run one input; every failure is a result, never an exception."""
    from jupyter_percent_agent.tasks.api import arun_task
    from jupyter_percent_agent.tasks.sop import SopError

    if job.error is not None:
        return failed(job, job.error, task_id=task_id)
    try:
        result = await arun_task(sop, task_id, job.context, runs_dir=runs_dir,
                                 max_steps=max_steps, model=model, tag=tag(job))
    except (SopError, ValueError, OSError) as exc:
        return failed(job, str(exc), type(exc).__name__, task_id=task_id)
    return {"input": job.index, **result.to_json()}


async def run_inputs(sop: Sop, task_id: str, jobs: list[Job], *, concurrency: int = 8,
                     runs_dir: Path | None = None, max_steps: int = DEFAULT_MAX_STEPS,
                     model: str | None = None, on_result: OnResult | None = None
                     ) -> list[dict[str, Any]]:
    """Run every job, at most ``concurrency`` at once; results in input order (and each
    handed to ``on_result`` as it finishes)."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(job: Job) -> dict[str, Any]:
        async with gate:
            result = await run_job(sop, task_id, job, runs_dir=runs_dir, max_steps=max_steps,
                                   model=model)
        if on_result is not None:
            on_result(result)
        return result

    return list(await asyncio.gather(*(one(job) for job in jobs)))


def run_remote(spec: dict[str, Any]) -> dict[str, Any]:
    """One job on a Dask worker: load the SOP folder there (by path), run, return the result.
    Plain data in and out, so it pickles by reference to this module.

    A worker that may import from the folder it runs in (started without ``PYTHONSAFEPATH=1``)
    runs nothing: a cloned folder it was started in could be running its code there, next to
    the keys in its environment, and the model call would import more from it.
    """
    from jupyter_percent_agent.safe_start import imports_from_working_folder
    from jupyter_percent_agent.tasks.runner import TRUST_ERROR
    from jupyter_percent_agent.tasks.sop import load_sop

    job = Job(spec["index"], spec.get("context"), spec.get("error"))
    if imports_from_working_folder():
        return failed(job, f"refused: the Dask worker on {platform.node()} (pid {os.getpid()}) "
                      "may import code from the folder it runs in; to allow it: start the "
                      "workers with PYTHONSAFEPATH=1 (PYTHONSAFEPATH=1 dask worker ADDRESS)",
                      TRUST_ERROR, task_id=spec["task_id"])
    try:
        sop = load_sop(spec["sop"])
    except FileNotFoundError as exc:
        return failed(job, f"on the worker: {exc}", "FileNotFoundError",
                      task_id=spec["task_id"])
    runs = Path(spec["runs_dir"]) if spec.get("runs_dir") else None
    return asyncio.run(run_job(sop, spec["task_id"], job, runs_dir=runs,
                               max_steps=spec.get("max_steps", DEFAULT_MAX_STEPS),
                               model=spec.get("model")))
