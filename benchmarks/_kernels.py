"""Shared kernel helpers of the benchmarks: an execute request as JupyterLab sends it (with the
live state on its comm before it), and the time from sending one to the first IOPub message of
a given kind."""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection
from typing import Any

from jupyter_percent_agent.kernel import COMM_TARGET


def execute_request(kc: Any, code: str, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """An ``execute_request`` of ``code`` on client ``kc``, ``metadata`` in its metadata (e.g.
    the ``cellId`` JupyterLab adds); not sent."""
    msg = kc.session.msg(
        "execute_request",
        {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        },
    )
    msg["metadata"].update(metadata or {})
    return msg


def send_live_state(kc: Any, cell_id: str, state: dict[str, Any]) -> None:
    """Send ``state`` for the next run of ``cell_id`` on a comm of its own, as the
    labextension sends a message notebook's live state before the execute request."""
    comm_id = uuid.uuid4().hex
    kc.shell_channel.send(kc.session.msg("comm_open", {
        "comm_id": comm_id, "target_name": COMM_TARGET, "data": {}}))
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {
        "cellId": cell_id, "nonce": uuid.uuid4().hex, "state": state}}))


def first_message_seconds(
    kc: Any, msg: dict[str, Any], msg_types: Collection[str], timeout: float
) -> float:
    """Send ``msg`` on ``kc``'s shell channel; seconds to the first IOPub message of one of
    ``msg_types`` it caused. Returns once the kernel is idle again; raises when none came."""
    start = time.perf_counter()
    kc.shell_channel.send(msg)
    first = None
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        if first is None and m["msg_type"] in msg_types:
            first = time.perf_counter() - start
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    if first is None:
        raise RuntimeError(f"no {' or '.join(sorted(msg_types))} message before idle")
    return first
