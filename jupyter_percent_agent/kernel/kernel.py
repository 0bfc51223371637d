"""``AgentKernel``: an ipykernel ``Kernel`` whose cells are messages to an agent.

A thin front end over ``runtime.send``: running a cell hands the runtime a
``LiveConversation`` (the notebook this kernel serves, ``JPY_SESSION_NAME``, read with the
format core, with the running cell's live source and this session's unsaved runs laid over it)
and turns the typed events into iopub messages (``_display.CellDisplay``): the reply streams as
one ``display_data`` updated in place; tool calls, results, stdout/stderr and errors are
further outputs, built by the format core so that JupyterLab's save writes them into the
message file as the format expects. The kernel never writes the notebook itself.

Interrupts: while a cell runs, SIGINT (sent by the kernel manager, or by ipykernel's
``interrupt_request`` handler in ``interrupt_mode: message``) cancels the asyncio task of the
run, which cancels the model call and the sandbox; the kernel stays up. ``input()`` in a
``[code]`` cell is asked of the front end (``_stdin``).

Importing this module is cheap: the runtime and the tools are imported when a cell runs, never
at start-up. A second after the kernel has started, while the user is still typing, what the
environment agent's first call needs is made ready (``HelperTransport.warm_up``): for an
OpenAI-compatible ``api_base``, the HTTP client is imported here (the call goes straight to
the server, ``runtime.direct``); for one that needs litellm, the user's warm helper is started
and makes those calls for every kernel (a kernel never holds litellm's hundred-odd megabytes;
``PERCENT_AGENT_WARM=0``: it imports litellm on a worker thread). ``PERCENT_AGENT_PRELOAD=0``
leaves all of it to the first message.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

from ipykernel.kernelbase import Kernel

from jupyter_percent_agent import __version__ as _version
from jupyter_percent_agent.envflags import env_flag
from jupyter_percent_agent.kernel import LANGUAGE_INFO
from jupyter_percent_agent.kernel._comm import LiveStateComms, RunOutcome
from jupyter_percent_agent.kernel._console import InputHistory, is_complete
from jupyter_percent_agent.kernel._display import CellDisplay, one_line
from jupyter_percent_agent.kernel._notebook import (
    KernelMemory,
    LiveConversation,
    ServedNotebook,
    notebook_path,
)
from jupyter_percent_agent.kernel._permission import StdinAsker
from jupyter_percent_agent.kernel._stdin import set_answer
from jupyter_percent_agent.trust.withholding import Withheld, withholding

HELPER_WAIT = 60.0
"""Seconds a message that needs litellm waits for the warm helper to start (it imports
litellm, about 3 s) before the kernel imports litellm itself."""

PRELOAD_DELAY = 1.0
"""Seconds after start before litellm is imported in the background (a kernel's start, and
the front end's first requests, stay free of it)."""


async def _run_task(cell: Any, run: Any, options: Any) -> None:
    """``[task]`` cells run their workflow (task documents), imported only when one runs."""
    from jupyter_percent_agent.tasks.cell import run_in_turn

    await run_in_turn(cell, run, options)


TASK_RUNNERS = {"task": _run_task}
"""The cell kinds the kernel runs beside the runtime's own."""


class _RunFailed(Exception):
    """A cell that could not run: the reason is one line, shown without a traceback.
    ``untrusted``: the folder whose trust would let it run (the kernel refused it)."""

    def __init__(self, ename: str, evalue: str, untrusted: Path | None = None) -> None:
        super().__init__(f"{ename}: {evalue}")
        self.ename, self.evalue, self.untrusted = ename, evalue, untrusted


class KeptAgents:
    """The open conversation's external agents (``acp.AcpSessions``: one process per ACP
    agent, kept from message to message, ended with the kernel), made on first use: the ACP
    SDK (pydantic with it, seconds to import) stays out of a kernel whose agents are not
    external."""

    def __init__(self) -> None:
        self._sessions: Any = None

    async def session(self, *args: Any, **kwargs: Any) -> Any:
        """``acp.AcpSessions.session``."""
        if self._sessions is None:
            from jupyter_percent_agent import acp

            self._sessions = acp.AcpSessions()
        return await self._sessions.session(*args, **kwargs)

    async def close(self) -> None:
        if self._sessions is not None:
            await self._sessions.close()


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
        from jupyter_percent_agent.runtime import helper
        from jupyter_percent_agent.runtime.transport import HelperTransport, LocalTransport

        self._memory = KernelMemory()
        self._history = InputHistory()
        self._last_output: str | None = None
        local = LocalTransport(deep=True)
        # calls that need litellm: made by the user's warm helper, shared by every kernel
        self._transport = (HelperTransport(local, wait=HELPER_WAIT) if helper.enabled()
                           else local)
        self._task: asyncio.Task[Any] | None = None
        self._interrupt_pending = False
        self._code_kernels: Any = None  # codekernel.CodeKernels, on the first [code] cell
        self._acp_sessions = KeptAgents()  # external agents, kept while the file is open
        self._served = ServedNotebook(notebook_path())
        self._said: set[str] = set()  # why trust was withheld, said once a session each
        # the live state JupyterLab sends on a comm, and what a run tells it back (_comm)
        self._comms = LiveStateComms(self)
        self._comms.register()
        self._outcome = RunOutcome()

    def start(self) -> None:
        super().start()
        if env_flag("PERCENT_AGENT_PRELOAD", True):
            self.io_loop.call_later(PRELOAD_DELAY, self._transport.warm_up)

    def code_kernels(self, folder: Path) -> Any:
        """This session's code kernels, started in ``folder`` on first use, stopped with it."""
        from jupyter_percent_agent.codekernel import CodeKernels

        if self._code_kernels is None or self._code_kernels.folder != folder:
            self._code_kernels = CodeKernels(folder)
        return self._code_kernels

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        await self._acp_sessions.close()  # the conversation's external agents end with it
        if self._code_kernels is not None:
            await self._code_kernels.shutdown()
        return {"status": "ok", "restart": restart}

    @property
    def kernel_info(self) -> dict[str, Any]:
        info = dict(super().kernel_info)
        # no debugger; no subshells: JupyterLab would send the live state's comm to one, out
        # of order with the execute requests (_comm)
        info["supported_features"] = [f for f in info.get("supported_features", [])
                                      if f not in ("debugger", "kernel subshells")]
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
                         allow_stdin: bool = False, *, cell_id: str | None = None
                         ) -> dict[str, Any]:
        """Run one cell: a message (the agent answers), ``[code]``, ``[tool_call]``..."""
        self._interrupt_pending = False
        # as IPython's kernel records it: may input() (and an external agent) ask the person?
        # JupyterLab and jupyter console say yes; nbclient and papermill no
        self._allow_stdin = allow_stdin
        self._outcome = RunOutcome()
        if silent or not code.strip():  # silent requests are a front end's machinery
            return self._ok()
        # taken before any await: the state sent for this very request (_comm.LiveStates)
        live = self._comms.take(self.get_parent("shell"))
        self._last_output = None
        reply: dict[str, Any] | None = None
        try:
            reply = await self._execute(code, cell_id, live.state if live else None)
            return reply
        except _RunFailed as exc:
            reply = self._error(exc.ename, exc.evalue, publish=True)
            if exc.untrusted is not None:  # JupyterLab offers to trust it (trust.ts)
                self._outcome.untrusted_folder = {"folder": str(exc.untrusted),
                                                  "refused": reply["evalue"]}
            return reply
        finally:
            self._comms.tell(live, self._outcome)
            if reply is None or reply["status"] != "ok":
                self._comms.failed(self.get_parent("shell"))
            if store_history:
                self._history.record(self.execution_count, code, self._last_output)

    async def do_is_complete(self, code: str) -> dict[str, str]:
        return is_complete(code)

    async def do_history(self, hist_access_type: str, output: bool, raw: bool,
                         session: int | None = None, start: int | None = None,
                         stop: int | None = None, n: int | None = None,
                         pattern: str | None = None, unique: bool = False) -> dict[str, Any]:
        from jupyter_percent_agent.masking import mask_data

        return {"status": "ok", "history": mask_data(self._history.query(
            hist_access_type, output, session=session, start=start, stop=stop, n=n,
            pattern=pattern, unique=unique))}

    async def _execute(self, code: str, cell_id: str | None, live: Any = None
                       ) -> dict[str, Any]:
        from jupyter_percent_agent import trust

        path, withheld = self._served.resolve(live)  # renamed since the kernel started?
        by_text = path is None and cell_id is None  # nbclient: only the source, in its folder
        if by_text:
            path, withheld = self._conversation_of(code)
        elif path is None and withheld is None:
            withheld = Withheld("the front end named no notebook file",
                                "open it in JupyterLab, or tce exec FILE")
        conversation = LiveConversation(self._memory, path, cell_id, code, live)
        conversation.rerun = by_text
        # without a notebook path, tools and included files are found beside the kernel's
        # working directory (the notebook's folder when a front end starts it)
        folder = path.parent if path else Path.cwd()
        if withheld is not None and not trust.is_trusted(folder):
            withheld = None  # untrusted all the same: the folder's own refusals say how
        if withheld is not None and str(withheld) not in self._said:
            self._said.add(str(withheld))  # once a session: on the runner's stderr
            self.log.warning("percent-agent: %s", withheld)
        with withholding(withheld):
            return await self._run(conversation, folder, cell_id, by_text)

    async def _run(self, conversation: LiveConversation, folder: Path, cell_id: str | None,
                   by_text: bool) -> dict[str, Any]:
        """Run the cell as ``_execute`` placed it; the execute reply's content."""
        from jupyter_percent_agent import errors
        from jupyter_percent_agent.runtime import RunOptions, send

        code, path = conversation.source, conversation.path
        display = CellDisplay(self, live=cell_id is not None)
        display.conversation = conversation
        kernels = set_answer(self, self.code_kernels(folder))  # input(): the user answers
        # an external agent's permission requests: asked of the person when the front end
        # has one (allow_stdin), else answered by the user's setting or rejected
        asker = StdinAsker(self, lambda: display.agent) if self._allow_stdin else None
        options = RunOptions(base_dir=folder, current_text=code, runners=TASK_RUNNERS,
                             code_kernels=kernels, path=path, permission_asker=asker,
                             acp_sessions=self._acp_sessions)
        self._task = asyncio.ensure_future(
            send(conversation, options, display, transport=self._transport))
        if self._interrupt_pending:
            self._task.cancel()
        try:
            await asyncio.wait({self._task})
        finally:
            task, self._task = self._task, None
            if not task.done():
                task.cancel()
        if task.cancelled():
            return self._error("KeyboardInterrupt", "interrupted: the model call was cancelled"
                               if conversation.kind not in ("code", "tool_call", "toolchain")
                               else "interrupted")
        exc = task.exception()
        if conversation.left is not None:  # left, and said on the runner's stderr, no output
            self.log.warning("percent-agent: %s", conversation.left)
            self._tell_count(None)
            return self._ok()
        if exc is not None:
            # the package's table names it and says it in one line; a refusal that trusting
            # a folder would lift names that folder (JupyterLab is told: RunOutcome)
            shown = errors.report(exc, path=str(path) if path else None)
            if shown is None:  # a bug: its traceback goes to the log
                self.log.error("agent run failed", exc_info=exc)
                raise _RunFailed(type(exc).__name__, one_line(str(exc)))
            raise _RunFailed(shown.ename, one_line(shown.message), shown.trust_folder)
        run = task.result()
        self._last_output = run.reply or run.error
        if by_text and path is not None:
            self._tell_count(run.execution_count)
        if run.status == "error":
            if display.errors:
                err = display.errors[-1]
                return self._error(err["ename"], one_line(err["evalue"]))
            # a [code] cell's traceback went to stderr, a failed tool call is a [tool]
            # result: an error output only when nothing was shown
            ename = run.error_type or "Error"
            reason = one_line(run.error or "failed")
            return self._error(ename, reason.removeprefix(f"{ename}: "),
                               publish=not display.shown)
        if run.proposed and conversation.nb_id is not None:
            from jupyter_percent_agent import trust

            # the labextension inserts them under the message, and runs them when the
            # user's config says auto_run for this folder; it finds the message by the id it
            # sent (a UUID for a cell added there, not its short form)
            self._outcome.proposed = {
                "after": cell_id if cell_id is not None else conversation.nb_id,
                "auto_run": trust.auto_runs(folder),
                "cells": [{"code": code, "language": lang} for lang, code in run.proposed]}
        return self._ok()

    def _tell_count(self, count: int | None) -> None:
        """Give a client that names no cell (nbclient) the cell's execution count as ``tce
        exec`` writes it: a ``[code]`` cell's kernel's, none for a message, a task, a tool
        call or a code cell the sandbox ran. nbclient takes the count of every iopub message
        that carries one, and ignores the update of a display it never showed (as JupyterLab
        does), so this changes no output; the agent kernel's own count, which
        ``execute_input`` must carry, is not the cell's."""
        import uuid

        self.send_response(self.iopub_socket, "update_display_data", {
            "data": {}, "metadata": {}, "transient": {"display_id": uuid.uuid4().hex},
            "execution_count": count})

    def _conversation_of(self, code: str) -> tuple[Path | None, Withheld | None]:
        """The message file of the working folder this cell's text is in (``_finder``), and
        why trust is withheld when no message file confirms it."""
        from jupyter_percent_agent.errors import PercentAgentError
        from jupyter_percent_agent.kernel._finder import conversation_by_text

        ran = [r.source for r in self._memory.ran.values()]
        try:
            return conversation_by_text(Path.cwd(), code, ran)
        except PercentAgentError as exc:
            raise _RunFailed(exc.ename, one_line(str(exc))) from None

    def _ok(self) -> dict[str, Any]:
        return {"status": "ok", "execution_count": self.execution_count,
                "payload": [], "user_expressions": {}}

    def _error(self, ename: str, evalue: str, *, publish: bool = False) -> dict[str, Any]:
        from jupyter_percent_agent.masking import mask

        ename, evalue = mask(ename), mask(evalue)
        line = f"{ename}: {evalue}"
        self._last_output = line
        if publish:
            self.send_response(self.iopub_socket, "error",
                               {"ename": ename, "evalue": evalue, "traceback": [line]})
        return {"status": "error", "execution_count": self.execution_count, "ename": ename,
                "evalue": evalue, "traceback": [line]}
