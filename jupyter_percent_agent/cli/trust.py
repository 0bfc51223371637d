"""``tce trust`` and ``tce untrust``: the folders (and model endpoints) the user trusts.

Kept in the user's config directory (``trust.config_path()``), never in a project.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from jupyter_percent_agent.cli._common import EXIT_USAGE, fail, fail_for
from jupyter_percent_agent.errors import PercentAgentError


@click.command("trust")
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option("--list", "list_", is_flag=True, help="List trusted folders and endpoints.")
@click.option("--endpoint", metavar="URL",
              help="Allow files to send conversations to this api_base.")
@click.option("--key-env", metavar="VAR",
              help="With --endpoint: the environment variable whose key goes to it.")
def trust_(folder: str | None, list_: bool, endpoint: str | None, key_env: str | None) -> None:
    """Trust FOLDER: files in it (and below, except in a clone with its own .git folder) may
    use its toolbox/ code, their own api_base and a higher max_steps. Trust only folders
    whose contents you would run yourself."""
    from jupyter_percent_agent import trust

    if key_env is not None and not endpoint:
        fail("--key-env needs --endpoint", EXIT_USAGE)
    if key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env):
        fail("--key-env takes the name of an environment variable (letters, digits and _, "
             "not starting with a digit), not a key: nothing stored", EXIT_USAGE)
    try:
        if endpoint:
            _allow_endpoint(endpoint, key_env)
        if folder:
            real = trust.trust_folder(folder)
            click.echo(f"trusted: {real}")
            _show_untrusted_clones(real, "  ")
            if _holds_home(real):
                click.echo(f"warning: {real} holds your home folder, so every folder below it "
                           "is trusted too, including what you download or unpack there "
                           "later (a clone, with its own .git folder, asks for its own trust); "
                           "trust your project folders instead (tce untrust to undo)", err=True)
        if list_ or not (folder or endpoint):
            _list()
    except (PercentAgentError, OSError) as exc:
        fail_for(exc)


SHOWN_CLONES = 50
"""The most nested clones ``tce trust`` names under one folder (the rest are counted)."""


def _show_untrusted_clones(folder: Path, indent: str) -> None:
    """Name the clones below the trusted ``folder`` that stay untrusted (their own ``.git``
    folder: someone else's code), each with the command that would trust it."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.trust.folders import SCAN_LIMIT

    clones, complete = trust.nested_clones(folder)
    if not clones and complete:
        return
    if clones:
        click.echo(f"{indent}not trusted below it, clones with their own .git folder "
                   "(to trust one: tce trust FOLDER):")
    for clone in clones[:SHOWN_CLONES]:
        click.echo(f"{indent}  {clone}")
    if len(clones) > SHOWN_CLONES:
        click.echo(f"{indent}  ... and {len(clones) - SHOWN_CLONES} more")
    if not complete:
        click.echo(f"{indent}(looked at the first {SCAN_LIMIT} folders below "
                   "it only: clones further down are not trusted either)")


def _holds_home(folder: Path) -> bool:
    """Whether ``folder`` is the user's home folder or one above it (``/`` included)."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    return folder == home or folder in home.parents


def _allow_endpoint(url: str, key_env: str | None) -> None:
    from dataclasses import replace
    from urllib.parse import urlsplit

    from jupyter_percent_agent import trust

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        fail(f"{url!r} is not an http(s) URL", EXIT_USAGE)
    config = trust.load_config()
    kept = tuple(e for e in config.endpoints if e.api_base.rstrip("/") != url.rstrip("/"))
    trust.save_config(replace(config, endpoints=(*kept, trust.Endpoint(url, key_env))))
    click.echo(f"allowed endpoint: {url}" + (f" (key from ${key_env})" if key_env else
                                              " (no key is sent)"))


def _list() -> None:
    from jupyter_percent_agent import trust

    config = trust.load_config()
    click.echo(f"config: {trust.config_path()}")
    click.echo("trusted folders:" + ("" if config.trusted else " none"))
    for folder in config.trusted:
        click.echo(f"  {folder}")
        if os.path.isdir(folder):
            _show_untrusted_clones(Path(folder), "    ")
    click.echo("allowed endpoints:" + ("" if config.endpoints else " none"))
    for e in config.endpoints:
        click.echo(f"  {e.api_base}" + (f"  (key from ${e.key_env})" if e.key_env else ""))
    click.echo(f"max_steps: {config.max_steps}")


@click.command("untrust")
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option("--endpoint", metavar="URL", help="Remove this api_base from the allow-list.")
def untrust(folder: str | None, endpoint: str | None) -> None:
    """Stop trusting FOLDER (or an allowed --endpoint)."""
    from dataclasses import replace

    from jupyter_percent_agent import trust

    if not (folder or endpoint):
        fail("name a FOLDER or an --endpoint", EXIT_USAGE)
    try:
        if endpoint:
            config = trust.load_config()
            kept = tuple(e for e in config.endpoints
                         if e.api_base.rstrip("/") != endpoint.rstrip("/"))
            trust.save_config(replace(config, endpoints=kept))
            click.echo(f"removed endpoint: {endpoint}" if len(kept) < len(config.endpoints)
                       else f"not on the allow-list: {endpoint}")
        if folder:
            if trust.untrust_folder(folder):
                click.echo(f"no longer trusted: {folder}")
            else:
                click.echo(f"not trusted (itself): {folder}")
    except (PercentAgentError, OSError) as exc:
        fail_for(exc)
