"""`tce tools`: list the tools of a toolbox and call one from the shell.

Exit codes, those of every command (``jupyter_percent_agent.errors.TABLE``): 0 done, 2 bad
usage (bad JSON, unknown tool or module), 4 the tool raised or a tool module failed to load,
6 refused: ``./toolbox`` of a folder the user has not trusted (see docs/tools.md). Errors are
one line on stderr, starting ``tce:`` as in every other command, never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from jupyter_percent_agent.cli._common import EXIT_TOOLS, EXIT_TRUST, EXIT_USAGE, fail, fail_for
from jupyter_percent_agent.errors import PercentAgentError

_toolbox_option = click.option(
    "--toolbox",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of tool modules (default: ./toolbox if it exists and this folder is "
         "trusted).",
)
_module_option = click.option(
    "--module",
    "-m",
    "modules",
    multiple=True,
    help="Load only this tool module (repeatable).",
)
_entry_points_option = click.option(
    "--entry-points/--no-entry-points",
    default=True,
    show_default=True,
    help="Also load tool modules that installed packages declare.",
)


@click.group()
def tools() -> None:
    """List and call tools (Jarvis tool modules)."""


@tools.command("list")
@_toolbox_option
@_module_option
@_entry_points_option
@click.option("--names", is_flag=True, help="Print only the tool names, one a line.")
def list_tools(
    toolbox: Path | None, modules: tuple[str, ...], entry_points: bool, names: bool
) -> None:
    """Print each tool with its description, as the model sees it (-m NAME: a tool module,
    or one of your MCP servers)."""
    from jupyter_percent_agent.tools import render_tool

    registry = _load(toolbox, modules, entry_points)
    if names:
        for name in registry:
            click.echo(name)
        return
    if not registry:
        click.echo("# (no tools found)")
        return
    for tool in registry.values():
        source = tool.path or tool.module
        what = "MCP server" if source.startswith("mcp:") else "module"
        click.echo(f"# {tool.name}  ({what} {tool.module}: {source})")
        click.echo(render_tool(tool))


@tools.command("call")
@click.argument("name")
@click.option(
    "--args", "args_json", default="{}", show_default=True, help="Arguments, a JSON object."
)
@_toolbox_option
@_module_option
@_entry_points_option
def call_tool(
    name: str,
    args_json: str,
    toolbox: Path | None,
    modules: tuple[str, ...],
    entry_points: bool,
) -> None:
    """Call tool NAME and print its normalized result as JSON.

    Stream chunks go to stderr as they arrive (text as is, other values as JSON), so that
    stdout holds only the result.
    """
    try:
        args = json.loads(args_json)
    except json.JSONDecodeError as exc:
        _fail(f"--args is not valid JSON: {exc}", EXIT_USAGE)
    if not isinstance(args, dict):
        _fail(f"--args must be a JSON object, not {type(args).__name__}", EXIT_USAGE)
    registry = _load(toolbox, modules, entry_points)
    if name not in registry:
        known = ", ".join(registry) or "none"
        _fail(f"unknown tool {name!r} (known: {known})", EXIT_USAGE)
    try:
        result = registry[name].run(args, on_chunk=_print_chunk)
    except PercentAgentError as exc:  # bad arguments (usage), a result that is not JSON
        fail_for(exc)
    except Exception as exc:  # the tool's own code raised
        _fail(f"tool {name!r} raised {type(exc).__name__}: {exc}", EXIT_TOOLS)
    click.echo(json.dumps(result, ensure_ascii=False, indent=2))


def _load(toolbox: Path | None, modules: tuple[str, ...], entry_points: bool) -> Any:
    from jupyter_percent_agent.tools import Registry

    if toolbox is None and Path("toolbox").is_dir():
        # a cloned folder's code, found without being named: only where the user trusts it
        from jupyter_percent_agent import trust

        here = Path.cwd()
        if not trust.is_trusted(here):
            refusal = trust.refuse_toolbox(here, "tce tools")
            _fail(f"{refusal} (or name it: --toolbox toolbox)", EXIT_TRUST)
        toolbox = Path("toolbox")
    try:
        servers = _servers(modules)
        _check_names(toolbox, [m for m in modules if m not in servers], entry_points)
        if modules and len(servers) == len(set(modules)):
            registry = Registry()
        else:
            wanted = [m for m in modules if m not in servers] or None
            registry = Registry.load(toolbox, modules=wanted, entry_points=entry_points)
        if servers:
            from jupyter_percent_agent import mcptools

            registry = registry.merged(mcptools.server_tools(servers.values(), Path.cwd(),
                                                             taken=registry))
        return registry
    except PercentAgentError as exc:
        fail_for(exc)


def _check_names(toolbox: Path | None, wanted: list[str], entry_points: bool) -> None:
    """Refuse, in one line naming the tool modules and the user's MCP servers there are, a
    ``-m`` name that is neither."""
    if not wanted:
        return
    from jupyter_percent_agent import mcptools
    from jupyter_percent_agent.tools import Registry

    known = Registry.module_names(toolbox, entry_points=entry_points)
    unknown = [m for m in dict.fromkeys(wanted) if m not in known]
    if unknown:
        servers = sorted(mcptools.load_servers())
        _fail(f"no tool module or MCP server named {', '.join(map(repr, unknown))} "
              f"(tool modules: {', '.join(known) or 'none'}; "
              f"your MCP servers: {', '.join(servers) or 'none'})", EXIT_USAGE)


def _servers(modules: tuple[str, ...]) -> dict[str, Any]:
    """The user's MCP servers that ``-m`` names (a tool module of the same name is refused
    by the toolset when an agent selects both; here the server is meant)."""
    if not modules:
        return {}
    from jupyter_percent_agent import mcptools

    servers = mcptools.load_servers()
    return {m: servers[m] for m in dict.fromkeys(modules) if m in servers}


def _print_chunk(name: str, chunk: Any) -> None:
    text = chunk if isinstance(chunk, str) else json.dumps(chunk, ensure_ascii=False)
    click.echo(text, err=True)
    sys.stderr.flush()


def _fail(message: str, code: int) -> NoReturn:
    """One line on stderr, ``tce: ...`` like every other command, and exit with ``code``."""
    fail(" ".join(message.split()), code)
