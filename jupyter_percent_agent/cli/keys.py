"""``tce keys``: the API keys kept in the user's config directory (``trust.keys``).

Each reads or writes one small file and never imports litellm: ``tce keys set`` checks the
provider's name against litellm's list, read from its installed files. No command prints a key.
"""

from __future__ import annotations

import sys

import click

from jupyter_percent_agent.cli._common import EXIT_USAGE, fail, fail_for
from jupyter_percent_agent.errors import PercentAgentError


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
        if sys.stdin.isatty():
            import getpass

            key = getpass.getpass(f"Key for {name} (hidden): ")
        else:
            key = sys.stdin.read(1 << 16)
        path = trust.set_key(name, key)
    except (PercentAgentError, OSError) as exc:
        fail_for(exc)
    except KeyboardInterrupt:
        fail("nothing stored", EXIT_USAGE)
    click.echo(f"stored the key for {name} in {path}")


@keys.command("list")
def list_() -> None:
    """Name the providers that have a key, and where each comes from (never the key)."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.litellm_setup import provider_names

    try:
        sources = trust.key_sources(known=provider_names())
    except PercentAgentError as exc:
        fail_for(exc)
    if not sources:
        click.echo("no keys: run tce keys set PROVIDER (or set PROVIDER_API_KEY)")
    for provider, source in sources.items():
        click.echo(f"{provider}: {source}")


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
