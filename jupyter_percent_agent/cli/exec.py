"""``tce exec``: run a message file's cells in order, as ``jupyter execute`` runs a notebook.

Every cell that has no outputs yet (``--all``: every cell; ``--cell N``: that one) runs where
it belongs: a ``[code]`` cell in a code kernel of its language (trusted folder) or the
sandbox, a message to its agent, a ``[tool_call]`` to its tools, a ``[task]`` to its workflow
(as the Agent kernel runs it). Code a reply proposed
(``proposed=true``) is the exception: the user reads it first, so it runs only when named
(``--cell N``), with ``--proposed``, or by the user's ``auto_run``. The file is saved after
each cell (atomically, under its lock); the first cell that fails stops the run, with the exit
code ``tce chat`` would give. Ctrl-C interrupts the kernel or the model call, keeps every
complete output, and exits 130. The code kernels stop when the command ends. A cell's
``input()`` and ``getpass()`` read the terminal (the prompt shown as the terminal guard shows
text, a password not echoed); with no terminal the cell fails in one line.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import click

from jupyter_percent_agent.cli._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TRUST,
    EXIT_USAGE,
    fail,
    fail_for,
    failed_run_exit,
    read_or_fail,
    resolve_item,
)
from jupyter_percent_agent.errors import TABLE, Kind, PercentAgentError

RUNNABLE = ("message", "code", "tool_call", "toolchain", "async", "task")
EPILOG = (
    "Exit codes as tce chat's: 0 done, 1 a model call failed, 3 malformed file, "
    "4 a code cell or tool failed, 5 bad agent, 6 refused (the folder is not trusted: "
    "tce trust), 130 Ctrl-C (complete outputs kept). See docs/cli.md."
)


def chosen_cells(
    nb: dict[str, Any], *, run_all: bool, cell: int | None, proposed: bool = False
) -> tuple[list[tuple[int, str]], list[int]]:
    """(1-based index, cell id) of the cells to run, in order; and the indices of the cells
    left out because a reply proposed them and ``proposed`` does not ask for them (a cell
    named by ``cell`` always runs: the user chose it)."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime.history import conversation_cells

    cells = conversation_cells(nb)
    if cell is not None:
        if not 1 <= cell <= len(cells):
            fail(
                f"--cell {cell}: the file has {len(cells)} cells (tce list shows them)", EXIT_USAGE
            )
        picked = [(cell, cells[cell - 1])]
    else:
        # a code cell that printed nothing has run all the same: it has its execution count
        picked = [
            (i, c)
            for i, c in enumerate(cells, start=1)
            if run_all or not (c.get("outputs") or c.get("execution_count") is not None)
        ]
    runnable = [
        (i, c)
        for i, c in picked
        if fmt.cell_kind(c) in RUNNABLE
        and (fmt.cell_kind(c) != "message" or fmt.message_text(c).strip())
    ]
    skipped = []
    if cell is None and not proposed:
        skipped = [i for i, c in runnable if fmt.cell_attrs(c).get("proposed") is not None]
    return [(i, fmt.cell_id(c)) for i, c in runnable if i not in skipped], skipped


def proposed_after(path: Path, cell_id: str) -> list[int]:
    """The 1-based indices of the ``proposed=true`` code cells right under ``cell_id``."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime.history import conversation_cells

    cells = conversation_cells(fmt.read(path))
    ids = [fmt.cell_id(c) for c in cells]
    if cell_id not in ids:
        return []
    found = []
    for i in range(ids.index(cell_id) + 1, len(cells)):
        cell = cells[i]
        if fmt.cell_kind(cell) != "code" or fmt.cell_attrs(cell).get("proposed") is None:
            break
        found.append(i + 1)
    return found


def cell_id_at(path: Path, index: int) -> str:
    """The id of the 1-based ``index``-th cell of the file."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime.history import conversation_cells

    return fmt.cell_id(conversation_cells(fmt.read(path))[index - 1])


def auto_run(path: Path, cell_id: str, *, quiet: bool = False) -> int:
    """Run the code a reply proposed, when the user's config says ``auto_run`` for this
    folder (never a file); the exit code of the first that fails, else 0."""
    from jupyter_percent_agent import trust

    if not trust.auto_runs(path.parent):
        return EXIT_OK
    for index in proposed_after(path, cell_id):
        if not quiet:
            click.echo(f"[auto_run: cell {index}, proposed by the reply]", err=True)
        code = run_exec(path, cell=index, quiet=quiet)
        if code != EXIT_OK:
            return code
    return EXIT_OK


@click.command("exec", epilog=EPILOG)
@click.argument("item")
@click.option("--all", "run_all", is_flag=True, help="Run every cell again, not only new ones.")
@click.option("--cell", type=int, metavar="N", help="Run cell N (as tce list numbers them).")
@click.option(
    "--proposed",
    is_flag=True,
    help="Also run the code replies proposed (proposed=true cells). Read them first.",
)
@click.option("--agent", help="The agent for messages that name none.")
@click.option("--model", help="Use this model (or a comma-separated fallback list).")
@click.option("-q", "--quiet", is_flag=True, help="No progress or replies on the terminal.")
def exec_(
    item: str,
    run_all: bool,
    cell: int | None,
    proposed: bool,
    agent: str | None,
    model: str | None,
    quiet: bool,
) -> None:
    """Run the cells of ITEM that have no outputs yet, in order, saving after each."""
    path = resolve_item(item)
    sys.exit(
        run_exec(
            path,
            run_all=run_all,
            cell=cell,
            proposed=proposed,
            agent=agent,
            model=model,
            quiet=quiet,
        )
    )


def run_exec(
    path: Path,
    *,
    run_all: bool = False,
    cell: int | None = None,
    proposed: bool = False,
    agent: str | None = None,
    model: str | None = None,
    quiet: bool = False,
) -> int:
    """The whole command, returning the exit code."""
    from jupyter_percent_agent import format as fmt

    nb = read_or_fail(path)
    todo, skipped = chosen_cells(nb, run_all=run_all, cell=cell, proposed=proposed)
    if skipped and not quiet:
        named = ", ".join(map(str, skipped))
        click.echo(
            f"tce: not run: cell{'s' if len(skipped) > 1 else ''} {named}, code a reply "
            f"proposed; read it, then run it with --cell N (or all of them with --proposed)",
            err=True,
        )
    if not todo:
        if not quiet and not skipped:
            click.echo(
                "tce: nothing to run (every cell has outputs; --all runs them again)", err=True
            )
        return EXIT_OK
    kinds = {fmt.cell_id(c): fmt.cell_kind(c) for c in nb.get("cells") or []}
    try:
        return asyncio.run(_exec(path, todo, kinds, agent=agent, model=model, quiet=quiet))
    except KeyboardInterrupt:
        click.echo("\n[interrupted: every complete output is saved]", err=True)
        return EXIT_INTERRUPTED
    except (PercentAgentError, OSError) as exc:
        fail_for(exc, path=path)


async def answer_from_terminal(prompt: str, password: bool) -> str:
    """A cell's ``input(prompt)`` (``password``: ``getpass``) read from the terminal, on a
    thread that never keeps ``tce`` from exiting; ``InputUnavailable`` with no terminal."""
    import threading

    from jupyter_percent_agent.cli._terminal import confirm_text
    from jupyter_percent_agent.codekernel import InputUnavailable

    asked = "getpass()" if password else "input()"
    try:
        terminal = sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if not terminal:
        raise InputUnavailable(
            f"the cell asked for input ({asked}) and tce has no terminal to read it from; "
            "run tce exec in a terminal, or the cell in JupyterLab"
        )
    loop = asyncio.get_running_loop()
    answered: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        import getpass

        try:
            sys.stdout.flush()
            shown = confirm_text(prompt)
            value = getpass.getpass(shown) if password else input(shown)
        except EOFError:
            value = "\x04"  # Ctrl-D: the cell's input() raises EOFError, as in a terminal
        except BaseException as exc:  # whatever it is, the waiting cell gets it
            loop.call_soon_threadsafe(answered.set_exception, exc)
            return
        loop.call_soon_threadsafe(answered.set_result, value)

    threading.Thread(target=read, name="tce-input", daemon=True).start()
    return await answered


async def _run_task(cell: Any, run: Any, options: Any) -> None:
    """``[task]`` cells run their workflow, as in the Agent kernel (imported when one runs)."""
    from jupyter_percent_agent.tasks.cell import run_in_turn

    await run_in_turn(cell, run, options)


async def _exec(
    path: Path,
    todo: list[tuple[int, str]],
    kinds: dict[str, str],
    *,
    agent: str | None,
    model: str | None,
    quiet: bool,
) -> int:
    from jupyter_percent_agent.cli._printer import Printer
    from jupyter_percent_agent.codekernel import CodeKernels
    from jupyter_percent_agent.runtime.conversation import CellInFile, WarmingUp, send
    from jupyter_percent_agent.runtime.transport import command_transport
    from jupyter_percent_agent.runtime.turn import RunOptions

    transport = command_transport()  # a cell whose turn calls a model warms it up
    kernels = CodeKernels(path.parent, answer=answer_from_terminal)
    # no person answers an external agent's permission requests here (a script, a pipeline):
    # they are rejected unless the user's own tce acp add --permissions says otherwise
    options = RunOptions(agent=agent, model=model, base_dir=path.parent, code_kernels=kernels,
                         runners={"task": _run_task}, path=path)
    printer = Printer(quiet=quiet)
    from jupyter_percent_agent import trust

    async def one(index: int, cid: str, label: str) -> int | None:
        """Run one cell; the exit code when it failed, else None."""
        if not quiet:
            click.echo(label, err=True)
        run = await send(WarmingUp(CellInFile(path, cid), transport), options, printer,
                         transport=transport)
        if printer.wrote:
            click.echo()
            printer.wrote = False
        if run.status == "error":
            click.echo(f"tce: cell {index}: {run.error_detail}", err=True)
            if kinds.get(cid) == "task":  # as tce run: the workflow failed, or was refused
                refused = run.error_type == TABLE[Kind.REFUSED].error_type
                return EXIT_TRUST if refused else EXIT_FAILED
            return failed_run_exit(run.agent)
        if run.proposed and trust.auto_runs(path.parent):  # the user's config, never a file
            for at in proposed_after(path, cid):
                failed = await one(at, cell_id_at(path, at), f"[auto_run: cell {at}]")
                if failed is not None:
                    return failed
        return None

    try:
        for n, (index, cid) in enumerate(todo, start=1):
            failed = await one(index, cid, f"[{n}/{len(todo)}] cell {index} ({kinds.get(cid, '')})")
            if failed is not None:
                return failed
        return EXIT_OK
    finally:
        await asyncio.shield(kernels.shutdown())
