"""``tce sop``: check, list and show the task documents of a SOP folder.

Light on purpose (click, YAML, the task documents' parser): no litellm, nbformat or jupytext.
Sub-commands load lazily; another module adds one with a line in ``SUBCOMMANDS``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from jupyter_percent_agent.cli import LazyGroup
from jupyter_percent_agent.cli._common import EXIT_FILE, EXIT_OK, EXIT_USAGE, fail

SUBCOMMANDS: dict[str, str] = {
    "check": "jupyter_percent_agent.cli.sop:check",
    "list": "jupyter_percent_agent.cli.sop:list_",
    "show": "jupyter_percent_agent.cli.sop:show",
    "index": "jupyter_percent_agent.cli.sop_index:index",
    "search": "jupyter_percent_agent.cli.sop_index:search",
}

DEFAULT_SOP = "sop"


@click.group("sop", cls=LazyGroup, lazy=SUBCOMMANDS)
def sop() -> None:
    """Task documents (plan / execute / validate / error_handler) in a SOP folder."""


def load(folder: str) -> Any:
    from jupyter_percent_agent.tasks.sop import load_sop

    try:
        return load_sop(folder)
    except FileNotFoundError:
        fail(f"{folder}: no such folder", EXIT_USAGE)


@click.command("check")
@click.argument("folder", default=DEFAULT_SOP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per problem.")
def check(folder: str, as_json: bool) -> None:
    """Check every document of FOLDER (default: ./sop) and list all problems at once:
    path:line: field: what is wrong. Exit 0 when clean, 3 otherwise."""
    loaded = load(folder)
    for problem in loaded.problems:
        click.echo(json.dumps(problem.to_json(), ensure_ascii=False) if as_json
                   else str(problem))
    n, docs = len(loaded.problems), len(loaded.documents)
    summary = (f"{folder}: {docs} document{'s' if docs != 1 else ''}, "
               + (f"{n} problem{'s' if n != 1 else ''}" if n else "no problems"))
    click.echo(summary, err=True)
    sys.exit(EXIT_FILE if n else EXIT_OK)


@click.command("list")
@click.argument("folder", default=DEFAULT_SOP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per document.")
def list_(folder: str, as_json: bool) -> None:
    """List the documents of FOLDER: task_id, type, description."""
    loaded = load(folder)
    docs = sorted(loaded.documents.values(), key=lambda d: d.task_id)
    if as_json:
        for d in docs:
            click.echo(json.dumps({"task_id": d.task_id, "task_type": d.task_type,
                                   "description": d.description, "path": d.path},
                                  ensure_ascii=False))
    else:
        width = max([7, *(len(d.task_id) for d in docs)])
        click.echo(f"{'TASK_ID':<{width}}  {'TYPE':<13}  DESCRIPTION")
        for d in docs:
            click.echo(f"{d.task_id:<{width}}  {d.task_type:<13}  {_one_line(d.description)}")
    if loaded.problems:
        click.echo(f"{len(loaded.problems)} problems: see tce sop check {folder}", err=True)


def _one_line(text: str) -> str:
    return " ".join(text.split())


@click.command("show")
@click.argument("task_id")
@click.option("--sop", "folder", default=DEFAULT_SOP, show_default=True,
              help="The SOP folder.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def show(task_id: str, folder: str, as_json: bool) -> None:
    """Show a document: what it reads and writes, its parameters, where it is used, and its
    text."""
    loaded = load(folder)
    task_id = task_id.removesuffix(".md")
    if task_id not in loaded:
        from jupyter_percent_agent.errors import did_you_mean

        own = [p for p in loaded.problems if p.path == f"{task_id}.md"]
        if own:  # the file is there: say why it is no document
            fail(str(own[0]), EXIT_FILE)
        fail(f"no document {task_id!r} in {folder}{did_you_mean(task_id, loaded.documents)}",
             EXIT_USAGE)
    doc = loaded[task_id]
    info = describe(doc, loaded.used_by(task_id), Path(folder))
    if as_json:
        click.echo(json.dumps(info, ensure_ascii=False))
        return
    click.echo(f"{doc.task_id}  ({doc.task_type})  {_one_line(doc.description)}")
    click.echo(f"file: {info['file']}")
    for key, title in (("tool", "tool"), ("agent", "agent")):
        if info[key]:
            click.echo(f"{title}: {info[key]}")
    for key, title in (("inputs", "inputs"), ("outputs", "outputs"),
                       ("parameters", "parameters")):
        if info[key]:
            click.echo(f"{title}:")
            for name, value in info[key].items():
                click.echo(f"  {name}: {_shown(value)}")
    if info["plan_steps"]:
        click.echo("plan_steps: " + " -> ".join(info["plan_steps"]))
    failure = info["on_failure"]
    if failure["retry"] or failure["replan"] or failure["error_routing"]:
        routes = ", ".join(f"{k} -> {v}" for k, v in failure["error_routing"].items())
        click.echo(f"on failure: retry {failure['retry']}, replan "
                   f"{'yes' if failure['replan'] else 'no'}" + (f"; {routes}" if routes else ""))
    used = info["used_by"]
    click.echo("used by: " + (", ".join(f"{u['task_id']} ({u['as']})" for u in used)
                              if used else "nothing (a top-level task)"))
    problems = [p for p in loaded.problems if p.path == doc.path]
    for p in problems:
        click.echo(f"problem: {p}")
    click.echo("\n" + doc.text.rstrip())


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def describe(doc: Any, used: list[tuple[str, str]], folder: Path) -> dict[str, Any]:
    return {
        "task_id": doc.task_id, "task_type": doc.task_type, "description": doc.description,
        "file": str(folder / doc.path), "tool": doc.tool_id, "agent": doc.agent,
        "inputs": dict(doc.inputs), "outputs": dict(doc.outputs),
        "parameters": {p.name: p.value for p in doc.parameters},
        "sections": dict(doc.sections), "plan_steps": list(doc.plan_steps),
        "on_failure": {"retry": doc.on_failure.retry, "replan": doc.on_failure.replan,
                       "error_routing": dict(doc.on_failure.routes)},
        "used_by": [{"task_id": t, "as": how} for t, how in used],
        "text": doc.text,
    }
