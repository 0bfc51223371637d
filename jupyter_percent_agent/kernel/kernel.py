"""``AgentKernel``: an ipykernel ``Kernel`` whose cells are messages to an agent.

Running a cell reads the notebook the kernel serves (``JPY_SESSION_NAME``) with the format
core, lays the cell's live source over it (``_notebook.Session``), and runs it through the
runtime's ``run_cell``. The reply streams as one ``display_data`` updated in place; tool calls,
results, stdout/stderr and errors are further outputs, built by the format core's helpers so
that JupyterLab's save writes them into the message file as the format expects. The kernel
never writes the notebook itself.

Interrupts: while a cell runs, SIGINT (sent by the kernel manager, or by ipykernel's
``interrupt_request`` handler in ``interrupt_mode: message``) cancels the asyncio task of the
run, which cancels the model call and the sandbox; the kernel stays up.

Importing this module is cheap: the runtime and the tools are imported when a cell runs, never
at start-up. litellm (about 3 s, and 1 s more for what its first call loads) is imported on a
worker thread a second after the kernel has started, while the user is still typing, so that
the first reply does not wait for it; ``PERCENT_AGENT_PRELOAD=0`` leaves it to the first
message.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from ipykernel.kernelbase import Kernel

from jupyter_percent_agent import __version__ as _version
from jupyter_percent_agent.kernel import LANGUAGE_INFO
from jupyter_percent_agent.kernel._notebook import Session, notebook_path, read_notebook

UPDATE_INTERVAL = 0.1
"""Seconds between two in-place updates of a streaming reply (the last one always goes)."""

MODEL_FREE = ("code", "tool_call", "toolchain")

PRELOAD_DELAY = 1.0
"""Seconds after start before litellm is imported in the background (a kernel's start, and
the front end's first requests, stay free of it)."""


def _import_litellm() -> None:
    from jupyter_percent_agent.runtime.models import prewarm

    prewarm()  # the default agent's tokenizer: a notebook's own agent may use another


class RunFailed(Exception):
    """A cell that could not run: the reason is one line, shown without a traceback."""

    def __init__(self, ename: str, evalue: str) -> None:
        super().__init__(f"{ename}: {evalue}")
        self.ename, self.evalue = ename, evalue


def _one_line(text: str, limit: int = 400) -> str:
    return " ".join(str(text).split())[:limit]


class _Display:
    """Sends a run's events to the front end as iopub messages."""

    def __init__(self, kernel: AgentKernel, run: Any) -> None:
        self.kernel = kernel
        self.run = run
        self.display_id: str | None = None
        self.text = ""
        self.sent_at = 0.0
        self.sent_text = ""
        self.errors: list[dict[str, Any]] = []
        self.shown = False

    # -- the streaming reply -----------------------------------------------------------

    def _streaming_content(self) -> dict[str, Any]:
        from jupyter_percent_agent import format as fmt

        out = fmt.reply_output(self.text, agent=self.run.agent or "agent",
                               out_id=None)  # type: ignore[arg-type]  # id: on the last update
        return {"data": out["data"], "metadata": out["metadata"]}

    def _push(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and (now - self.sent_at < UPDATE_INTERVAL or self.text == self.sent_text):
            return
        self._send("update_display_data", {**self._streaming_content(),
                                           "transient": {"display_id": self.display_id}})
        self.sent_at, self.sent_text = now, self.text

    def _open(self) -> None:
        import uuid

        self.display_id = uuid.uuid4().hex
        self._send("display_data", {**self._streaming_content(),
                                    "transient": {"display_id": self.display_id}})
        self.sent_at, self.sent_text = time.monotonic(), self.text

    def _close_with(self, out: dict[str, Any]) -> None:
        """Replace the streaming reply by its final form, with every attribute."""
        self._send("update_display_data", {"data": out["data"], "metadata": out["metadata"],
                                           "transient": {"display_id": self.display_id}})
        self.display_id, self.text, self.sent_text = None, "", ""

    def interrupted(self) -> None:
        """After a cancel: the partial reply the runtime kept (``interrupted=true``)."""
        from jupyter_percent_agent import format as fmt

        if self.display_id is None:
            return
        partial = [o for o in self.run.outputs if fmt.output_kind(o) == "reply"]
        if partial and fmt.output_attrs(partial[-1]).get("interrupted"):
            self._close_with(partial[-1])
        else:
            self._push(force=True)

    # -- events --------------------------------------------------------------------------

    def __call__(self, kind: str, payload: Any) -> None:
        if kind == "delta":
            self.text += payload
            if self.display_id is None:
                if self.text.strip():
                    self._open()
            else:
                self._push()
        elif kind == "retry":
            # the next attempt starts afresh; the text shown stays until it streams (or, when
            # every attempt fails, until the runtime's incomplete reply replaces it): never an
            # empty reply left behind
            self.text = ""
            self.kernel.log.info("agent: %s", payload)
        elif kind == "output":
            self._output(payload)
        elif kind in ("status", "chunk"):
            self.kernel.log.info("agent %s: %s", kind, payload)

    def _output(self, out: dict[str, Any]) -> None:
        from jupyter_percent_agent import format as fmt

        okind = fmt.output_kind(out)
        if okind == "reply" and self.display_id is not None:
            self._close_with(out)
            return
        self.display_id, self.text = None, ""
        ot = out.get("output_type")
        if ot == "stream":
            self._send("stream", {"name": out["name"], "text": fmt.output_text(out)})
        elif ot == "error":
            self.errors.append(out)
            self._send("error", {"ename": out["ename"], "evalue": out["evalue"],
                                 "traceback": _short_traceback(out)})
        else:
            self._send("display_data", {"data": out["data"], "metadata": out["metadata"],
                                        "transient": {}})

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        self.shown = True
        self.kernel.send_response(self.kernel.iopub_socket, msg_type, content)


def _short_traceback(out: dict[str, Any]) -> list[str]:
    """The reason on one line, then the attempts the runtime listed (a line each)."""
    lines = [f"{out['ename']}: {_one_line(out['evalue'])}"]
    lines += [_one_line(t) for t in (out.get("traceback") or [])[:10]]
    return lines


class AgentKernel(Kernel):
    """A Jupyter kernel whose cells are messages: running one asks its agent."""

    implementation = "percent-agent"
    implementation_version = _version
    language = "markdown"
    language_version = "1"
    # The contents manager gives JupyterLab the same, with every message notebook it opens.
    language_info = dict(LANGUAGE_INFO)  # noqa: RUF012 - ipykernel's own class attribute
    banner = "Agent: each cell is a message; running it asks the notebook's agent."

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session_memory = Session()
        self._task: asyncio.Task[Any] | None = None
        self._interrupt_pending = False
        self._litellm: asyncio.Future[None] | None = None

    def start(self) -> None:
        super().start()
        if os.environ.get("PERCENT_AGENT_PRELOAD", "1") != "0":
            self.io_loop.call_later(PRELOAD_DELAY, self._litellm_imported)

    def _litellm_imported(self) -> asyncio.Future[None]:
        """The one import of litellm, on a worker thread, started on first need."""
        failed = self._litellm is not None and self._litellm.done() and (
            self._litellm.cancelled() or self._litellm.exception() is not None)
        if self._litellm is None or failed:
            self._litellm = asyncio.ensure_future(asyncio.to_thread(_import_litellm))
        return self._litellm

    @property
    def kernel_info(self) -> dict[str, Any]:
        info = dict(super().kernel_info)
        info["supported_features"] = [f for f in info.get("supported_features", [])
                                      if f != "debugger"]
        return info

    # -- interrupts ----------------------------------------------------------------------

    def pre_handler_hook(self) -> None:
        """While a shell message is handled, SIGINT cancels the running cell's task."""
        self.saved_sigint_handler = signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        task = self._task
        if task is not None and not task.done():
            task.get_loop().call_soon_threadsafe(task.cancel)
        else:
            self._interrupt_pending = True

    # -- execution -----------------------------------------------------------------------

    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict[str, Any] | None = None,
                         allow_stdin: bool = False, *, cell_meta: dict[str, Any] | None = None,
                         cell_id: str | None = None) -> dict[str, Any]:
        """Run one cell: a message (the agent answers), ``[code]``, ``[tool_call]``..."""
        self._interrupt_pending = False
        if silent or not code.strip():  # silent requests are a front end's machinery
            return self._ok()
        try:
            return await self._execute(code, cell_id)
        except RunFailed as exc:
            return self._error(exc.ename, exc.evalue, publish=True)

    async def _execute(self, code: str, cell_id: str | None) -> dict[str, Any]:
        from jupyter_percent_agent import format as fmt
        from jupyter_percent_agent.runtime import AgentError, CellRun, RunOptions, run_cell
        from jupyter_percent_agent.trust import TrustError

        path = notebook_path()
        try:
            nb = read_notebook(path)
        except fmt.FormatError as exc:
            raise RunFailed("FormatError", _one_line(str(exc))) from None
        except (OSError, ValueError) as exc:
            raise RunFailed(type(exc).__name__, _one_line(f"{path}: {exc}")) from None
        nb, nb_id, run_id = self._session_memory.prepare(nb, cell_id, code)
        cell = next(c for c in nb["cells"] if c.get("id") == nb_id)
        run = CellRun(cell_id=run_id)
        display = _Display(self, run)
        # without a notebook path, tools and included files are found beside the kernel's
        # working directory (the notebook's folder when a front end starts it)
        options = RunOptions(base_dir=path.parent if path else Path.cwd(), file_path=path,
                             current_text=code)

        async def go() -> None:
            if fmt.cell_kind(cell) not in MODEL_FREE:
                # shielded: interrupting this cell must not cancel the import the next awaits
                await asyncio.shield(self._litellm_imported())
            await run_cell(nb, run_id, options, display, run=run)

        self._task = asyncio.ensure_future(go())
        if self._interrupt_pending:
            self._task.cancel()
        try:
            await asyncio.wait({self._task})
        finally:
            task, self._task = self._task, None
            if not task.done():
                task.cancel()
        if task.cancelled():
            display.interrupted()
            run.status = "interrupted"
            self._session_memory.record(nb_id, code, run.outputs)
            return self._error("KeyboardInterrupt", "interrupted: the model call was cancelled"
                               if fmt.cell_kind(cell) not in MODEL_FREE else "interrupted")
        exc = task.exception()
        if exc is not None:
            if not isinstance(exc, AgentError | fmt.FormatError | FileNotFoundError
                              | TrustError):
                self.log.error("agent run failed", exc_info=exc)  # the traceback: in the log
            raise RunFailed(type(exc).__name__, _one_line(str(exc)))
        self._session_memory.record(nb_id, code, run.outputs)
        if run.status == "error":
            if display.errors:
                err = display.errors[-1]
                return self._error(err["ename"], _one_line(err["evalue"]))
            # a [code] cell's traceback went to stderr, a failed tool call is a [tool]
            # result: an error output only when nothing was shown
            reason = _one_line(run.error or "failed")
            head = reason.split(":", 1)[0]
            ename = run.error_type or (head if head.isidentifier() and head != reason
                                       else "Error")
            return self._error(ename, reason.removeprefix(f"{ename}: "),
                               publish=not display.shown)
        return self._ok()

    def _ok(self) -> dict[str, Any]:
        return {"status": "ok", "execution_count": self.execution_count, "payload": [],
                "user_expressions": {}}

    def _error(self, ename: str, evalue: str, *, publish: bool = False) -> dict[str, Any]:
        line = f"{ename}: {evalue}"
        if publish:
            self.send_response(self.iopub_socket, "error",
                               {"ename": ename, "evalue": evalue, "traceback": [line]})
        return {"status": "error", "execution_count": self.execution_count, "ename": ename,
                "evalue": evalue, "traceback": [line]}
