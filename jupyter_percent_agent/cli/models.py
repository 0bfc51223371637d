"""``tce models``: the models you can reach, and the one used by default.

``tce models`` lists the chat models litellm knows for the providers with a key (from the
cost map litellm ships, without importing litellm), and asks the user's own server
(``PERCENT_AGENT_API_BASE``, else the one ``tce keys server`` stored) what it serves at
``/models`` (``runtime.server_models``), with the key that belongs to that server and no
other. ``tce models default`` reads and writes the user's config only.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from jupyter_percent_agent.cli._common import EXIT_MODEL, EXIT_USAGE, fail, fail_for
from jupyter_percent_agent.errors import PercentAgentError

if TYPE_CHECKING:
    from jupyter_percent_agent import trust as trust_types


@click.group("models", invoke_without_command=True)
@click.pass_context
def models(ctx: click.Context) -> None:
    """List the models you can reach: those litellm knows for the providers with a key, and
    those your own server (tce keys server, or PERCENT_AGENT_API_BASE) reports."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_)


@models.command("list")
def list_() -> None:
    """List the models you can reach (the default: tce models)."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.litellm_setup import provider_names

    try:
        providers = trust.key_sources(known=provider_names())
    except PercentAgentError as exc:
        fail_for(exc)
    from jupyter_percent_agent.litellm_setup import chat_models

    for provider in providers:
        for model in chat_models(provider):
            click.echo(f"{model}  ({provider})")
    from jupyter_percent_agent.runtime.server_models import server_models

    problem = None
    try:
        route = trust.route_for(None, folder=None, agent="default")
    except PercentAgentError as exc:
        fail_for(exc)
    if route.api_base:
        where = trust.public_url(route.api_base)
        try:
            for model in server_models(route.api_base, route.api_key):
                click.echo(f"{model}  ({where})")
        except PercentAgentError as exc:  # it does not answer, or not with a model list
            problem = f"cannot list the models at {where} ({_named(route)}): {exc}"
    if not providers and not route.api_base:
        click.echo("no provider has a key: run tce keys set PROVIDER, or tce keys server URL "
                   "for your own server (Ollama, vLLM, a LiteLLM proxy)")
    click.echo(f"default: {_default()}")
    if problem:
        fail(problem, EXIT_MODEL)


def _named(route: trust_types.Route) -> str:
    """Where the user's server was set, for a line about it."""
    return ("PERCENT_AGENT_API_BASE" if route.source == "environment"
            else "your server: tce keys server")


def _default() -> str:
    from jupyter_percent_agent.runtime.agents import default_model

    if os.environ.get("PERCENT_AGENT_MODEL"):
        return f"{os.environ['PERCENT_AGENT_MODEL']} (PERCENT_AGENT_MODEL)"
    return default_model()


@models.command("default")
@click.argument("model", required=False)
@click.option("--clear", is_flag=True, help="Forget your default (back to the built-in one).")
def default(model: str | None, clear: bool) -> None:
    """Show, or set to MODEL, the model used when neither a file nor PERCENT_AGENT_MODEL
    names one."""
    from dataclasses import replace

    from jupyter_percent_agent import trust

    if model is None and not clear:
        click.echo(_default())
        return
    if model is not None and (not model.strip() or any(c.isspace() for c in model.strip())):
        fail(f"{model!r} is not a model name", EXIT_USAGE)
    try:
        config = trust.load_config()
        trust.save_config(replace(config, default_model=None if clear else model.strip()))
    except (PercentAgentError, OSError) as exc:
        fail_for(exc)
    click.echo(f"default model: {_default()}")
