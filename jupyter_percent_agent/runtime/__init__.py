"""Agent runtime: agents, history assembly, model calls through litellm, the ATTP loop.

Knows nothing of Jupyter or the terminal; the kernel and ``tce`` are two front ends over it.
Importing this package is cheap: litellm is imported only when a model is called (or a
history must be counted in tokens). The names below are loaded on first use.

Front ends use one function, with a conversation, the caller's options, a callback for the
typed events (``runtime.events``) and a transport (``LocalTransport``, ``HelperTransport``)::

    run = await send(FileConversation(path, message), RunOptions(...), on_event,
                     transport=HelperTransport())
    run.outputs, run.reply, run.outcome (status, error_type, error, usage, seconds)

``run_turn(nb, cell_id, options, on_event, transport=...)`` runs one cell of a notebook in
memory (task documents use it). docs/internal-api.md draws the modules and one turn's path.
"""

from __future__ import annotations

from jupyter_percent_agent.lazy import lazy_getattr

_NAMES = {
    "Agent": "agents", "AgentError": "agents", "known_agents": "agents",
    "resolve_agent": "agents",
    "Conversation": "conversation", "FileConversation": "conversation",
    "PlainMarkdown": "conversation", "send": "conversation",
    "Answering": "events", "Chunk": "events", "Delta": "events", "Event": "events",
    "Interrupted": "events", "OnEvent": "events", "OutputMade": "events",
    "Reasoning": "events", "Retry": "events", "Status": "events", "Step": "events",
    "History": "history", "Turn": "history", "build_history": "history", "fit": "history",
    "conversation_cells": "history",
    "CallResult": "models", "CallSpec": "models", "spec_for": "models",
    "Selection": "ranges", "SelectionError": "ranges", "parse_selection": "ranges",
    "Run": "run",
    "apply_run": "store", "locked": "store",
    "HelperTransport": "transport", "LocalTransport": "transport", "Transport": "transport",
    "Plan": "turn", "RunOptions": "turn", "new_run": "turn", "plan": "turn",
    "run_turn": "turn",
}

__all__ = sorted(_NAMES)

__getattr__ = lazy_getattr(__name__, _NAMES)
