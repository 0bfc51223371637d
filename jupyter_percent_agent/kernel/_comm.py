"""The comm between a message notebook in JupyterLab and the agent kernel (``COMM_TARGET``).

JupyterLab has no public hook to add to a cell's execute request, so the labextension
(``labextension/src/kernelcomm.ts``) sends the notebook's live state (``_notebook.
lay_live_state``) on this comm, right before the cell's execute request goes, on the same
connection:

    {"cellId": "q4", "nonce": "<fresh for this run>", "state": {"version": 1, ...}}

A state belongs to one run: the execute request that comes next from the same client (its
``session``) for the same cell (its ``metadata.cellId``) takes it (``LiveStates.take``).
A state for another cell is never laid over a run; one whose request never came is
dropped, never kept for a later run: the requests a failed run aborts (``stop_on_error``)
drop every state waiting, and a request drops the states its client sent before its own.
Comm messages sent to a subshell are dropped too: a subshell runs beside the main shell, so
their order against the execute requests is lost (the kernel does not offer subshells). A
state, like the request it goes with, comes from the client: it never decides trust
(``_notebook.ServedNotebook``).

The kernel answers on the comm that carried a run's state, before the execute reply, with
what JupyterLab's reply handling cannot see: the code the reply proposes and a refusal that
trusting a folder lifts (``RunOutcome``), tagged with the run's nonce:

    {"nonce": "...", "proposed": {"after": "q4", "auto_run": false, "cells": [...]}}
    {"nonce": "...", "untrusted_folder": {"folder": "/home/u/clone", "refused": "refused: ..."}}

Only the kernel itself writes on the comm: a cell's code runs in a sandbox or another
kernel, neither of which can send on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_percent_agent.kernel import COMM_TARGET

PENDING_LIMIT = 32
"""States a client may have waiting for their requests; older ones are dropped."""


@dataclass(frozen=True)
class LiveState:
    """One run's live state, as the comm brought it."""

    cell_id: str
    nonce: str
    state: Any
    comm_id: str


class LiveStates:
    """The states received and not yet taken, per client session, in the order they came."""

    def __init__(self) -> None:
        self._pending: dict[str, list[LiveState]] = {}

    def receive(self, session: str, comm_id: str, data: Any) -> None:
        """Keep the state of ``data`` (a comm message's data) for the run it names; a
        message of another shape is dropped."""
        if not (isinstance(data, dict) and isinstance(data.get("cellId"), str)
                and isinstance(data.get("nonce"), str) and "state" in data):
            return
        queue = self._pending.setdefault(session, [])
        queue.append(LiveState(data["cellId"], data["nonce"], data["state"], comm_id))
        del queue[:-PENDING_LIMIT]

    def take(self, session: str, cell_id: str | None) -> LiveState | None:
        """The state client ``session`` sent for the run of cell ``cell_id`` whose request has
        come; the states it sent before that one are dropped (their requests never came: a
        client sends a state, then its request). None when it sent none for that cell."""
        queue = self._pending.get(session)
        if cell_id is None or not queue:
            return None
        for i, state in enumerate(queue):
            if state.cell_id == cell_id:
                del queue[:i + 1]
                if not queue:
                    del self._pending[session]
                return state
        return None

    def clear(self) -> None:
        """Drop every state waiting."""
        self._pending.clear()

    def forget(self, comm_id: str) -> None:
        """Drop the states of a closed comm."""
        for session, queue in list(self._pending.items()):
            queue[:] = [s for s in queue if s.comm_id != comm_id]
            if not queue:
                del self._pending[session]


@dataclass
class RunOutcome:
    """What the kernel tells the comm of a run, beside the execute reply."""

    proposed: dict[str, Any] | None = None
    untrusted_folder: dict[str, str] | None = None

    def data(self) -> dict[str, Any]:
        """The comm message's data, without the nonce."""
        return {k: v for k, v in (("proposed", self.proposed),
                                  ("untrusted_folder", self.untrusted_folder)) if v is not None}


class LiveStateComms:
    """The kernel's side of the comm: ipykernel's base ``Kernel`` handles no comm message, so
    the kernel registers these handlers (``register``) for its shell channel."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.states = LiveStates()
        self._open: set[str] = set()

    def register(self) -> None:
        """Handle comm_open, comm_msg and comm_close on the kernel's shell channel."""
        self.kernel.shell_handlers.update(comm_open=self.comm_open, comm_msg=self.comm_msg,
                                          comm_close=self.comm_close)

    def comm_open(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        content = parent.get("content") or {}
        comm_id = content.get("comm_id")
        if not isinstance(comm_id, str):
            return
        if content.get("target_name") == COMM_TARGET:
            self._open.add(comm_id)
        else:  # as ipykernel answers a target it does not know
            self.kernel.send_response(self.kernel.iopub_socket, "comm_close",
                                      {"comm_id": comm_id, "data": {}})

    def comm_msg(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        header, content = parent.get("header") or {}, parent.get("content") or {}
        comm_id = content.get("comm_id")
        if comm_id in self._open and not header.get("subshell_id"):
            self.states.receive(str(header.get("session")), comm_id, content.get("data"))

    def comm_close(self, stream: Any, ident: Any, parent: dict[str, Any]) -> None:
        comm_id = (parent.get("content") or {}).get("comm_id")
        if isinstance(comm_id, str):
            self._open.discard(comm_id)
            self.states.forget(comm_id)

    def take(self, parent: dict[str, Any]) -> LiveState | None:
        """The live state of the execute request ``parent``, if its client sent one."""
        cell_id = (parent.get("metadata") or {}).get("cellId")
        session = (parent.get("header") or {}).get("session")
        if not isinstance(cell_id, str) or not isinstance(session, str):
            return None
        return self.states.take(session, cell_id)

    def failed(self, parent: dict[str, Any]) -> None:
        """The execute request ``parent`` failed: with ``stop_on_error`` (JupyterLab's), ipykernel
        aborts every execute request already queued, so the states sent for them are dropped
        rather than left for a later run of their cells."""
        if (parent.get("content") or {}).get("stop_on_error", True):
            self.states.clear()

    def tell(self, run: LiveState | None, outcome: RunOutcome) -> None:
        """Send ``outcome`` on the comm that carried the run's state (nothing to say, or a run
        no state came with: nothing sent)."""
        data = outcome.data()
        if run is None or not data or run.comm_id not in self._open:
            return
        self.kernel.send_response(self.kernel.iopub_socket, "comm_msg",
                                  {"comm_id": run.comm_id, "data": {"nonce": run.nonce, **data}})
