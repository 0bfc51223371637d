"""``tce run``: run a task document's workflow, resume one, or run one per input line.

Each step is shown on stderr as it ends (id, type, attempt, outcome); the final context goes
to stdout (``--json``: one JSON object, or one line per input). litellm is imported only when a
step calls a model.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import click

from jupyter_percent_agent.cli._common import (
    EXIT_FOR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    ask,
    fail,
    fail_for,
    run_exit_code,
)
from jupyter_percent_agent.errors import PercentAgentError
from jupyter_percent_agent.outcome import RUN_WORDS, RunStatus, read_status

EPILOG = ("Exit codes: 0 succeeded, 1 the workflow failed (the transcript says where and why), "
          "2 usage, 3 problems in the SOP folder (nothing ran), 6 refused by trust, "
          "130 interrupted (resume with --resume). See docs/tasks.md.")


@click.command("run", epilog=EPILOG)
@click.argument("task_id", required=False)
@click.argument("more", nargs=-1, metavar="")
@click.option("--sop", "folder", default="sop", show_default=True, help="The SOP folder.")
@click.option("--context", "context", metavar="JSON|@FILE",
              help="The initial context: a JSON object, or @FILE to read one.")
@click.option("--inputs", "inputs", type=click.Path(dir_okay=False), metavar="FILE.jsonl",
              help="Run once per line (each line an initial context).")
@click.option("--concurrency", default=8, show_default=True, type=click.IntRange(1, 1024),
              help="With --inputs: runs at once.")
@click.option("--cluster", metavar="tcp://HOST:8786",
              help="With --inputs: run on this Dask scheduler (the dask extra).")
@click.option("--resume", "resume", multiple=True, metavar="RUN.msg.md",
              help="Continue killed runs: transcripts (any number, globs, folders) or a "
                   "batch's NAME-batch.jsonl.")
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False),
              help="Where transcripts go (default: runs/ beside the SOP folder).")
@click.option("--max-steps", default=None, type=click.IntRange(1), help="Step budget [100].")
@click.option("--model", help="Use this model for every LLM step.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON only (one object per run).")
@click.option("--yes", "-y", is_flag=True,
              help="For a request in words: take the best plan even when another is close.")
def run(task_id: str | None, more: tuple[str, ...], folder: str, context: str | None,
        inputs: str | None,
        concurrency: int, cluster: str | None, resume: tuple[str, ...],
        runs_dir: str | None, max_steps: int | None, model: str | None,
        as_json: bool, yes: bool) -> None:
    """Run TASK_ID (e.g. blog/generate_blog) of the SOP folder on an initial context,
    writing its transcript (a message file) after every step. TASK_ID may be a request in
    words ("写一篇关于城市交通的博客"): the folder's index picks the plan, and says why."""
    from jupyter_percent_agent import trust

    options = {"model": model}
    if resume:
        if context or inputs:
            fail("--resume takes transcripts only (the task and context are in them)",
                 EXIT_USAGE)
        # the shell expands "--resume runs/*.msg.md" into one option and more arguments
        paths = resume_paths([*resume, *([task_id] if task_id else []), *more])
        sys.exit(_resume(paths, max_steps, model, as_json, concurrency))
    if more:
        fail(f"one task at a time: {more[0]!r} is one argument too many (quote a request in "
             "words)", EXIT_USAGE)
    if not task_id:
        fail("name the task to run (e.g. tce run blog/generate_blog --sop sop/), or "
             "--resume a transcript", EXIT_USAGE)
    if cluster and not inputs:
        fail("--cluster runs --inputs on a Dask cluster; give --inputs FILE.jsonl", EXIT_USAGE)
    if inputs and context:
        fail("--inputs and --context: each input line is an initial context; give one",
             EXIT_USAGE)
    sop, task_id = _load(folder, task_id, yes)
    if sop.calls_model(task_id):
        from jupyter_percent_agent.tasks.adapter import import_models_soon

        import_models_soon()
    runs = Path(runs_dir) if runs_dir else None
    # --max-steps is the user's own choice; without it, the user's limit (config.toml)
    steps = max_steps or int(trust.bound("task_max_steps", None, folder=None).value or 1)
    if inputs:
        sys.exit(_many(sop, task_id, inputs, runs, steps, concurrency, cluster, as_json,
                       **options))
    start = _context(context)
    sys.exit(_one(sop, task_id, start, runs, steps, as_json, **options))


_ID = re.compile(r"[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*/?")


def looks_like_an_id(text: str) -> bool:
    """Whether ``text`` is shaped like a task id (``blog/generate_blog``, ``summarize``):
    one word of ASCII letters, digits, ``_ - . /``. Such a word that names no document is a
    typo, refused with "did you mean"; only free text (spaces, or words in a script without
    spaces, like Chinese) goes to the index."""
    return bool(_ID.fullmatch(text.strip()))


def _pick(sop: Any, words: str, yes: bool) -> str | None:
    """The plan the folder's index ranks first for a request in ``words``, said with its
    score and the runner-up's; when the two are close, the user confirms (or ``--yes``)."""
    from jupyter_percent_agent.tasks.index import pick_plan

    choice = pick_plan(sop.root, words)
    if choice.best is None:
        return None
    click.echo(f"tce: no task {words!r}; the index picks {choice.explain()}", err=True)
    if choice.close and not yes:
        if not sys.stdin.isatty():
            fail(f"the best two plans are close: name one, or add --yes to take "
                 f"{choice.best.task_id}", EXIT_USAGE)
        from jupyter_percent_agent.cli._terminal import confirm_text

        answer = ask(confirm_text(f"Run {choice.best.task_id}?"), default=True, err=True)
        if answer is None:
            fail(f"no answer on standard input: nothing was run (name the task, or add "
                 f"--yes to take {choice.best.task_id})", EXIT_USAGE)
        if not answer:
            fail("nothing was run", EXIT_USAGE)
    return choice.best.task_id


def _load(folder: str, task_id: str, yes: bool = False) -> tuple[Any, str]:
    """The checked SOP folder and the task to run: ``task_id``, or when no document has that
    id, the plan the folder's index ranks first for it (``tce run "a request in words"``)."""
    from jupyter_percent_agent.tasks.api import check_task
    from jupyter_percent_agent.tasks.sop import load_sop

    try:
        sop = load_sop(folder)
        sop.raise_problems()
        if task_id not in sop and task_id.removesuffix(".md") in sop:
            task_id = task_id.removesuffix(".md")  # the document's file name, tab-completed
        if task_id not in sop:
            if looks_like_an_id(task_id):
                from jupyter_percent_agent.errors import did_you_mean

                fail(f"no task {task_id!r} in {folder}{did_you_mean(task_id, sop.documents)}; "
                     "nothing was run (a request in words, with spaces, goes to the index)",
                     EXIT_USAGE)
            picked = _pick(sop, task_id, yes)
            if picked is None:
                fail(f"no task {task_id!r} in {folder}, and no plan in it for a request in "
                     "words; nothing was run", EXIT_USAGE)
            task_id = picked
        check_task(sop, task_id)
    except FileNotFoundError:
        fail(f"{folder}: no such folder (name the SOP folder with --sop)", EXIT_USAGE)
    except PercentAgentError as exc:
        _problems(exc)
        fail_for(exc, path=folder)
    return sop, task_id


def _problems(exc: BaseException) -> None:
    """Every problem of a SOP folder that cannot run, a line each, before the summary."""
    for problem in getattr(exc, "problems", ()):
        click.echo(str(problem), err=True)


def _context(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    source = "--context"
    if text.startswith("@"):
        source = text[1:]
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            fail(f"{source}: {exc.strerror or exc}", EXIT_USAGE)
        except UnicodeDecodeError as exc:
            fail(f"{source}: not UTF-8 text (byte {exc.start})", EXIT_USAGE)
    elif text == "-":
        source, text = "standard input", sys.stdin.read()
    try:
        value = json.loads(text)
    except ValueError as exc:
        fail(f"{source} is not JSON: {exc}", EXIT_USAGE)
    if not isinstance(value, dict):
        fail(f"{source} must be a JSON object (the initial context)", EXIT_USAGE)
    return value


class Progress:
    """Shows each step of one run on stderr as it starts and ends."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.path: Path | None = None

    def __call__(self, event: Any) -> None:
        from jupyter_percent_agent.runtime.events import Retry
        from jupyter_percent_agent.tasks.events import RunStarted, StepFinished, StepStarted

        if isinstance(event, RunStarted):
            self.path = event.path
            if not self.quiet:
                click.echo(f"transcript: {event.path}", err=True)
                for limit in event.limits:
                    click.echo(f"limit lowered: {limit}", err=True)
        elif self.quiet:
            return
        elif isinstance(event, StepStarted):
            info = event.info
            click.echo(f"[{info.step}] {info.task_id} ({info.task_type}, attempt "
                       f"{info.attempt})", err=True)
        elif isinstance(event, StepFinished):
            info = event.info
            line = f"    {info.shown} ({info.seconds:.2f} s)"
            if info.detail:
                line += f": {_short(info.detail)}"
            if info.then:
                line += f" -> {info.then}"
            click.echo(line, err=True)
        elif isinstance(event, Retry):
            click.echo(f"    [{event.reason}]", err=True)


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _report(result: Any, as_json: bool) -> int:
    """Print how a run ended (``--json``: its JSON on stdout); its exit code."""
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False))
    elif result.status is RunStatus.INTERRUPTED:
        _say_interrupted(result.transcript)
    else:
        click.echo(json.dumps(result.context, ensure_ascii=False, indent=2))
        if result.status is RunStatus.OK:
            click.echo(f"{RUN_WORDS[result.status]} in {result.steps} steps; transcript: "
                       f"{result.transcript}", err=True)
        else:
            err = result.error or {}
            click.echo(f"tce: {RUN_WORDS[result.status]} at {err.get('task_id')}: "
                       f"{err.get('error_type')}: {err.get('message')} (transcript: "
                       f"{result.transcript})", err=True)
    return run_exit_code(result)


def _say_interrupted(transcript: Path | None) -> None:
    where = f" --resume {transcript}" if transcript else ""
    click.echo(f"\n[interrupted: the transcript keeps every finished step; continue with "
               f"tce run{where}]", err=True)


def _interrupted(progress: Progress, as_json: bool) -> int:
    """Ctrl-C during a run: exit 130 saying how to go on; ``--json`` prints the run as its
    transcript has it (``"status": "interrupted"``), as it prints one that ended."""
    if as_json and progress.path is not None:
        from jupyter_percent_agent.tasks.api import transcript_result

        try:
            result = transcript_result(progress.path)
        except (PercentAgentError, OSError):
            result = None  # the run was stopped before its transcript was whole
        if result is not None and result.status is RunStatus.INTERRUPTED:
            click.echo(json.dumps(result.to_json(), ensure_ascii=False))
    _say_interrupted(progress.path)
    return EXIT_INTERRUPTED


def _one(sop: Any, task_id: str, context: dict[str, Any], runs: Path | None, max_steps: int,
         as_json: bool, **options: Any) -> int:
    from jupyter_percent_agent.cli.acp import person_asker
    from jupyter_percent_agent.tasks.api import arun_task

    progress = Progress(as_json)
    try:
        result = asyncio.run(arun_task(sop, task_id, context, runs_dir=runs,
                                       max_steps=max_steps, on_event=progress,
                                       permission_asker=person_asker(quiet=as_json), **options))
    except KeyboardInterrupt:
        return _interrupted(progress, as_json)
    except OSError as exc:
        fail_for(exc)
    return _report(result, as_json)


def resume_paths(given: list[str]) -> list[str]:
    """The transcripts (and batch logs) ``--resume`` names, in any form a shell gives: a path
    (relative to here, ``~``), a glob the shell did not expand (quoted), a folder (its
    transcripts and batch logs), a name without ``.msg.md``. Each once, in order; a path that
    names nothing is one line and exit 2."""
    import glob
    import os

    from jupyter_percent_agent.tasks.batch import BATCH_SUFFIX

    found: list[str] = []
    for raw in given:
        item = os.path.expanduser(raw)
        if glob.has_magic(item):
            matches = sorted(glob.glob(item))
        elif os.path.isdir(item):
            inside = sorted(glob.glob(os.path.join(glob.escape(item), "*.msg.md")))
            logs = sorted(glob.glob(os.path.join(glob.escape(item), "*" + BATCH_SUFFIX)))
            matches = logs + inside
        elif os.path.exists(item):
            matches = [item]
        elif os.path.exists(item + ".msg.md"):
            matches = [item + ".msg.md"]
        else:
            matches = []
        if not matches:
            fail(f"--resume {raw}: no such transcript", EXIT_USAGE)
        found += [m for m in matches if os.path.abspath(m) not in map(os.path.abspath, found)]
    return found


def _resume(paths: list[str], max_steps: int | None, model: str | None,
            as_json: bool, concurrency: int = 8) -> int:
    from jupyter_percent_agent.cli.acp import person_asker
    from jupyter_percent_agent.tasks.api import aresume_task
    from jupyter_percent_agent.tasks.batch import BATCH_SUFFIX

    code = EXIT_OK
    logs = [p for p in paths if p.endswith(BATCH_SUFFIX)]
    # a batch's own transcripts are resumed by its log, not one by one as well
    covered = set()
    for log in logs:
        covered |= _batch_transcripts(log)
        code = max(code, _resume_batch(log, max_steps, model, as_json, concurrency))
    for path in paths:
        if path in logs or str(Path(path).resolve()) in covered:
            continue
        progress = Progress(as_json)
        progress.path = Path(path)
        try:
            result = asyncio.run(aresume_task(path, max_steps=max_steps, model=model,
                                              on_event=progress,
                                              permission_asker=person_asker(quiet=as_json)))
        except KeyboardInterrupt:
            return _interrupted(progress, as_json)
        except (PercentAgentError, OSError) as exc:
            _problems(exc)
            fail_for(exc, path=path)
        code = max(code, _report(result, as_json))
    return code


def _batch_transcripts(log: str) -> set[str]:
    from jupyter_percent_agent.tasks.batch import BatchLog

    try:
        _, began = BatchLog(Path(log)).read()
    except (OSError, ValueError):
        return set()
    return {str(p.resolve()) for p in began.values()}


def _resume_batch(log_path: str, max_steps: int | None, model: str | None, as_json: bool,
                  concurrency: int) -> int:
    """Go on with a killed batch: inputs with a result are not run again, those whose run
    began resume from their transcripts, the others start."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.tasks.batch import BatchLog, finished_inputs

    log = BatchLog(Path(log_path))
    try:
        header, began = log.read()
    except (OSError, ValueError) as exc:
        fail(str(exc), EXIT_USAGE)
    sop, task_id = _load(header["sop"], header["batch"])
    results = Path(header["results"])
    done = finished_inputs(results)
    steps = max_steps or int(trust.bound("task_max_steps", None, folder=None).value or 1)
    return _many(sop, task_id, header["inputs"], log.path.parent, steps, concurrency, None,
                 as_json, model=model, batch=(log, results, done, began))


def _screen() -> tuple[int, int]:
    """The terminal's columns and rows (one that says 0, as a fresh pty does: 80 x 24;
    tqdm hides a bar below the last row, so 0 rows would hide it)."""
    import os

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except OSError:
        return 80, 24
    return min(size.columns or 80, 120), size.lines or 24


def _many(sop: Any, task_id: str, inputs: str, runs: Path | None, max_steps: int,
          concurrency: int, cluster: str | None, as_json: bool, *,
          batch: tuple[Any, Path, set[int], dict[int, Path]] | None = None,
          **options: Any) -> int:
    """Run every input (``batch``: go on with a killed batch: its log, results file, the
    inputs done and the transcripts of those begun)."""
    from tqdm import tqdm

    from jupyter_percent_agent.tasks import batch as batches
    from jupyter_percent_agent.tasks.api import default_runs_dir

    try:
        jobs = batches.read_inputs(inputs)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{inputs}: {exc}", EXIT_USAGE)
    try:
        folder = runs or default_runs_dir(sop)
    except PercentAgentError as exc:
        fail_for(exc)
    folder.mkdir(parents=True, exist_ok=True)
    if batch is None:
        results_path, log_path = batches.claim_batch_paths(folder, task_id)
        if cluster:
            log_path.unlink()
        log = None if cluster else batches.BatchLog.create(
            log_path, task_id=task_id, sop=sop.root, inputs=Path(inputs), results=results_path)
        began: dict[int, Path] = {}
        mode = "w"
    else:
        log, results_path, done, began = batch
        jobs = [j for j in jobs if j.index not in done]
        mode = "a"
        if not as_json:
            click.echo(f"resuming: {len(done)} inputs done, {len(jobs)} to go "
                       f"({sum(j.index in began for j in jobs)} from their transcripts)",
                       err=True)
    columns, rows = _screen()
    from jupyter_percent_agent.cli._terminal import drawing_stream
    from jupyter_percent_agent.masking import mask_data

    bar = tqdm(total=len(jobs), unit="input", file=drawing_stream(sys.stderr), ncols=columns,
               nrows=rows, disable=not sys.stderr.isatty())
    counts = dict.fromkeys(RunStatus, 0)
    with results_path.open(mode, encoding="utf-8") as out:

        def on_result(result: dict[str, Any]) -> None:
            # text leaving the process, as a transcript is: a tool may have returned a key
            result = mask_data(result)
            line = json.dumps(result, ensure_ascii=False)
            out.write(line + "\n")
            out.flush()
            status = read_status(result["status"]) or RunStatus.ERROR
            counts[status] += 1
            if as_json:
                click.echo(line)
            if status is RunStatus.ERROR:
                err = result.get("error") or {}
                bar.write(f"input {result['input']}: {RUN_WORDS[status]} at "
                          f"{err.get('task_id')}: {err.get('error_type')}: "
                          f"{_short(str(err.get('message')))}", file=sys.stderr)
            bar.update(1)

        try:
            if cluster:
                from jupyter_percent_agent.tasks.cluster import run_on_cluster

                try:
                    run_on_cluster(cluster, sop.root, task_id, jobs, runs_dir=folder,
                                   concurrency=concurrency, max_steps=max_steps,
                                   on_result=on_result, **options)
                except PercentAgentError as exc:
                    fail_for(exc)
            else:
                asyncio.run(batches.run_inputs(sop, task_id, jobs, concurrency=concurrency,
                                               runs_dir=folder, max_steps=max_steps,
                                               on_result=on_result, log=log, resume=began,
                                               **options))
        except KeyboardInterrupt:
            bar.close()
            # an input that had no result when the batch stopped is interrupted, not failed
            counts[RunStatus.INTERRUPTED] += len(jobs) - sum(counts.values())
            click.echo("\n" + _counted(counts, results_path), err=True)
            again = f"tce run --resume {log.path}" if log is not None else \
                f"tce run --resume {folder}/*.msg.md"
            click.echo(f"[interrupted: finished inputs are in {results_path}; go on with "
                       f"{again}]", err=True)
            return EXIT_INTERRUPTED
    bar.close()
    click.echo(_counted(counts, results_path), err=True)
    return max(EXIT_FOR[s] for s, n in counts.items() if n or s is RunStatus.OK)


def _counted(counts: dict[RunStatus, int], results: Path) -> str:
    """``9 succeeded, 3 failed; results: FILE`` (and how many were interrupted, if any)."""
    shown = [RunStatus.OK, RunStatus.ERROR]
    if counts[RunStatus.INTERRUPTED]:
        shown.append(RunStatus.INTERRUPTED)
    return ", ".join(f"{counts[s]} {RUN_WORDS[s]}" for s in shown) + f"; results: {results}"
