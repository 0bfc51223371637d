"""``tce fork ITEM N [-o NEW]``: a new message file with the first N cells of ITEM (as
``tce list`` numbers them, outputs kept) and ``forked_from`` in its front matter, to try
another line of questioning without losing the first. ITEM is never written."""

from __future__ import annotations

from pathlib import Path

import click

from jupyter_percent_agent.cli._common import fail_for, read_or_fail, resolve_item
from jupyter_percent_agent.errors import PercentAgentError


@click.command("fork")
@click.argument("item")
@click.argument("n", type=int)
@click.option(
    "-o",
    "--output",
    "target",
    type=click.Path(path_type=Path),
    metavar="NEW",
    help="The new file (default: ITEM's name with .fork-1, .fork-2, ... beside it).",
)
def fork(item: str, n: int, target: Path | None) -> None:
    """Copy the first N cells of ITEM, with their outputs, into a new message file."""
    from jupyter_percent_agent.runtime.fork import fork as make_fork

    path = resolve_item(item)
    read_or_fail(path)  # a malformed file: one line naming it, before anything is written
    try:
        made = make_fork(path, n, target)
    except (PercentAgentError, OSError) as exc:
        fail_for(exc, path=path)
    click.echo(str(made))
