"""`tce`, the command line.

Each command lives in its own module and is imported only when it is run, so that
`tce list` never pays for litellm, nbformat or jupytext. Register a command by adding
it to ``COMMANDS`` as ``"name": "module:attribute"``.
"""

from __future__ import annotations

import importlib

import click

COMMANDS: dict[str, str] = {
    "acp": "jupyter_percent_agent.cli.acp:acp",
    "chat": "jupyter_percent_agent.cli.chat:chat",
    "exec": "jupyter_percent_agent.cli.exec:exec_",
    "fork": "jupyter_percent_agent.cli.fork:fork",
    "helper": "jupyter_percent_agent.cli.helper:helper",
    "keys": "jupyter_percent_agent.cli.keys:keys",
    "list": "jupyter_percent_agent.cli.list:list_",
    "mcp": "jupyter_percent_agent.cli.mcp:mcp",
    "models": "jupyter_percent_agent.cli.models:models",
    "run": "jupyter_percent_agent.cli.run:run",
    "set-default": "jupyter_percent_agent.cli.set_default:set_default",
    "sop": "jupyter_percent_agent.cli.sop:sop",
    "tools": "jupyter_percent_agent.cli.tools:tools",
    "trust": "jupyter_percent_agent.cli.trust:trust_",
    "untrust": "jupyter_percent_agent.cli.trust:untrust",
}


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def __init__(self, *args, lazy: dict[str, str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def invoke(self, ctx: click.Context) -> object:
        """Ctrl-C in a command that does not handle it is one line and exit 130, as in every
        other command (click would say "Aborted!" and exit 1, a failed model call's code)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            from jupyter_percent_agent.cli._common import EXIT_INTERRUPTED

            click.echo("\ntce: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self._lazy:
            module_name, attr = self._lazy[name].split(":")
            return getattr(importlib.import_module(module_name), attr)
        return super().get_command(ctx, name)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="jupyter-percent-agent")
def main() -> None:
    """Agent conversations kept as Markdown message files (.msg.md)."""
    from jupyter_percent_agent.masking import mask_terminal

    from ._terminal import guard_terminal

    mask_terminal()  # a key a tool returned or an error quoted never reaches the terminal
    guard_terminal()  # nor does a reply's escape sequence: it is shown, not obeyed
