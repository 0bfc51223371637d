"""A ``[code]`` cell's ``input()`` and ``getpass()`` in JupyterLab: the code kernel's input
request goes on to the Agent kernel's own front end (an ``input_request`` on Jupyter's stdin
channel, ``password`` kept, so a password box does not echo) and the user's answer back.

Only when the front end said it can answer (``allow_stdin`` of its execute request, as every
kernel checks); otherwise the cell gets Jupyter's usual ``StdinNotImplementedError``. The
wait for the answer is a cancellable poll on the event loop, so interrupting the cell while
the box is open stops the wait (and the cell) and no later answer is taken for it.
"""

from __future__ import annotations

import asyncio
from typing import Any

POLL = 0.05
"""Seconds between two looks at the stdin socket while the user types."""


def set_answer(kernel: Any, kernels: Any) -> Any:
    """``kernels`` (the session's ``codekernel.CodeKernels``) answering the cells of the
    request being handled through ``kernel``'s front end, when it allows stdin."""
    allowed = bool(getattr(kernel, "_allow_stdin", False))  # ipykernel's, from the request

    async def answer(prompt: str, password: bool) -> str:
        return await ask_front_end(kernel, prompt, password)

    kernels.answer = answer if allowed else None
    return kernels


async def ask_front_end(kernel: Any, prompt: str, password: bool, *,
                        request: tuple[Any, Any] | None = None,
                        extra: dict[str, Any] | None = None) -> str:
    """Send ``input_request`` to the front end of the shell request being handled (or of
    ``request``: its parent and ident, taken when it was handled) and wait, without blocking
    the event loop, for its ``input_reply``; the value typed (``"\\x04"``, end of input, is
    passed on: the cell's ``input()`` raises ``EOFError``). ``extra``: more of the request's
    content (an external agent's permission request, for the labextension's dialog)."""
    import zmq

    session, socket = kernel.session, kernel.stdin_socket
    while session.recv(socket, mode=zmq.NOBLOCK) != (None, None):
        pass  # a stale reply (to a request interrupted before) is not this one's answer
    parent, ident = request or (kernel.get_parent("shell"), kernel._parent_ident["shell"])
    session.send(
        socket,
        "input_request",
        {"prompt": prompt, "password": password, **(extra or {})},
        parent,
        ident=ident,
    )
    while True:
        _, reply = session.recv(socket, mode=zmq.NOBLOCK)
        if reply is not None:
            break
        await asyncio.sleep(POLL)
    value = (reply.get("content") or {}).get("value", "")
    return value if isinstance(value, str) else str(value)
