"""`tce acp`: the user's external agents over ACP (add, list, remove), and the terminal's
answer to their permission requests.

The agents are kept in the user's config folder (``acp.json``, 0600), never in a project; a
message file names one by name (``agents: {coder: {acp: NAME}}``). ``tce acp list`` starts
each to ask what it is (and ends it), naming any that could not start and why; it exits 0.
Exit codes are those of every command: 2 bad usage (a bad name, a name taken, no command).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import click

from jupyter_percent_agent.cli._common import EXIT_USAGE, fail, fail_for
from jupyter_percent_agent.cli._terminal import confirm_text
from jupyter_percent_agent.errors import PercentAgentError


@click.group()
def acp() -> None:
    """Your external agents over ACP (Claude Code, Codex, Gemini CLI...): {acp: NAME}."""


@acp.command("add", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--env", "envs", multiple=True, metavar="KEY=VALUE",
              help="An environment variable for the agent (repeatable).")
@click.option("--permissions", type=click.Choice(["ask", "allow", "reject"]), default="ask",
              show_default=True,
              help="Its permission requests: ask you (rejected when nobody can answer: tce "
              "exec, no terminal), or allow / reject them without asking.")
@click.option("--replace", is_flag=True, help="Change an agent of that name.")
def add(name: str, command: tuple[str, ...], envs: tuple[str, ...], permissions: str,
        replace: bool) -> None:
    """Add agent NAME: `tce acp add NAME [--env K=V]... -- COMMAND [ARGS...]`.

    It runs with your rights in the folder of the conversation that names it, only when you
    trusted that folder (tce trust)."""
    from jupyter_percent_agent import acp as acp_pkg

    env = {}
    for value in envs:
        key, found, rest = value.partition("=")
        if not found or not key.strip():
            fail(f"--env {value!r} is not KEY=VALUE", EXIT_USAGE)
        env[key.strip()] = rest
    try:
        spec = acp_pkg.AcpAgentSpec(acp_pkg.check_name(name), command[0], tuple(command[1:]),
                                    env, permissions)
        path = acp_pkg.add_agent(spec, replace=replace)
    except PercentAgentError as exc:
        fail_for(exc)
    click.echo(f"added ACP agent {name!r} ({spec.described}) to {path}")


@acp.command("list")
def list_() -> None:
    """Each agent: name, command, and what it says it is (name, version, whether it can load
    a session, its capabilities), or why it could not start."""
    import json

    from jupyter_percent_agent import acp as acp_pkg

    try:
        agents = acp_pkg.load_agents()
    except PercentAgentError as exc:
        fail_for(exc)
    if not agents:
        click.echo(f"# no ACP agents (add one: tce acp add NAME -- COMMAND); "
                   f"{acp_pkg.agents_path()}")
        return
    for spec in agents.values():
        try:
            info = asyncio.run(acp_pkg.probe(spec))
        except (PercentAgentError, OSError) as exc:
            said = f"could not start: {exc}"
        else:
            caps = json.dumps(info.capabilities, separators=(",", ":"), sort_keys=True)
            said = "\t".join([info.described, "load_session" if info.load_session
                              else "no load_session", caps])
        click.echo("\t".join([spec.name, spec.target, f"permissions={spec.permissions}",
                              said]))


@acp.command("remove")
@click.argument("name")
def remove(name: str) -> None:
    """Forget agent NAME."""
    from jupyter_percent_agent import acp as acp_pkg

    try:
        removed = acp_pkg.remove_agent(name)
    except PercentAgentError as exc:
        fail_for(exc)
    if not removed:
        fail(f"no ACP agent named {name!r} (tce acp list shows them)", EXIT_USAGE)
    click.echo(f"removed ACP agent {name!r}")


# -- the person at the terminal ------------------------------------------------------------

def person_at_terminal() -> bool:
    """Whether someone can answer a question (standard input and error are a terminal)."""
    try:
        return sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _read_line(loop: asyncio.AbstractEventLoop, future: asyncio.Future[str]) -> None:
    try:
        line = sys.stdin.readline()
    except (OSError, ValueError):
        line = ""
    loop.call_soon_threadsafe(lambda: future.done() or future.set_result(line))


def person_asker(*, quiet: bool = False) -> Any:
    """Who answers an external agent's permission requests in a command: the person at the
    terminal (:func:`terminal_asker`) when there is one and the output is not for a program
    (``quiet``: ``--json``); else None, and the requests are rejected unless the user's own
    ``tce acp add --permissions`` says otherwise."""
    return terminal_asker if person_at_terminal() and not quiet else None


async def terminal_asker(request: Any) -> Any:
    """Ask the person at the terminal (``acp.PermissionAsker``): the tool's title, kind,
    locations, its command or diff, and the agent's options by number; an empty answer,
    end of input or a number not offered rejects. The line is read in a thread of its own
    (a daemon: Ctrl-C meanwhile interrupts the turn and leaves nothing waiting)."""
    call = request.tool_call
    lines = [f"\n[permission] {call.title or 'a tool call'} ({call.kind})"]
    lines += [f"  {loc}" for loc in call.locations]
    if call.raw_input is not None:
        lines.append(f"  {call.raw_input}")
    for diff in call.diffs:
        lines.append(diff.unified().rstrip("\n"))
    choices = "  ".join(f"{n}) {opt.name}" for n, opt in enumerate(request.options, 1))
    lines.append(f"{choices}\nchoose 1-{len(request.options)} (Enter rejects): ")
    sys.stderr.write(confirm_text("\n".join(lines)))
    sys.stderr.flush()
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    threading.Thread(target=_read_line, args=(loop, future), daemon=True).start()
    answer = (await future).strip()
    if answer.isdigit() and 1 <= int(answer) <= len(request.options):
        return request.options[int(answer) - 1]
    return None
