"""``tce helper``: list and stop the warm helpers (``runtime.helper``).

A helper keeps litellm imported for the model calls of one interpreter and key-relevant
environment; they are bounded (``PERCENT_AGENT_WARM_MAX``, an idle exit), and these commands
show what runs and stop it.
"""

from __future__ import annotations

import json
import time

import click


@click.group("helper")
def helper() -> None:
    """The warm helpers that keep the model client loaded for tce and the kernels."""


def _age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


@helper.command("status")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per helper.")
def status(as_json: bool) -> None:
    """List the running helpers: pid, memory, busy or idle (and for how long), interpreter."""
    from jupyter_percent_agent.runtime import helper as warm

    found = warm.running()
    if as_json:
        for info in found:
            click.echo(json.dumps(info))
        return
    if not found:
        click.echo("no warm helper runs")
        return
    now = time.time()
    for info in found:
        rss = info.get("rss")
        memory = f"{rss / 2**20:.0f} MB" if rss else "? MB"
        state = (
            f"busy ({info['active']} calls)"
            if info.get("active")
            else f"idle {_age(now - info['last_used'])} (exits after {_age(info['idle_limit'])})"
        )
        click.echo(
            f"pid {info['pid']}  {memory}  {state}  started {_age(now - info['started'])}"
            f" ago  {info['interpreter']}"
        )
    click.echo(f"{len(found)} of at most {warm.limit()} (PERCENT_AGENT_WARM_MAX)")


@helper.command("stop")
def stop() -> None:
    """Stop every warm helper (a call under way finishes first); the next call starts one."""
    from jupyter_percent_agent.runtime import helper as warm

    n = warm.stop_all()
    click.echo(f"stopped {n} warm helper{'s' if n != 1 else ''}")
