"""Fixtures of the integration tier: its kernel tests (test_kernel.py, test_kernel_code.py, and
with an external ACP agent: test_kernel_acp.py, test_fast_agent.py) and its ACP tests through
``tce`` (test_acp.py, test_acp_followups.py)."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest
from jupyter_client.manager import KernelManager

from jupyter_percent_agent import acp, trust
from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.testing import kernels
from jupyter_percent_agent.testing.environment import model_env
from jupyter_percent_agent.testing.openai_server import OpenAIServer
from tests.helpers.acp import Scripted


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    """A local model server of the module's own, for kernels that outlive one test."""
    with OpenAIServer() as s:
        yield s


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernels folder holding a copy of the project's kernelspec."""
    return kernels.copy_kernelspec(tmp_path_factory.mktemp("jupyter") / "kernels")


class AcpKernel:
    """An Agent kernel serving ``folder/chat.msg.md`` (whose agent ``coder`` is the user's
    ACP agent ``NAME``), driven as JupyterLab drives it."""

    def __init__(self, km: KernelManager, kc: Any, folder: Path, marker: str) -> None:
        self.km, self.kc, self.folder, self.marker = km, kc, folder, marker

    def agents(self) -> list[psutil.Process]:
        """The kernel's child processes that run the agent (their command line holds
        ``marker``)."""
        kernel = psutil.Process(self.km.provisioner.pid)  # type: ignore[union-attr]
        return [p for p in kernel.children(recursive=True)
                if self.marker in " ".join(p.cmdline())]

    def send(self, code: str, cell_id: str, *, allow_stdin: bool = False) -> str:
        """Send a cell as JupyterLab does (``allow_stdin``: a person can be asked)."""
        return kernels.send_execute(self.kc, code, cell_id, allow_stdin=allow_stdin)

    def until_idle(self, msg_id: str, seen: Callable[[dict], None] | None = None,
                   answer: Callable[[dict], str] | None = None) -> tuple[dict, list[dict]]:
        """The execute reply and the request's iopub messages up to idle; ``seen`` is
        called with each as it comes, ``answer`` answers each input request."""
        iopub: list[dict] = []
        deadline = time.monotonic() + ACP_TIMEOUT
        while time.monotonic() < deadline:
            if answer is not None and self.kc.stdin_channel.msg_ready():
                request = self.kc.get_stdin_msg(timeout=1)
                self.kc.input(answer(request))
            try:
                m = self.kc.get_iopub_msg(timeout=0.2 if answer is not None else ACP_TIMEOUT)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
            iopub.append(m)
            if seen is not None:
                seen(m)
        while True:
            reply = self.kc.get_shell_msg(timeout=ACP_TIMEOUT)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply, iopub

    def run(self, code: str, cell_id: str) -> tuple[dict, list[dict]]:
        return self.until_idle(self.send(code, cell_id))

    @staticmethod
    def shown(iopub: list[dict]) -> list[dict[str, Any]]:
        """The outputs as the front end holds them at the end: each display's last
        update, in the order they were first shown."""
        by_id: dict[str, dict[str, Any]] = {}
        for m in iopub:
            if m["msg_type"] not in ("display_data", "update_display_data"):
                continue
            did = m["content"].get("transient", {}).get("display_id") or m["header"]["msg_id"]
            by_id[did] = {"output_type": "display_data", "data": m["content"]["data"],
                          "metadata": m["content"]["metadata"]}
        return list(by_id.values())

    @classmethod
    def answer_of(cls, iopub: list[dict]) -> dict[str, Any]:
        """The turn's final reply (not a step)."""
        replies = [o for o in cls.shown(iopub) if fmt.output_kind(o) == "reply"
                   and not fmt.output_attrs(o).get("reasoning")]
        assert replies, [m["msg_type"] for m in iopub]
        return replies[-1]


ACP_CONVERSATION = """\
---
agents:
  coder: {{acp: {name}}}
default_agent: coder
---

# %% First[^q1]
[^q1]: [markdown]

Say hello.
"""

ACP_TIMEOUT = 60


@pytest.fixture
def acp_kernel(tmp_path: Path, spec_dir: Path, server: OpenAIServer
               ) -> Iterator[Callable[..., AcpKernel]]:
    """Start an Agent kernel in ``tmp_path/work`` (trusted unless ``trusted=False``) whose
    agent ``coder`` is the user's ACP agent ``name``, started with ``command`` and ``env``
    (``permissions``: the user's setting); every kernel is shut down after the test."""
    started: list[AcpKernel] = []

    def start(command: Sequence[str], *, name: str = "agent", env: dict[str, str] | None = None,
              trusted: bool = True, permissions: str = "ask", marker: str = "") -> AcpKernel:
        config, folder = tmp_path / "config", tmp_path / "work"
        folder.mkdir(exist_ok=True)
        with pytest.MonkeyPatch.context() as m:
            m.setenv("PERCENT_AGENT_CONFIG_DIR", str(config))
            acp.add_agent(acp.AcpAgentSpec(name, command[0], tuple(command[1:]), env or {},
                                           permissions), replace=True)
            if trusted:
                trust.trust_folder(folder)
        notebook = folder / "chat.msg.md"
        notebook.write_text(ACP_CONVERSATION.format(name=name), encoding="utf-8")
        km, kc = kernels.start(spec_dir,
                               {**model_env(server, config), "JPY_SESSION_NAME": str(notebook)},
                               timeout=ACP_TIMEOUT, cwd=str(folder))
        started.append(AcpKernel(km, kc, folder, marker or command[-1]))
        return started[-1]

    yield start
    for k in started:
        kernels.stop(k.km, k.kc)


@pytest.fixture
def project(tmp_path: Path, trusted: Callable[[Path], Path]) -> Scripted:
    """A trusted conversation folder whose agent ``coder`` is the scripted ACP agent
    (test_acp.py, test_acp_followups.py)."""
    scripted = Scripted(tmp_path)
    trusted(scripted.folder)
    return scripted
