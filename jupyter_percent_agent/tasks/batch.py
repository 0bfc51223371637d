"""Many inputs: one run per line of a JSONL file, at most N at once, each with its transcript.

On one machine the runs share one event loop (model calls are I/O); ``cluster`` sends the same
jobs to a Dask distributed cluster. A failed input never stops the others: its result says
``failed`` and why. Results come back as plain dicts (:func:`result_line`:
``TaskResult.to_json()`` plus ``input``, the input's line number), an input refused before its
run began too.

A batch on one machine keeps a log beside its results (``NAME-batch.jsonl``: a header naming
the task, the SOP folder, the inputs and the results file, then a line per input whose run
began, naming its transcript), so that ``tce run --resume NAME-batch.jsonl`` goes on where a
killed batch stopped: an input with a result is not run again, one whose run began resumes
from its transcript's last finished step, the others start. Each line is sealed with this
user's key (``trust.secret``): a log that came with a folder names no file a resume writes.
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

from jupyter_percent_agent.outcome import RunStatus
from jupyter_percent_agent.tasks.runner import DEFAULT_MAX_STEPS
from jupyter_percent_agent.tasks.sop import Sop
from jupyter_percent_agent.tasks.state import TaskResult

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


def result_line(job: Job, result: TaskResult) -> dict[str, Any]:
    """The line of ``results.jsonl`` (and of ``tce run --inputs --json``) for ``job``."""
    return {"input": job.index, **result.to_json()}


def failed(job: Job, message: str, error_type: str = "bad_input", *,
           task_id: str = "") -> dict[str, Any]:
    """The result of an input whose run never began (no transcript, no step)."""
    return result_line(job, TaskResult.ended(
        RunStatus.ERROR, task_id, job.context, None, 0,
        {"task_id": task_id, "error_type": error_type, "message": message}))


def tag(job: Job) -> str:
    """The transcript name's suffix of an input: its line number."""
    return f"{job.index:04d}"


BATCH_SUFFIX = "-batch.jsonl"
RESULTS_SUFFIX = "-results.jsonl"


def claim_batch_paths(folder: Path, task_id: str) -> tuple[Path, Path]:
    """(results, log): two new files in ``folder``, ``NAME-results.jsonl`` and
    ``NAME-batch.jsonl`` of one ``NAME``, created empty. Never a name that is there already:
    a folder may ship a link at the name a batch would take (``-> ~/.bashrc``), and writing
    through it would put model-written lines in that file."""
    from jupyter_percent_agent.tasks import transcript as tr

    folder.mkdir(parents=True, exist_ok=True)
    for n in range(100):
        stem = tr.file_name(task_id, tag="x").removesuffix("-x.msg.md")  # TASK-TIMESTAMP
        if n:
            stem += "-" + os.urandom(2).hex()
        made: list[Path] = []
        try:
            for suffix in (RESULTS_SUFFIX, BATCH_SUFFIX):
                path = folder / (stem + suffix)
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW,
                                 0o644))
                made.append(path)
        except FileExistsError:
            for path in made:
                path.unlink(missing_ok=True)
            continue
        return made[0], made[1]
    raise OSError(f"cannot find a free name for a batch's results in {folder}")


class BatchLog:
    """The log of one batch (see the module's docstring): appended to, line by line."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, path: Path, *, task_id: str, sop: Path, inputs: Path,
               results: Path) -> BatchLog:
        header = {"batch": task_id, "sop": str(sop.resolve()), "inputs": str(inputs.resolve()),
                  "results": str(results.resolve())}
        path.write_text(_sealed(header), encoding="utf-8")
        return cls(path)

    def started(self, index: int, transcript: Path) -> None:
        """Input ``index``'s run began, with ``transcript``."""
        with self.path.open("a", encoding="utf-8") as f:
            f.write(_sealed({"input": index, "transcript": str(transcript.resolve())}))

    def read(self) -> tuple[dict[str, Any], dict[int, Path]]:
        """(the header, input -> transcript of the runs that began); ``ValueError`` for a
        file that is not a batch log, or one this user's ``tce`` did not write (its header's
        seal does not check: a cloned folder's log would name the files to write). A line
        whose seal does not check (cut off by a kill, or added by someone) is ignored."""
        lines = self.path.read_text(encoding="utf-8").splitlines()
        header = _unsealed(lines[0]) if lines else None
        if header is None or not isinstance(header.get("batch"), str):
            raise ValueError(f"{self.path}: refused: a batch log not written by your tce (its "
                             "header's seal does not check) may not name the files a resume "
                             "reads and writes; resume its transcripts instead")
        began: dict[int, Path] = {}
        for line in lines[1:]:
            entry = _unsealed(line)
            try:
                began[int(entry["input"])] = Path(entry["transcript"])  # type: ignore[index]
            except (ValueError, KeyError, TypeError):
                continue
        return header, began


# The seal: this user's HMAC over a line's JSON without it (trust.secret), so that a log a
# folder ships, or a line added to one of ours, is told from what this user's tce wrote.
_SEAL_PURPOSE = "batch-log"


def _sealed(entry: dict[str, Any]) -> str:
    """``entry`` as one sealed JSON line."""
    from jupyter_percent_agent.trust.secret import seal

    body = json.dumps(entry, ensure_ascii=False, sort_keys=True)
    return json.dumps({**entry, "seal": seal(_SEAL_PURPOSE, body.encode())},
                      ensure_ascii=False) + "\n"


def _unsealed(line: str) -> dict[str, Any] | None:
    """The entry of a sealed line; None for a line that is no JSON object or whose seal
    does not check."""
    from jupyter_percent_agent.trust.secret import sealed_by_user

    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict):
        return None
    found = entry.pop("seal", None)
    body = json.dumps(entry, ensure_ascii=False, sort_keys=True)
    return entry if sealed_by_user(_SEAL_PURPOSE, body.encode(), found) else None


def finished_inputs(results: Path) -> set[int]:
    """The inputs that have a line in the results file (succeeded or failed: done)."""
    done: set[int] = set()
    try:
        text = results.read_text(encoding="utf-8")
    except FileNotFoundError:
        return done
    for line in text.splitlines():
        try:
            done.add(int(json.loads(line)["input"]))
        except (ValueError, KeyError, TypeError):
            continue  # a line cut off by a kill: that input is not done
    return done


async def run_job(sop: Sop, task_id: str, job: Job, *, runs_dir: Path | None,
                  max_steps: int = DEFAULT_MAX_STEPS, model: str | None = None,
                  log: BatchLog | None = None, transcript: Path | None = None
                  ) -> dict[str, Any]:
    """Run one input (or resume its run from ``transcript``); every failure is a result,
    never an exception. ``log`` hears of the transcript when the run begins."""
    from jupyter_percent_agent.tasks.api import aresume_task, arun_task
    from jupyter_percent_agent.tasks.events import RunStarted
    from jupyter_percent_agent.tasks.sop import SopError

    def on_event(event: Any) -> None:
        if log is not None and isinstance(event, RunStarted):
            log.started(job.index, event.path)

    if job.error is not None:
        return failed(job, job.error, task_id=task_id)
    try:
        if transcript is not None and transcript.is_file() and transcript.stat().st_size:
            result = await aresume_task(transcript, sop=sop, max_steps=max_steps, model=model)
        else:
            result = await arun_task(sop, task_id, job.context, runs_dir=runs_dir,
                                     max_steps=max_steps, model=model, tag=tag(job),
                                     on_event=on_event)
    except (SopError, ValueError, OSError) as exc:
        return failed(job, str(exc), type(exc).__name__, task_id=task_id)
    return result_line(job, result)


async def run_inputs(sop: Sop, task_id: str, jobs: list[Job], *, concurrency: int = 8,
                     runs_dir: Path | None = None, max_steps: int = DEFAULT_MAX_STEPS,
                     model: str | None = None, on_result: OnResult | None = None,
                     log: BatchLog | None = None, resume: dict[int, Path] | None = None
                     ) -> list[dict[str, Any]]:
    """Run every job, at most ``concurrency`` at once; results in input order (and each
    handed to ``on_result`` as it finishes). ``resume``: the transcripts of inputs whose run
    began in an earlier, killed batch (continued, not started again)."""
    gate = asyncio.Semaphore(max(1, concurrency))
    resume = resume or {}

    async def one(job: Job) -> dict[str, Any]:
        async with gate:
            result = await run_job(sop, task_id, job, runs_dir=runs_dir, max_steps=max_steps,
                                   model=model, log=log, transcript=resume.get(job.index))
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
