"""`tce mcp`: the user's MCP servers (add, list, remove, import) and `tce mcp serve`.

The servers are kept in the user's config directory (``mcp.json``, the ``mcpServers`` shape
other clients use), never in a project. An agent selects them by name (``tools: [clock]``);
``tce tools list -m NAME`` lists one's tools. Exit codes are those of every command: 2 bad
usage (a bad name, a name taken, a file that is not an ``mcpServers`` JSON), 4 a server that
did not start (``tce mcp list`` shows it as unreachable instead).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import click

from jupyter_percent_agent.cli._common import EXIT_USAGE, ask, fail, fail_for
from jupyter_percent_agent.cli._terminal import confirm_text
from jupyter_percent_agent.errors import PercentAgentError


@click.group()
def mcp() -> None:
    """Your MCP servers: their tools in agents' ATTP code (tools: [NAME])."""


def _pairs(values: tuple[str, ...], what: str, sep: str) -> dict[str, str]:
    out = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key.strip():
            fail(f"{what} {value!r} is not KEY{sep}VALUE", EXIT_USAGE)
        out[key.strip()] = rest.strip() if sep == ":" else rest
    return out


@mcp.command("add", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--url", default=None, help="A streamable HTTP server's URL (instead of a command).")
@click.option(
    "--env",
    "envs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An environment variable for a stdio server (repeatable).",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="An HTTP header for a URL server (repeatable).",
)
@click.option("--timeout", type=float, default=None, help="Seconds one call may take.")
@click.option("--replace", is_flag=True, help="Change a server of that name.")
@click.option(
    "--untrusted-ok",
    is_flag=True,
    help="Let files in folders you did not trust use it too (default: trusted folders only). "
    "Alone, marks an existing server.",
)
def add(
    name: str,
    command: tuple[str, ...],
    url: str | None,
    envs: tuple[str, ...],
    headers: tuple[str, ...],
    timeout: float | None,
    replace: bool,
    untrusted_ok: bool,
) -> None:
    """Add server NAME: `tce mcp add NAME -- COMMAND [ARGS...]` or `--url URL`.

    A server acts with your rights on whatever path the model names, so files in folders you
    did not trust (tce trust) may use it only when added with --untrusted-ok;
    `tce mcp add NAME --untrusted-ok` marks an existing one."""
    from jupyter_percent_agent import mcptools

    if untrusted_ok and not url and not command and not (envs or headers or timeout):
        try:
            marked = mcptools.mark_untrusted_ok(name)
        except PercentAgentError as exc:
            fail_for(exc)
        if marked is None:
            fail(f"no MCP server named {name!r} to mark: give its command (after --) or --url",
                 EXIT_USAGE)
        click.echo(f"MCP server {name!r} ({marked.transport}: {marked.target}) may now be used "
                   "by files in untrusted folders too")
        return
    if bool(url) == bool(command):
        fail("give either a command (after --) or --url", EXIT_USAGE)
    if url and envs:
        fail("--env is for a command; a URL server takes --header", EXIT_USAGE)
    if command and headers:
        fail("--header is for a URL server; a command takes --env", EXIT_USAGE)
    entry: dict[str, Any] = (
        {"url": url, "headers": _pairs(headers, "header", ":")}
        if url
        else {"command": command[0], "args": list(command[1:]), "env": _pairs(envs, "--env", "=")}
    )
    if timeout is not None:
        entry["timeout"] = timeout
    if untrusted_ok:
        entry[mcptools.UNTRUSTED_OK_KEY] = True
    try:
        spec = mcptools.spec_from_json(name, entry)
        path = mcptools.add_server(spec, replace=replace)
    except PercentAgentError as exc:
        fail_for(exc)
    where = "any folder" if spec.untrusted_ok else "trusted folders only"
    click.echo(f"added MCP server {name!r} ({spec.transport}: {spec.target}; {where}) to {path}")


@mcp.command("list")
@click.option("--no-start", is_flag=True, help="Do not start the servers to count their tools.")
def list_(no_start: bool) -> None:
    """Each server: name, transport, command or URL, its tool count when reachable, and
    untrusted-ok when files in untrusted folders may use it."""
    from jupyter_percent_agent import mcptools

    try:
        servers = mcptools.load_servers()
    except PercentAgentError as exc:
        fail_for(exc)
    if not servers:
        click.echo(
            f"# no MCP servers (add one: tce mcp add NAME -- COMMAND); {mcptools.servers_path()}"
        )
        return
    for spec in servers.values():
        count = ""
        if not no_start:
            try:
                count = f"{len(mcptools.list_tools(spec))} tools"
            except PercentAgentError as exc:
                count = f"unreachable: {exc}"
        mark = "untrusted-ok" if spec.untrusted_ok else ""
        click.echo("\t".join(x for x in (spec.name, spec.transport, spec.target, count, mark)
                             if x))
    mcptools.stop_all()


@mcp.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Forget server NAME."""
    from jupyter_percent_agent import mcptools

    try:
        removed = mcptools.remove_server(name)
    except PercentAgentError as exc:
        fail_for(exc)
    if not removed:
        fail(f"no MCP server named {name!r} (tce mcp list shows them)", EXIT_USAGE)
    click.echo(f"removed MCP server {name!r}")


@mcp.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--yes", "-y", is_flag=True, help="Add every server without asking.")
@click.option("--replace", is_flag=True, help="Change servers of the same name.")
def import_(file: Path, yes: bool, replace: bool) -> None:
    """Add the servers of a Claude Desktop, Cursor or VS Code `mcpServers` JSON FILE.

    They are for trusted folders only, whatever FILE says (mark one: tce mcp add NAME
    --untrusted-ok)."""
    import dataclasses

    from jupyter_percent_agent import mcptools

    try:
        found = mcptools.servers_from_json(mcptools.read_json_file(file), str(file))
        existing = mcptools.load_servers()
    except PercentAgentError as exc:
        fail_for(exc)
    accepted: list[mcptools.ServerSpec] = []
    try:
        for spec in found.values():
            if spec.name in existing and not replace:
                click.echo(f"skipped {spec.name!r}: you have a server of that name (--replace)")
                continue
            if not yes:
                answer = ask(confirm_text(f"add {spec.name!r} ({spec.described})?"),
                             interrupted="interrupted: the servers added so far are kept")
                if answer is None:  # no more answers (< /dev/null, a short pipe): no to the rest
                    click.echo("no more answers on standard input: the others were not added "
                               "(--yes adds every server)")
                    break
                if not answer:
                    continue
            # a file from elsewhere does not decide where its servers may act
            accepted.append(dataclasses.replace(spec, untrusted_ok=False))
            click.echo(f"added {spec.name!r} ({spec.described})")
    finally:  # Ctrl-C at a question too: what was agreed to is written, in one write
        if accepted:
            mcptools.add_servers(accepted, replace=True)
    click.echo(f"{len(accepted)} of {len(found)} servers added to {mcptools.servers_path()}")


@mcp.command("serve")
@click.argument("dirs", nargs=-1, type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--http", "http", is_flag=True, help="Streamable HTTP on 127.0.0.1 (not stdio).")
@click.option("--port", type=int, default=8765, show_default=True, help="The HTTP port.")
@click.option(
    "--allow-origin",
    "origins",
    multiple=True,
    metavar="ORIGIN",
    help="A web page origin that may call the HTTP server (none by default).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default=None,
    help="Read the bearer token from this file (- : standard input) instead of "
    "PERCENT_AGENT_MCP_TOKEN or mcp-serve-token in your config folder; else a new one is printed.",
)
def serve(
    dirs: tuple[Path, ...],
    http: bool,
    port: int,
    origins: tuple[str, ...],
    token_file: Path | None,
) -> None:
    """Offer the message files and task documents under DIRS (default: .) to other agents
    over MCP: list, read and continue conversations, run task documents, search SOPs."""
    from jupyter_percent_agent import mcpserve

    folders = list(dirs) or [Path(".")]
    if token_file is not None and not http:
        fail("--token-file is for --http (a stdio server needs no token)", EXIT_USAGE)
    try:
        if not http:
            mcpserve.build_server(folders).run("stdio")
            return
        token, source = mcpserve.serve_token(token_file=token_file)
        app = mcpserve.http_app(folders, token, port, origins)
    except PercentAgentError as exc:
        fail_for(exc)
    import uvicorn

    # bound here, not by uvicorn: a port in use is tce's one line and the exit code of its
    # kind (uvicorn logs its own line and exits 3, the code of a malformed file)
    listening = _listening_socket(port)
    where = f"http://127.0.0.1:{port}/mcp"
    # A token the user gave is theirs already: not printed, so no log keeps it.
    told = f"bearer token: {token}" if source is None else f"bearer token from {source}"
    click.echo(f"tce mcp serve: {where}  {told}", err=True)
    # uvicorn.run would swallow the Ctrl-C its server raises again once it has stopped (exit
    # 0); tce's Ctrl-C is 130 and 'tce: interrupted', which the command group prints
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning"))
    server.run(sockets=[listening])


def _listening_socket(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:``port`` for the HTTP server; a port that cannot be bound
    (in use, not allowed) exits as the package's table says for the ``OSError``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        fail_for(exc, path=f"127.0.0.1:{port}")
    return sock
