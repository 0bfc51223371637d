"""How tests drive a Jupyter kernel over the real protocol: start the Agent kernel from a
kernels folder with jupyter_client's ``KernelManager`` (:func:`copy_kernelspec`,
:func:`start`, :func:`stop`) in the environment a test's kernel gets (:func:`kernel_env`, the
user config dir :func:`trust_for_kernel` trusts folders in), send cells as JupyterLab does
(:func:`send_execute`, :func:`execute`, :func:`collect`, :func:`outputs`) and the
labextension's live state on its comm (:func:`open_live_comm`, :func:`send_live_state`,
:func:`execute_live`, :func:`told`).

The one home of these helpers for every kernel test of the suite."""

from __future__ import annotations

import functools
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from jupyter_percent_agent import trust
from jupyter_percent_agent.kernel import COMM_TARGET, KERNEL_NAME, kernelspec_dir
from jupyter_percent_agent.testing.environment import model_env
from jupyter_percent_agent.testing.openai_server import OpenAIServer

TIMEOUT = 30
"""Seconds a kernel has to start and to answer one message."""


@functools.cache
def kernel_config_dir() -> Path:
    """The user config dir of the kernels tests start with :func:`kernel_env` (no folder
    trusted unless a test says so with :func:`trust_for_kernel`); one per test process."""
    return Path(tempfile.mkdtemp(prefix="kernel-user-config-"))


def kernel_env(server: OpenAIServer, **extra: str) -> dict[str, str]:
    """The environment of a kernel a test starts: ``server`` its only model,
    :func:`kernel_config_dir` its config; ``extra`` added last."""
    return model_env(server, kernel_config_dir(), **extra)


def trust_for_kernel(folder: Path, *, trusted: bool = True) -> None:
    """Trust ``folder`` in the kernels' user config, as ``tce trust`` would (``trusted=False``:
    as ``tce untrust`` would)."""
    with pytest.MonkeyPatch.context() as m:
        m.setenv("PERCENT_AGENT_CONFIG_DIR", str(kernel_config_dir()))
        if trusted:
            trust.trust_folder(folder)
        else:
            trust.untrust_folder(folder)


def copy_kernelspec(kernels: Path) -> Path:
    """Copy the project's kernelspec into the kernels folder ``kernels`` (made if need be), as
    ``jupyter kernelspec install`` would; ``kernels``, for :func:`start`."""
    shutil.copytree(kernelspec_dir(), kernels / KERNEL_NAME)
    return kernels


def start(spec_dir: Path, env: dict[str, str], *, timeout: float = TIMEOUT,
          **launch: Any) -> tuple[KernelManager, Any]:
    """Start the Agent kernel of the kernels folder ``spec_dir`` in ``env`` (``launch``: more
    of ``start_kernel``'s arguments, ``cwd``...); its manager and a client, ready within
    ``timeout`` seconds (or the kernel is shut down and the error raised)."""
    ksm = KernelSpecManager(kernel_dirs=[str(spec_dir)])
    km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=ksm)
    km.start_kernel(env=env, **launch)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=timeout)
    except BaseException:
        stop(km, kc)
        raise
    return km, kc


def stop(km: KernelManager, kc: Any) -> None:
    """Close the client's channels and shut the kernel down now."""
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def send_execute(kc: Any, code: str, cell_id: str | None = None, *, allow_stdin: bool = False,
                 metadata: dict[str, Any] | None = None) -> str:
    """Send an execute_request as JupyterLab does (cellId and ``metadata`` in its metadata;
    ``allow_stdin``: a person can be asked) without waiting; its msg_id."""
    msg = kc.session.msg("execute_request", {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": allow_stdin, "stop_on_error": True},
        metadata={**({} if cell_id is None else {"cellId": cell_id}), **(metadata or {})})
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def execute(kc: Any, code: str, cell_id: str | None = None, *,
            timeout: float = TIMEOUT) -> tuple[dict, list[dict]]:
    """Send an execute_request as JupyterLab does (cellId in the metadata); return the
    reply and the iopub messages of that request up to idle (``timeout``: the longest wait
    for one message)."""
    return collect(kc, send_execute(kc, code, cell_id), timeout=timeout)


def collect(kc: Any, msg_id: str, *, timeout: float = TIMEOUT) -> tuple[dict, list[dict]]:
    """The shell reply to the request ``msg_id`` and its iopub messages up to idle
    (``timeout``: the longest wait for one message)."""
    iopub: list[dict] = []
    while True:
        m = kc.get_iopub_msg(timeout=timeout)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
        iopub.append(m)
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply, iopub


def outputs(iopub: list[dict]) -> list[dict]:
    """The iopub messages that are outputs of the cell (displays, streams, errors, results)."""
    return [m for m in iopub if m["msg_type"] in (
        "display_data", "update_display_data", "stream", "error", "execute_result")]


def open_live_comm(kc: Any) -> str:
    """Open the comm the labextension sends live states on; its id."""
    comm_id = uuid.uuid4().hex
    kc.shell_channel.send(kc.session.msg("comm_open", {
        "comm_id": comm_id, "target_name": COMM_TARGET, "data": {}}))
    return comm_id


def send_live_state(kc: Any, comm_id: str, cell_id: str, state: Any) -> str:
    """Send ``state`` for the next run of ``cell_id``, as the labextension does; its nonce."""
    nonce = uuid.uuid4().hex
    kc.shell_channel.send(kc.session.msg("comm_msg", {
        "comm_id": comm_id, "data": {"cellId": cell_id, "nonce": nonce, "state": state}}))
    return nonce


def execute_live(kc: Any, code: str, cell_id: str, state: dict[str, Any]
                 ) -> tuple[dict, list[dict]]:
    """Run ``cell_id`` as JupyterLab does: ``state`` as the labextension's live state, on the
    comm, right before the execute request."""
    comm_id = open_live_comm(kc)
    send_live_state(kc, comm_id, cell_id, {"version": 1, **state})
    return execute(kc, code, cell_id)


def told(iopub: list[dict]) -> list[dict]:
    """What the kernel said on the live state's comm during a run."""
    return [m["content"]["data"] for m in iopub if m["msg_type"] == "comm_msg"]
