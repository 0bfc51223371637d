"""``tce keys``: the API keys kept in the user's config directory (``trust.keys``), and the
user's own model server with its key (``tce keys server``, ``trust.server``).

Each reads or writes one small file and never imports litellm: ``tce keys set`` checks the
provider's name against litellm's list, read from its installed files. No command prints a key.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from jupyter_percent_agent.cli._common import EXIT_USAGE, fail, fail_for
from jupyter_percent_agent.errors import PercentAgentError

if TYPE_CHECKING:
    from jupyter_percent_agent import trust as trust_types


@click.group("keys")
def keys() -> None:
    """API keys for model providers, kept in your config directory (never in a project).
    A key in the environment (OPENAI_API_KEY...) wins over a stored one."""


@keys.command("set")
@click.argument("provider")
def set_(provider: str) -> None:
    """Store the key for PROVIDER (openai, anthropic, groq...), read from a hidden prompt, or
    from standard input when it is not a terminal."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.litellm_setup import provider_names

    try:
        name = trust.keys.check_provider(provider)
        if name not in provider_names():
            raise trust.KeysError(f"litellm knows no provider {provider!r}: nothing stored "
                                  "(tce models lists what you can reach)")
        key = _read_key(f"Key for {name} (hidden): ")
        path = trust.set_key(name, key)
    except (PercentAgentError, OSError) as exc:
        fail_for(exc)
    except KeyboardInterrupt:
        fail("nothing stored", EXIT_USAGE)
    click.echo(f"stored the key for {name} in {path}")


@keys.command("list")
def list_() -> None:
    """Name the providers that have a key, and where each comes from (never the key); and
    your own server, if you set one."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.litellm_setup import provider_names

    try:
        sources = trust.key_sources(known=provider_names())
        server = trust.user_server()
    except PercentAgentError as exc:
        fail_for(exc)
    if not sources and server is None:
        click.echo("no keys: run tce keys set PROVIDER (or set PROVIDER_API_KEY), or tce keys "
                   "server URL for your own server")
    for provider, source in sources.items():
        click.echo(f"{provider}: {source}")
    if server is not None:
        click.echo(_server_line(server))


def _server_line(server: trust_types.UserServer) -> str:
    from jupyter_percent_agent import trust

    where = ("PERCENT_AGENT_API_BASE" if server.source == "environment"
             else f"config ({trust.config_path()})")
    key = (f"key from {server.key_env}" if server.source == "environment" and server.key_env
           else f"key in {trust.keys_path()}" if server.api_key else "no key")
    return f"your server: {trust.public_url(server.api_base)} ({where}; {key})"


@keys.command("server")
@click.argument("url", required=False)
@click.option("--model", "-m", "model", help="Make MODEL (as the server names it, or "
              "openai/MODEL) your default model.")
@click.option("--no-key", is_flag=True, help="The server takes no key: ask for none.")
@click.option("--remove", is_flag=True, help="Forget your server and its key.")
def server(url: str | None, model: str | None, no_key: bool, remove: bool) -> None:
    """Use your own OpenAI-compatible server (Ollama, vLLM, a LiteLLM proxy) at URL (e.g.
    http://localhost:11434/v1) for every model no file sends elsewhere. Its key (hidden
    prompt, or standard input when it is not a terminal; empty: none) is stored with your
    keys, tied to exactly that URL, and goes to no other. The server must answer with its
    model list. PERCENT_AGENT_API_BASE, when set, wins. Without URL: show it."""
    from jupyter_percent_agent import trust

    if remove:
        try:
            gone = trust.remove_server()
        except (PercentAgentError, OSError) as exc:
            fail_for(exc)
        if gone is None:
            fail("no server stored", EXIT_USAGE)
        click.echo(f"forgot your server {trust.public_url(gone)} and its key")
        return
    if url is None:
        try:
            found = trust.user_server()
        except PercentAgentError as exc:
            fail_for(exc)
        click.echo(_server_line(found) if found else "no server: run tce keys server URL")
        return
    from jupyter_percent_agent.runtime.server_models import connect_server

    try:
        shown = trust.public_url(trust.check_server_url(url))
        key = "" if no_key else _read_key(f"Key for {shown} (hidden; empty: none): ")
        stored, models, warning = connect_server(url, key, default_model=model)
    except (PercentAgentError, OSError) as exc:
        fail_for(exc)
    except KeyboardInterrupt:
        fail("nothing stored", EXIT_USAGE)
    if warning:
        click.echo(f"tce: {warning}", err=True)
    click.echo(f"your server: {trust.public_url(stored)} ({len(models)} models: tce models "
               "lists them)")
    if model:
        click.echo(f"default model: {model.strip()}")


def _read_key(prompt: str) -> str:
    """A key from a hidden prompt, or from standard input when it is not a terminal."""
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(prompt)
    return sys.stdin.read(1 << 16)


@keys.command("remove")
@click.argument("provider")
def remove(provider: str) -> None:
    """Forget the stored key for PROVIDER (a key in the environment stays)."""
    from jupyter_percent_agent import trust

    try:
        removed = trust.remove_key(provider)
    except (PercentAgentError, OSError) as exc:
        fail_for(exc)
    if not removed:
        fail(f"no stored key for {provider}", EXIT_USAGE)
    click.echo(f"removed the stored key for {provider}")
