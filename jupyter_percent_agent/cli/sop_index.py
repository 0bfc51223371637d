"""`tce sop index` and `tce sop search`: the semantic index of a SOP folder from the shell.

Two click commands for the ``tce sop`` group to add. They import the index only (SQLite, the
wordllama tokenizer, numpy), never litellm, nbformat or jupytext, unless the user configured
an embedding model that litellm reaches.

Exit codes: 0 done (documents that could not be indexed are named on stderr, the others are
indexed), 2 bad usage (an empty query, a folder that does not exist).
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from jupyter_percent_agent.cli._common import EXIT_USAGE, fail

if TYPE_CHECKING:
    from jupyter_percent_agent.tasks.index import Index

DEFAULT_SOP = "sop"

_sop_option = click.option(
    "--sop", "folder", default=DEFAULT_SOP, show_default=True,
    type=click.Path(path_type=Path), help="The SOP folder.")


@contextlib.contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """The index's warnings (a failed embedding model, a rebuilt file) as one line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for w in caught:
                click.echo(f"tce: warning: {w.message}", err=True)


def _open(folder: Path) -> Index:
    from jupyter_percent_agent.tasks.index import Index

    if not folder.is_dir():
        fail(f"{folder}: no such folder", EXIT_USAGE)
    with _warnings_as_lines():
        index = Index.open(folder)
    for problem in index.problems:
        click.echo(f"tce: {folder / str(problem)}: not indexed", err=True)
    return index


@click.command("index")
@click.argument("folder", default=DEFAULT_SOP, type=click.Path(path_type=Path))
def index(folder: Path) -> None:
    """Build or update the index of FOLDER (only changed documents are read again)."""
    from jupyter_percent_agent.tasks.index import INDEX_NAME, Index

    if not folder.is_dir():
        fail(f"{folder}: no such folder", EXIT_USAGE)
    with _warnings_as_lines():
        ix = Index.open(folder, update=False)
        report = ix.update()
    with ix:
        for problem in ix.problems:
            click.echo(f"tce: {folder / str(problem)}: not indexed", err=True)
        total = len(ix.task_ids())
        where = folder / INDEX_NAME if ix.path is not None else "memory"
        model = ix.embedder.model_id if ix.embedder is not None else "none"
        click.echo(f"{total} documents in {where} ({len(report.added)} added, "
                   f"{len(report.changed)} changed, {len(report.removed)} removed, "
                   f"{report.embedded} embedded with {model}; "
                   f"{len(ix.problems)} not indexed)")


@click.command("search")
@click.argument("query")
@_sop_option
@click.option("-k", "k", default=5, show_default=True, type=click.IntRange(min=1),
              help="How many documents.")
@click.option("--type", "task_types", multiple=True,
              type=click.Choice(["plan", "execute", "validate", "error_handler"]),
              help="Only documents of this task_type (repeatable).")
@click.option("--json", "as_json", is_flag=True,
              help='A JSON list of {"task_id", "score", "description"}.')
def search(query: str, folder: Path, k: int, task_types: tuple[str, ...],
           as_json: bool) -> None:
    """Rank the documents of the SOP folder by how well they match QUERY (by meaning and by
    words; Chinese or English). The index is updated first if documents changed."""
    if not query.strip():
        fail("the query is empty", EXIT_USAGE)
    ix = _open(folder)
    with ix, _warnings_as_lines():
        hits = ix.search(query, k, task_types=task_types or None)
    if as_json:
        click.echo(json.dumps([h.to_json() for h in hits], ensure_ascii=False))
        return
    for hit in hits:
        click.echo(f"{hit.score:6.2f}  {hit.task_id}  {hit.description}")
