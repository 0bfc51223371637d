"""``tce set-default ITEM AGENT``: make AGENT answer the file's messages by default."""

from __future__ import annotations

import click

from jupyter_percent_agent.cli._common import (
    EXIT_AGENT,
    EXIT_FILE,
    EXIT_TRUST,
    fail,
    read_or_fail,
    resolve_item,
)


@click.command("set-default")
@click.argument("item")
@click.argument("agent")
def set_default(item: str, agent: str) -> None:
    """Set ITEM's default_agent to AGENT (one of the agents it defines, or "default")."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime import store
    from jupyter_percent_agent.runtime.agents import (
        DEFAULT_AGENT_NAME,
        AgentError,
        known_agents,
        unknown_agent_error,
    )

    path = resolve_item(item)
    read_or_fail(path)
    try:
        with store.locked(path):
            nb = store.read(path)
            agents = known_agents(nb)
            if agent not in agents and agent != DEFAULT_AGENT_NAME:
                fail(str(unknown_agent_error(agent, agents)), EXIT_AGENT)
            fmt.set_front_matter(nb, "default_agent", agent)
            fmt.write(nb, path)
    except AgentError as exc:
        fail(str(exc), EXIT_AGENT)
    except fmt.RefusedFile as exc:
        fail(str(exc), EXIT_TRUST)
    except fmt.FormatError as exc:
        fail(f"{path}: {exc}", EXIT_FILE)
    click.echo(f"{path}: default agent is now {agent}")
