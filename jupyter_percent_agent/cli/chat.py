"""``tce chat``: append a message to a message file, stream the agent's reply, save.

A thin front end over ``runtime.send``: it turns options into a ``RunOptions``, prints the
typed events as they come, and turns what went wrong into one line and an exit code.
"""

from __future__ import annotations

import asyncio
import errno
import json
import re
import sys
import time
from pathlib import Path

import click

from jupyter_percent_agent.cli._common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    fail_for,
    failed_run_exit,
    resolve_item,
)
from jupyter_percent_agent.cli._printer import Printer
from jupyter_percent_agent.errors import PercentAgentError


def _slug(text: str) -> str:
    words = re.findall(r"\w+", text.lower())[:6]
    return "-".join(words)[:48] or "chat"


def new_file_in(folder: Path, message: str) -> Path:
    """A fresh file name under ``folder`` for ``tce chat FOLDER/``."""
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "not a folder (a trailing / names a folder to "
                                 "make a new file in)", str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    stem = time.strftime("%Y-%m-%d") + "-" + _slug(message)
    path = folder / f"{stem}.msg.md"
    n = 2
    while path.exists():
        path = folder / f"{stem}-{n}.msg.md"
        n += 1
    return path


def target_path(item: str, message: str) -> Path:
    if item.endswith(("/", "\\")) or Path(item).is_dir():
        return new_file_in(Path(item), message)
    return resolve_item(item)


def _describe(out: dict) -> dict:
    from jupyter_percent_agent import format as fmt

    return {"kind": fmt.output_kind(out), "attrs": fmt.output_attrs(out),
            "text": fmt.output_text(out)}


EPILOG = ("Exit codes: 0 done, 1 the model call failed (recorded as [error]), 2 usage, "
          "3 malformed file (left untouched), 4 tools, 5 unknown or bad agent, "
          "6 refused (needs a trusted folder, see tce trust), "
          "130 Ctrl-C (partial reply kept with interrupted=true). See docs/cli.md.")


@click.command("chat", epilog=EPILOG)
@click.argument("item")
@click.argument("agent", required=False)
@click.option("-m", "--message", "message", required=True,
              help='The message; "-" reads it from standard input.')
@click.option("-i", "--include", multiple=True, metavar="SEL",
              help="Include cells: OTHER/[1..3] (another file) or [4] (this file).")
@click.option("-e", "--exclude", multiple=True, metavar="SEL",
              help="Exclude cells: [2..4] (this file) or OTHER/[2] (an included file).")
@click.option("--save", is_flag=True, help="Write the -i/-e choices into the file.")
@click.option("--model", help="Use this model (or a comma-separated fallback list).")
@click.option("--title", help="A title for the message heading.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object, do not stream.")
@click.option("--force", is_flag=True, help="Add a Discussion section to a plain .md file.")
@click.option("--explain", is_flag=True,
              help="Print which earlier cells the message would send, with their relevance "
                   "scores under history: auto, and the files it names (@file:, ![](...)); "
                   "send and write nothing.")
def chat(item: str, agent: str | None, message: str, include: tuple[str, ...],
         exclude: tuple[str, ...], save: bool, model: str | None, title: str | None,
         as_json: bool, force: bool, explain: bool) -> None:
    """Append MESSAGE to ITEM (a .msg.md file, the extension optional; FOLDER/ makes a new
    file), stream AGENT's reply to the terminal, and save it into the file."""
    if message == "-":
        message = sys.stdin.read()
    if not message.strip():
        fail("the message is empty", EXIT_USAGE)
    if explain:
        sys.exit(explain_history(resolve_item(item), message, agent=agent, model=model,
                                 include=include, exclude=exclude, as_json=as_json))
    try:
        path = target_path(item, message)
    except OSError as exc:  # FILE/ names no folder; a folder that cannot be made
        fail_for(exc)
    try:
        code = run_chat(path, message, agent=agent, include=include, exclude=exclude,
                        save=save, model=model, title=title, as_json=as_json, force=force)
    except KeyboardInterrupt:  # before the model call started: nothing half-done to keep
        click.echo("\n[interrupted]", err=True)
        code = EXIT_INTERRUPTED
    sys.exit(code)


def explain_history(path: Path, message: str, *, agent: str | None = None,
                    model: str | None = None, include: tuple[str, ...] = (),
                    exclude: tuple[str, ...] = (), as_json: bool = False) -> int:
    """Print, per earlier cell of ``path``, whether sending ``message`` would send it and,
    for ``history: auto`` cells, its score (``tce chat --explain``, ``tce list --history``),
    and the files and images ``message`` names that would go with it."""
    from jupyter_percent_agent.cli._common import read_or_fail
    from jupyter_percent_agent.runtime import attachments
    from jupyter_percent_agent.runtime import history as hist
    from jupyter_percent_agent.runtime.agents import bound_agent, resolve_agent
    from jupyter_percent_agent.runtime.context import (
        check_selected,
        selections,
    )
    from jupyter_percent_agent.runtime.context import (
        explain_history as explain_rows,
    )
    from jupyter_percent_agent.runtime.transport import command_transport

    nb = read_or_fail(path)
    try:
        hist.check_history_values(nb)
        chosen = selections(nb, include, exclude)
        check_selected(chosen, len(hist.conversation_cells(nb)) + 1)
        the_agent, _ = bound_agent(resolve_agent(nb, None, cli_agent=agent, model=model),
                                   path.parent)
        rows, budget = asyncio.run(explain_rows(nb, message, the_agent, chosen,
                                                base_dir=path.parent,
                                                transport=command_transport()))
        files = attachments.check(message, path.parent)
    except (PercentAgentError, OSError) as exc:
        fail_for(exc, path=path)
    if as_json:
        click.echo(json.dumps({"budget": budget, "cells": [
            {"index": r.index, "id": r.cell, "why": r.why, "tokens": r.tokens,
             "score": r.score, "sent": r.sent} for r in rows],
            "attached": files.sent,
            "left_out": [{"path": p, "reason": r} for p, r in files.left_out]},
            ensure_ascii=False))
        return EXIT_OK
    sent = sum(r.tokens for r in rows if r.sent)
    click.echo(f"history: {sum(r.sent for r in rows)} of {len(rows)} cells, about {sent:,} "
               "tokens" + (f" (budget {budget:,})" if budget is not None else ""))
    click.echo(f"{'CELL':<10} {'INDEX':>5} {'WHY':<6} {'TOKENS':>7} {'SCORE':>6}  SENT")
    for r in rows:
        score = f"{r.score:6.2f}" if r.score is not None else f"{'-':>6}"
        click.echo(f"{r.cell:<10} {r.index:>5} {r.why:<6} {r.tokens:>7} {score}  "
                   f"{'sent' if r.sent else '-'}")
    for line in attachments.described(files):
        click.echo(line)
    return EXIT_OK


def run_chat(path: Path, message: str, *, agent: str | None = None,
             include: tuple[str, ...] = (), exclude: tuple[str, ...] = (), save: bool = False,
             model: str | None = None, title: str | None = None, as_json: bool = False,
             force: bool = False) -> int:
    """The whole command, returning the exit code."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime.conversation import FileConversation, WarmingUp, send
    from jupyter_percent_agent.runtime.transport import command_transport
    from jupyter_percent_agent.runtime.turn import RunOptions

    transport = command_transport()
    conversation = FileConversation(path, message, title=title, force=force,
                                    save=(include, exclude) if save else None)
    from jupyter_percent_agent.cli.acp import person_asker

    options = RunOptions(agent=agent, model=model, include=() if save else include,
                         exclude=() if save else exclude, base_dir=path.parent, path=path,
                         permission_asker=person_asker(quiet=as_json))
    printer = Printer(quiet=as_json)
    try:
        run = asyncio.run(send(WarmingUp(conversation, transport), options, printer,
                               transport=transport))
    except KeyboardInterrupt:
        if conversation.cell_id is None:
            raise
        kept = ("a partial reply is kept with interrupted=true" if printer.received
                else "no reply had arrived")
        click.echo(f"\n[interrupted: the message is saved; {kept}]", err=True)
        return EXIT_INTERRUPTED
    except (PercentAgentError, OSError) as exc:
        fail_for(exc, path=path)
    finally:
        if "jupyter_percent_agent.mcptools.host" in sys.modules:  # the MCP servers this turn
            sys.modules["jupyter_percent_agent.mcptools.host"].HOST.stop_all()  # started
    if as_json:
        click.echo(json.dumps({"file": str(path), **run.to_json(detail=True),
                               "dropped": run.dropped,
                               "outputs": [_describe(o) for o in run.outputs]},
                              ensure_ascii=False))
    else:
        if printer.tool_mode and run.reply:
            click.echo("\n" + fmt.escape_surrogates(run.reply))
        elif printer.wrote:
            click.echo()
        if run.status == "error":
            click.echo(f"tce: {run.error_detail}", err=True)
    if run.status == "error":
        return failed_run_exit(run.agent)
    if run.proposed:  # code the reply proposes runs by itself only where the user said so
        from jupyter_percent_agent.cli.exec import auto_run

        return auto_run(path, run.cell_id, quiet=as_json)
    return EXIT_OK
