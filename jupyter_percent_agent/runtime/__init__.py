"""Agent runtime: agents, history assembly, model calls through litellm, the ATTP loop.

Knows nothing of Jupyter or the terminal; the kernel and ``tce`` are two front ends over it.
Importing this package is cheap: litellm is imported only when a model is called (or a
history must be counted in tokens). The names below are loaded on first use.

Front ends use::

    run = await run_cell(nb, cell_id, RunOptions(base_dir=..., current_text=...), on_event,
                         run=CellRun(cell_id))          # outputs in run.outputs
    store.apply_run(path, run)                          # append to a fresh copy, locked

``on_event(kind, payload)``: "delta" / "reasoning" (streamed text), "retry" (why),
"output" (an output dict just made), "step" (ATTP step number), "chunk" ((tool, chunk)),
"status" (a line for the user). Cancel the task to interrupt: a partial reply is kept in
``run.outputs`` with ``interrupted=true``.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "Agent": "agents", "AgentError": "agents", "known_agents": "agents",
    "resolve_agent": "agents",
    "History": "history", "Turn": "history", "build_history": "history", "fit": "history",
    "conversation_cells": "history",
    "CallResult": "models", "CallSpec": "models", "complete": "models", "spec_for": "models",
    "Selection": "ranges", "SelectionError": "ranges", "parse_selection": "ranges",
    "CellRun": "session", "RunOptions": "session", "plan_history": "session",
    "run_cell": "session",
    "apply_run": "store", "append_message": "store", "locked": "store",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        module = importlib.import_module(f"{__name__}.{_NAMES[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
