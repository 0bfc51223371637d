"""An external agent's process: started in the conversation's folder (a process group of its
own), ended with everything it started. Standard library only, so that ``tce`` can start the
agent before it imports the SDK (``acp``, whose pydantic models take a quarter of a second of
processor or more to build): the agent's own start-up then runs beside that import instead of
after it. Only a turn the plan allowed (the user's agent, a trusted folder) gets here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from jupyter_percent_agent.acp.config import AcpAgentSpec
from jupyter_percent_agent.errors import Kind, PercentAgentError

STOP_SECONDS = 2.0
"""How long an agent may take to exit once its input is closed, before it is ended."""

LINE_LIMIT = 50 * 1024 * 1024  # one JSON-RPC message (the SDK's own default)


class AcpAgentError(PercentAgentError, RuntimeError):
    """An external agent that did not start, stopped, wrote something that is not JSON-RPC,
    or answered a request with an error; one line naming the agent and what happened."""

    error_kind = Kind.MODEL


def agent_error(spec: AcpAgentSpec, what: str) -> AcpAgentError:
    """The one line for what went wrong with the agent ``spec``."""
    return AcpAgentError(f"ACP agent {spec.name!r} ({spec.target}): {what}")


def environment(extra: dict[str, str]) -> dict[str, str]:
    """The environment an agent starts with: the user's, with the agent's own ``--env``."""
    return {**os.environ, **extra}


async def start_process(spec: AcpAgentSpec, root: str) -> asyncio.subprocess.Process:
    """The user's command for ``spec`` started in the folder ``root`` (its real path), its
    stdio piped; ``AcpAgentError`` when it cannot start."""
    try:
        return await asyncio.create_subprocess_exec(
            spec.command, *spec.args, cwd=root, env=environment(spec.env),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True, limit=LINE_LIMIT)
    except OSError as exc:
        raise agent_error(spec, f"cannot start: {exc.strerror or exc}") from None


async def end_process(process: asyncio.subprocess.Process) -> None:
    """End the agent: its input closed, then its process group (terminated, then killed)
    once it has had :data:`STOP_SECONDS`, then whatever it started and left behind."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    for sig in (None, signal.SIGTERM, signal.SIGKILL):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), STOP_SECONDS)
            break
        except TimeoutError:
            continue
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
