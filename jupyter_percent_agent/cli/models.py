"""``tce models``: the models you can reach, and the one used by default.

``tce models`` lists the chat models litellm knows for the providers with a key (from the
cost map litellm ships, without importing litellm), and asks the user's own server
(``PERCENT_AGENT_API_BASE``) what it serves at ``/models``, with the key that belongs to that
server and no other. ``tce models default`` reads and writes the user's config only.
"""

from __future__ import annotations

import os

import click

from jupyter_percent_agent.cli._common import EXIT_MODEL, EXIT_USAGE, fail, fail_for
from jupyter_percent_agent.errors import PercentAgentError


@click.group("models", invoke_without_command=True)
@click.pass_context
def models(ctx: click.Context) -> None:
    """List the models you can reach: those litellm knows for the providers with a key, and
    those your own server (PERCENT_AGENT_API_BASE) reports."""
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
    problem = None
    route = trust.route_for(None, folder=None, agent="default")
    if route.api_base:
        try:
            for model in server_models(route.api_base, route.api_key):
                click.echo(f"{model}  ({trust.public_url(route.api_base)})")
        except (OSError, ValueError) as exc:
            problem = (f"cannot list the models at {trust.public_url(route.api_base)} "
                       f"(PERCENT_AGENT_API_BASE): {exc}")
    if not providers and not route.api_base:
        click.echo("no provider has a key: run tce keys set PROVIDER, or point "
                   "PERCENT_AGENT_API_BASE at your own server (Ollama, vLLM, a LiteLLM proxy)")
    click.echo(f"default: {_default()}")
    if problem:
        fail(problem, EXIT_MODEL)


def server_models(api_base: str, api_key: str | None, timeout: float = 10.0) -> list[str]:
    """The model ids an OpenAI-compatible server reports at ``/models``. ``api_key`` goes to
    that server only (``trust.route_for`` chose it)."""
    import json
    import urllib.error
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        """A redirect is not followed: urllib would carry the key to wherever it points."""

        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    request = urllib.request.Request(api_base.rstrip("/") + "/models")
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=timeout) as response:
            body = json.loads(response.read(1 << 22))
    except urllib.error.HTTPError as exc:
        raise ValueError(f"HTTP {exc.code}") from None
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ValueError("the answer is not a model list")
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]


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
