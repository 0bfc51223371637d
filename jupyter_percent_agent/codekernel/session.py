"""A real Jupyter kernel for ``[code]`` cells, spoken to with ``jupyter_client``.

``CodeKernels`` is one notebook's set: one kernel per language, started on first use in the
notebook's folder and kept until ``shutdown`` (the agent kernel stops, ``tce exec`` ends), so
state carries from cell to cell. ``CodeKernel.execute`` runs one cell and feeds its IOPub
messages to a ``Collector``; cancelling it interrupts the kernel and keeps what came. A kernel
that dies mid-cell is a ``KernelDied`` (the outputs before it are kept by the collector) and
the next run starts a new one.

A cell's ``input()`` and ``getpass()`` are the kernel's input requests (Jupyter's stdin
channel): ``CodeKernels.answer`` (the front end's way to ask the user; None: the cell is told
there is no stdin, as Jupyter tells it) gets the prompt and whether it is a password, and its
answer goes back to the kernel. An answer that cannot be had (``InputUnavailable``) interrupts
the cell and is raised.
"""

from __future__ import annotations

import asyncio
import os
import queue
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent.codekernel.errors import InputUnavailable, KernelDied, KernelError
from jupyter_percent_agent.codekernel.outputs import Collector
from jupyter_percent_agent.codekernel.specs import ALIASES, kernel_name

START_TIMEOUT = 60.0
POLL = 0.2  # seconds between checks that the kernel is still alive while a cell runs
DRAIN_TIMEOUT = 5.0  # seconds an interrupted cell has to say it stopped

AnswerInput = Callable[[str, bool], Awaitable[str]]
"""``answer(prompt, password)``: what the user typed for a cell's ``input(prompt)`` (``password``:
``getpass``, never shown), or ``InputUnavailable``."""


class _Ignored:
    """Where the messages of a cell interrupted for want of input go: nowhere."""

    def take(self, msg: Mapping[str, Any]) -> None:
        pass


class CodeKernel:
    """One running kernel (``name``: its kernelspec) with its working folder."""

    def __init__(self, name: str, folder: Path, env: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.language = ""  # the language of the cells it ran (``python``), once it ran one
        self.folder = folder
        self.env = dict(os.environ if env is None else env)
        self.manager: Any = None
        self.client: Any = None
        self._lock = asyncio.Lock()
        self._sockets: str | None = None

    async def start(self) -> None:
        from jupyter_client.manager import AsyncKernelManager

        # IPC sockets in a folder only this user may open (not TCP ports on localhost)
        self._sockets = tempfile.mkdtemp(prefix="tce-kernel-")
        manager = AsyncKernelManager(
            kernel_name=self.name, transport="ipc", ip=os.path.join(self._sockets, "k")
        )
        try:
            await manager.start_kernel(cwd=str(self.folder), env=self.env)
        except Exception as exc:
            self._remove_sockets()
            raise KernelError(f"the {self.name} kernel did not start: {exc}") from exc
        client = manager.client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=START_TIMEOUT)
        except BaseException as exc:  # no answer, or Ctrl-C while it starts: nothing left
            client.stop_channels()
            await asyncio.shield(manager.shutdown_kernel(now=True))
            self._remove_sockets()
            if isinstance(exc, RuntimeError | TimeoutError):
                raise KernelError(f"the {self.name} kernel did not answer: {exc}") from exc
            raise
        self.manager, self.client = manager, client

    async def alive(self) -> bool:
        return self.manager is not None and bool(await self.manager.is_alive())

    async def execute(
        self, code: str, collector: Collector, answer: AnswerInput | None = None
    ) -> dict[str, Any]:
        """Run ``code``; every output goes to ``collector``, every input request to
        ``answer`` (None: the cell may not ask). Returns the shell reply's content
        (``status``, ``execution_count``)."""
        async with self._lock:
            msg_id = self.client.execute(
                code, store_history=True, allow_stdin=answer is not None, stop_on_error=True
            )
            try:
                await self._until_idle(msg_id, collector, None, answer)
            except asyncio.CancelledError:
                await self._interrupt(msg_id, collector)
                raise
            except InputUnavailable:
                await self._interrupt(msg_id, _Ignored())  # type: ignore[arg-type]
                raise
            return await self._reply(msg_id)

    async def evaluate(self, expressions: Mapping[str, str]) -> dict[str, Any]:
        """The kernel's own rich form of each expression (Jupyter's ``user_expressions``:
        ``{"status": "ok", "data": {MIME: ...}}`` or an error), asked with an empty, silent
        execution: no cell runs, the execution count and history are left as they are."""
        async with self._lock:
            msg_id = self.client.execute(
                "", silent=True, store_history=False, user_expressions=dict(expressions),
                allow_stdin=False,
            )
            reply = await self._reply(msg_id)
            found = reply.get("user_expressions")
            return dict(found) if isinstance(found, Mapping) else {}

    async def _until_idle(
        self,
        msg_id: str,
        collector: Collector,
        deadline: float | None,
        answer: AnswerInput | None = None,
    ) -> bool:
        loop = asyncio.get_running_loop()
        while deadline is None or loop.time() < deadline:
            if answer is not None:
                await self._answer_input(msg_id, answer)
            try:
                msg = await self.client.get_iopub_msg(timeout=POLL)
            except (queue.Empty, TimeoutError):
                if not await self.alive():
                    raise KernelDied(
                        f"the {self.name} kernel died while running the cell; "
                        "the next run starts a new one"
                    ) from None
                continue
            if (msg.get("parent_header") or {}).get("msg_id") != msg_id:
                continue
            if msg.get("msg_type") == "status":
                if (msg.get("content") or {}).get("execution_state") == "idle":
                    return True
                continue
            collector.take(msg)
        return False

    async def _answer_input(self, msg_id: str, answer: AnswerInput) -> None:
        """Answer the cell's input request, if it made one."""
        try:
            msg = await self.client.get_stdin_msg(timeout=0)
        except (queue.Empty, TimeoutError):
            return
        if msg.get("msg_type") != "input_request":
            return
        if (msg.get("parent_header") or {}).get("msg_id") != msg_id:
            return
        content = msg.get("content") or {}
        value = await answer(str(content.get("prompt") or ""), bool(content.get("password")))
        self.client.input(value)

    async def _interrupt(self, msg_id: str, collector: Collector) -> None:
        """Ctrl-C or the stop button: interrupt the kernel, keep what it says until idle."""
        try:
            await self.manager.interrupt_kernel()
            loop = asyncio.get_running_loop()
            await self._until_idle(msg_id, collector, loop.time() + DRAIN_TIMEOUT)
        except (KernelError, OSError, RuntimeError):
            pass

    async def _reply(self, msg_id: str) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_TIMEOUT
        while loop.time() < deadline:
            try:
                msg = await self.client.get_shell_msg(timeout=POLL)
            except (queue.Empty, TimeoutError):
                continue
            if (msg.get("parent_header") or {}).get("msg_id") == msg_id:
                return dict(msg.get("content") or {})
        return {}

    async def interrupt(self) -> None:
        if self.manager is not None:
            await self.manager.interrupt_kernel()

    async def shutdown(self) -> None:
        manager, client = self.manager, self.client
        self.manager = self.client = None
        if client is not None:
            client.stop_channels()
        if manager is not None:
            try:
                await manager.shutdown_kernel(now=True)
            except Exception:  # already gone: nothing left to stop
                pass
        self._remove_sockets()

    def _remove_sockets(self) -> None:
        if self._sockets is not None:
            shutil.rmtree(self._sockets, ignore_errors=True)
            self._sockets = None


class CodeKernels:
    """One notebook's code kernels, by language, started in ``folder`` on first use."""

    def __init__(
        self,
        folder: Path,
        env: Mapping[str, str] | None = None,
        answer: AnswerInput | None = None,
    ) -> None:
        self.folder = folder
        self.env = env
        self.answer = answer
        """How a cell's ``input()`` is answered (None: it may not ask); a front end may set
        it for each run."""
        self._kernels: dict[str, CodeKernel] = {}

    @property
    def running(self) -> list[str]:
        """The kernelspec names of the kernels started so far."""
        return [k.name for k in self._kernels.values() if k.manager is not None]

    async def get(self, language: str) -> CodeKernel:
        """The kernel for ``language``: the one kept from before, a new one when there is
        none or it died (``NoKernelSpec`` when none is installed)."""
        name = kernel_name(language)
        kernel = self._kernels.get(name)
        if kernel is not None and not await kernel.alive():
            await kernel.shutdown()
            kernel = None
        if kernel is None:
            kernel = CodeKernel(name, self.folder, self.env)
            await kernel.start()
            self._kernels[name] = kernel
        kernel.language = ALIASES.get(language.lower(), language.lower())
        return kernel

    async def started(self, language: str) -> CodeKernel | None:
        """The kernel of ``language`` this session started, if it is still alive (None: no
        kernel is started for the asking)."""
        lang = ALIASES.get(language.lower(), language.lower())
        for kernel in self._kernels.values():
            if kernel.language == lang and await kernel.alive():
                return kernel
        return None

    async def interrupt(self) -> None:
        for kernel in self._kernels.values():
            await kernel.interrupt()

    async def shutdown(self) -> None:
        """Stop every kernel (the session is over)."""
        kernels, self._kernels = list(self._kernels.values()), {}
        for kernel in kernels:
            await kernel.shutdown()
