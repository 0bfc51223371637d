"""External agents over the Agent Client Protocol (ACP): Claude Code, Codex, Gemini CLI, Goose,
OpenCode, fast-agent... as agents of a message file. One job: be an ACP client for one
conversation's session.

- ``config``: the agents the user added (``tce acp add``), in ``acp.json`` in their config
  folder (0600); a file names one by name only (``agents: {coder: {acp: NAME}}``), never a
  command. Standard library only.
- ``process``: the user's command started in the conversation's folder (a process group of
  its own) and ended; standard library only, so a turn starts the agent before importing the
  SDK and the two start-ups overlap.
- ``session``: :class:`AcpSession` starts the user's command (``process``), ended with the
  session, initialises it advertising file read,
  file write and terminals, makes a session or loads a recorded one, prompts, cancels.
- ``client``: what the agent asks of the client: permissions (the person through a front
  end's :data:`PermissionAsker`, else the user's ``--permissions`` setting, else rejected),
  file reads and writes and terminals confined to the folder (``confine``).
- ``events``: what a turn tells its caller, typed (``MessageChunk``, ``ThoughtChunk``,
  ``AgentToolCall``, ``PlanUpdate``, ``ContextUsage``, ``ClientAction``,
  ``PermissionAnswered``),
  and the results (``AgentInfo``, ``PromptResult``).

::

    from jupyter_percent_agent import acp

    spec = acp.find_agent("coder")
    async with acp.AcpSession(spec, folder, on_event=tell, asker=None,
                              protected=(path,)) as session:
        loaded = await session.open(recorded_session_id)
        result = await session.prompt(text)

The Agent kernel keeps one agent per open conversation: pass an :class:`AcpSessions` as
``RunOptions.acp_sessions`` and close it with the conversation.

It sits beside the runtime's own agents: the runtime (``runtime/acp_turn.py``) turns its
events into a reply; front ends reach it through the runtime (``tce acp`` reads the config
and probes agents itself). Importing this package is cheap: the SDK (``acp``, with pydantic)
is imported when a session starts.
"""

from __future__ import annotations

from jupyter_percent_agent.lazy import lazy_getattr

_NAMES = {
    "PERMISSIONS": "config", "AcpAgentSpec": "config", "AcpConfigError": "config",
    "add_agent": "config", "agents_path": "config", "check_name": "config",
    "find_agent": "config", "load_agents": "config", "remove_agent": "config",
    "spec_from_json": "config",
    "AcpEvent": "events", "AgentInfo": "events", "ClientAction": "events",
    "ContextUsage": "events", "FileDiff": "events", "MessageChunk": "events",
    "OnAcpEvent": "events", "PermissionAnswered": "events", "PermissionOption": "events",
    "PermissionRequest": "events", "PlanEntry": "events", "PlanUpdate": "events",
    "PromptResult": "events", "ThoughtChunk": "events", "TokenUsage": "events",
    "AgentToolCall": "events",
    "PermissionAsker": "client",
    "AcpAgentError": "process", "AcpSession": "session", "AcpSessions": "session",
    "probe": "session",
    "end_process": "process", "start_process": "process",
}

__all__ = sorted(_NAMES)

__getattr__ = lazy_getattr(__name__, _NAMES)
