"""``tce set-default ITEM AGENT``: make AGENT answer the file's messages by default."""

from __future__ import annotations

import click

from jupyter_percent_agent.cli._common import fail_for, read_or_fail, resolve_item
from jupyter_percent_agent.errors import PercentAgentError


@click.command("set-default")
@click.argument("item")
@click.argument("agent")
def set_default(item: str, agent: str) -> None:
    """Set ITEM's default_agent to AGENT (one of the agents it defines, or "default")."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime import store
    from jupyter_percent_agent.runtime.agents import (
        DEFAULT_AGENT_NAME,
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
                raise unknown_agent_error(agent, agents)
            fmt.set_front_matter(nb, "default_agent", agent)
            fmt.write(nb, path)
    except (PercentAgentError, OSError) as exc:
        fail_for(exc, path=path)
    click.echo(f"{path}: default agent is now {agent}")
