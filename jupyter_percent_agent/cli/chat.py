"""``tce chat``: append a message to a message file, stream the agent's reply, save."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import click

from jupyter_percent_agent.cli._common import (
    EXIT_AGENT,
    EXIT_FILE,
    EXIT_INTERRUPTED,
    EXIT_MODEL,
    EXIT_OK,
    EXIT_TOOLS,
    EXIT_TRUST,
    EXIT_USAGE,
    fail,
    resolve_item,
)


def _slug(text: str) -> str:
    words = re.findall(r"\w+", text.lower())[:6]
    return "-".join(words)[:48] or "chat"


def default_title(message: str, width: int = 60) -> str:
    """The heading title of a new message: its first line, shortened."""
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    line = line.lstrip("#").strip()
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def new_file_in(folder: Path, message: str) -> Path:
    """A fresh file name under ``folder`` for ``tce chat FOLDER/``."""
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


class Printer:
    """Streams a run to the terminal: reply text on stdout, tool steps and notes on stderr."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tool_mode = False
        self.wrote = False

    def __call__(self, kind: str, payload: Any) -> None:
        if self.quiet:
            return
        if kind == "step":
            self.tool_mode = True
        elif kind == "delta":
            stream = sys.stderr if self.tool_mode else sys.stdout
            stream.write(payload)
            stream.flush()
            self.wrote = not self.tool_mode or self.wrote
        elif kind == "reasoning":  # a reasoning model's thinking: shown, not the answer
            sys.stderr.write(payload)
            sys.stderr.flush()
        elif kind == "retry":
            click.echo(f"\n[{payload}]", err=True)
        elif kind == "status":
            click.echo(f"[{payload}]", err=True)
        elif kind == "chunk":
            name, chunk = payload
            click.echo(f"[{name}] {chunk}", err=True)
        elif kind == "output" and self.tool_mode:
            from jupyter_percent_agent import format as fmt

            okind = fmt.output_kind(payload)
            if okind in ("tool_call", "tool_result"):
                attrs = fmt.output_attrs(payload)
                label = attrs.get("name") or attrs.get("status") or ""
                click.echo(f"\n--- {okind} {label} ---\n{fmt.output_text(payload)}", err=True)


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
def chat(item: str, agent: str | None, message: str, include: tuple[str, ...],
         exclude: tuple[str, ...], save: bool, model: str | None, title: str | None,
         as_json: bool, force: bool) -> None:
    """Append MESSAGE to ITEM (a .msg.md file, the extension optional; FOLDER/ makes a new
    file), stream AGENT's reply to the terminal, and save it into the file."""
    if message == "-":
        message = sys.stdin.read()
    if not message.strip():
        fail("the message is empty", EXIT_USAGE)
    path = target_path(item, message)
    try:
        code = run_chat(path, message, agent=agent, include=include, exclude=exclude,
                        save=save, model=model, title=title, as_json=as_json, force=force)
    except KeyboardInterrupt:  # before the model call started: nothing half-done to keep
        click.echo("\n[interrupted]", err=True)
        code = EXIT_INTERRUPTED
    sys.exit(code)


def _prepare(path: Path, force: bool) -> None:
    from jupyter_percent_agent.runtime import store

    if path.name.endswith(".msg.md"):
        path.parent.mkdir(parents=True, exist_ok=True)
        return
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
        store.enable_discussion(path)
        return
    if not store.has_message_section(path.read_text()):
        if not force:
            fail(f"{path} is a plain Markdown file; use --force to add a Discussion section "
                 "for messages", EXIT_USAGE)
        store.enable_discussion(path)


def _saved_form(sel: Any, folder: Path) -> str:
    """A selection of another file as the front matter keeps it: relative to the file's
    folder, which it may not leave (a file may only include files of its own folder)."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.runtime.session import resolve_item

    real = resolve_item(sel.path, folder).resolve()
    rel = os.path.relpath(real, folder.resolve())
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise trust.TrustError(f"--save would keep {sel.path!r}, outside the file's folder, in "
                               "its front matter", "use -i without --save for files elsewhere",
                               kind="path")
    rest = sel.text.strip()[len(sel.path):] if sel.text.strip().startswith(sel.path) else ""
    return rel + rest if rest else rel


def _save_choices(nb: dict, include: tuple[str, ...], exclude: tuple[str, ...],
                  folder: Path) -> None:
    """``--save``: selections of other files go into the front matter (every later message
    uses them), relative to the file's folder; cells of this file get their ``history``
    attribute set."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime import history as hist
    from jupyter_percent_agent.runtime.ranges import parse_selection
    from jupyter_percent_agent.runtime.store import set_cell_attr

    cells = hist.conversation_cells(nb)
    fm = fmt.front_matter(nb)
    for key, sels, mode in (("include", include, "include"), ("exclude", exclude, "exclude")):
        others = [_saved_form(parse_selection(s), folder) for s in sels
                  if parse_selection(s).path is not None]
        if others:
            old = fm.get(key) or []
            old = [old] if isinstance(old, str) else list(old)
            fmt.set_front_matter(nb, key, old + [s for s in others if s not in old])
        for s in sels:
            sel = parse_selection(s)
            if sel.path is None:
                for i in sel.indices(len(cells)):
                    set_cell_attr(cells[i - 1], "history", mode)


def run_chat(path: Path, message: str, *, agent: str | None = None,
             include: tuple[str, ...] = (), exclude: tuple[str, ...] = (), save: bool = False,
             model: str | None = None, title: str | None = None, as_json: bool = False,
             force: bool = False) -> int:
    """The whole command, returning the exit code."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.runtime import models, store
    from jupyter_percent_agent.runtime import warm as helper
    from jupyter_percent_agent.runtime.agents import AgentError, resolve_agent
    from jupyter_percent_agent.runtime.ranges import SelectionError, parse_selection
    from jupyter_percent_agent.runtime.session import CellRun, RunOptions, run_cell

    models.USE_HELPER = helper.enabled()
    warm = None if models.USE_HELPER and helper.socket_path().exists() else \
        _start_litellm_import()
    try:
        for s in (*include, *exclude):
            parse_selection(s)
    except SelectionError as exc:
        fail(str(exc), EXIT_USAGE)
    try:
        _prepare(path, force)
        attrs = None
        with store.locked(path):
            nb = store.read(path)
            chosen = resolve_agent(nb, None, cli_agent=agent, model=model)  # fail before writing
            trust.route_for(chosen.api_base, folder=path.parent, agent=chosen.name)
            if save:
                _save_choices(nb, include, exclude, path.parent)
            cid = store.new_cell_id(nb)
            nb.setdefault("cells", []).append(
                fmt.new_message(message, attrs=attrs, cell_id=cid,
                                title=title if title is not None else default_title(message)))
            fmt.write(nb, path)
    except fmt.FormatError as exc:
        fail(_format_error(path, exc), EXIT_FILE)
    except AgentError as exc:
        fail(str(exc), EXIT_AGENT)
    except trust.TrustError as exc:
        fail(str(exc), EXIT_TRUST)
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}", EXIT_USAGE)
    options = RunOptions(agent=agent, model=model, include=include if not save else (),
                         exclude=exclude if not save else (), base_dir=path.parent,
                         file_path=path)
    printer = Printer(quiet=as_json)
    run = CellRun(cell_id=cid)
    if warm is not None:
        warm.join()
    try:
        asyncio.run(run_cell(nb, cid, options, printer, run=run))
    except KeyboardInterrupt:
        run.status = "interrupted"
        store.apply_run(path, run, text=message)
        click.echo("\n[interrupted: the message is saved; a partial reply is kept with "
                   "interrupted=true]", err=True)
        return EXIT_INTERRUPTED
    except fmt.FormatError as exc:  # an included file
        fail(_format_error(None, exc), EXIT_FILE)
    except AgentError as exc:
        fail(str(exc), EXIT_AGENT)
    except trust.TrustError as exc:
        store.apply_run(path, run, text=message)  # the message stays, with nothing refused
        fail(str(exc), EXIT_TRUST)
    except FileNotFoundError as exc:
        fail(f"{exc.filename}: no such file", EXIT_USAGE)
    except Exception as exc:
        if _is_tool_error(exc):
            fail(f"{type(exc).__name__}: {exc}", EXIT_TOOLS)
        raise
    store.apply_run(path, run, text=message)
    if as_json:
        click.echo(json.dumps({"file": str(path), "cell": cid, "agent": run.agent,
                               "status": run.status, "reply": run.reply,
                               "error": run.error_detail or run.error,
                               "usage": run.usage, "dropped": run.dropped,
                               "outputs": [_describe(o) for o in run.outputs]},
                              ensure_ascii=False))
    else:
        if printer.tool_mode and run.reply:
            click.echo("\n" + run.reply)
        elif printer.wrote:
            click.echo()
        if run.status == "error":
            click.echo(f"tce: {run.error_detail or run.error}", err=True)
    if run.status == "error":
        kind = fmt.cell_kind(next(c for c in nb["cells"] if fmt.cell_id(c) == cid))
        return EXIT_TOOLS if kind in ("code", "tool_call", "toolchain") else EXIT_MODEL
    return EXIT_OK


def _format_error(path: Path | None, exc: Exception) -> str:
    msg = str(exc)
    p = getattr(exc, "path", None) or (str(path) if path else None)
    line = getattr(exc, "line", None)
    if p and p not in msg:
        msg = f"{p}:{line}: {msg}" if line else f"{p}: {msg}"
    return msg + " (the file was not changed)"


def _is_tool_error(exc: Exception) -> bool:
    return type(exc).__name__ in ("ToolLoadError", "ToolCallError")


class _Warm:
    def __init__(self) -> None:
        import threading

        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            from jupyter_percent_agent.runtime.models import import_litellm

            import_litellm()
        except Exception:
            pass

    def join(self) -> None:
        self.thread.join()


def _start_litellm_import() -> _Warm:
    """Import litellm in a thread while the file is read and the history is built."""
    return _Warm()
