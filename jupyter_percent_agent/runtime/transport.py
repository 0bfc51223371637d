"""How a turn reaches the model: an object the front end passes in.

- ``LocalTransport``: calls from this process. ``warm_up()`` starts importing what the
  environment agent's first call needs (``models.prewarm``: the HTTP client for a call
  straight to an OpenAI-compatible endpoint, else litellm and, with ``deep=True``, its HTTP
  stack and a tokenizer) on a worker thread while the user is still typing; ``ready()`` waits
  for that import (shielded, so cancelling a turn never cancels the import the next one
  waits for).
- ``HelperTransport``: the warm helper process (``runtime.helper``) when one runs for this
  environment, else its ``LocalTransport`` (and, for a call that needs litellm, a helper is
  started for next time; a call straight to an OpenAI-compatible endpoint costs little more
  here than through a helper, so none is started for it).

Both count tokens too, so that fitting a history to a context window never imports litellm
into a process that hands its calls to the helper.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Protocol

from jupyter_percent_agent.runtime import helper, models
from jupyter_percent_agent.runtime.events import OnEvent, ignore
from jupyter_percent_agent.runtime.models import CallResult, CallSpec


class Transport(Protocol):
    """What the runtime needs from whatever carries its model calls."""

    async def complete(self, spec: CallSpec, on_event: OnEvent = ignore) -> CallResult: ...

    def count(self, model: str, messages: list[dict[str, Any]]) -> list[int]: ...

    def warm_up(self) -> None: ...

    async def ready(self) -> None: ...


class LocalTransport:
    """Model calls in this process (``models.complete``)."""

    def __init__(self, *, deep: bool = False) -> None:
        self.deep = deep
        self._lock = threading.Lock()
        self._warming: threading.Thread | None = None
        self._done = threading.Event()
        self._failed: BaseException | None = None

    def warm_up(self) -> None:
        """Start the imports of ``models.prewarm`` on a worker thread (once; again after a
        failure)."""
        with self._lock:
            if self._warming is not None and (self._failed is None or not self._done.is_set()):
                return
            self._done.clear()
            self._failed = None
            self._warming = threading.Thread(target=self._warm, name="model-client-import",
                                             daemon=True)
            self._warming.start()

    def _warm(self) -> None:
        try:
            models.prewarm(deep=self.deep)
        except BaseException as exc:  # reported by the call that needs it
            self._failed = exc
        finally:
            self._done.set()

    async def ready(self) -> None:
        """Wait until the imports are done (starting them if nobody did)."""
        if self._done.is_set() and self._failed is None:  # every call after the first
            return
        self.warm_up()
        await asyncio.shield(asyncio.get_running_loop().run_in_executor(None, self._done.wait))

    @property
    def warming(self) -> bool:
        """Whether the import was started (a test's way to see the preload happen)."""
        return self._warming is not None

    async def complete(self, spec: CallSpec, on_event: OnEvent = ignore) -> CallResult:
        return await models.complete(spec, on_event)

    def count(self, model: str, messages: list[dict[str, Any]]) -> list[int]:
        return models.count_tokens(model, messages)


_default: LocalTransport | None = None


def default_transport() -> LocalTransport:
    """The transport of callers that pass none: one per process, so that the client's import
    is started (on one thread) and waited for once, not once per turn. A batch of task runs
    makes a thousand turns."""
    global _default
    if _default is None:
        _default = LocalTransport()
    return _default


def command_transport() -> HelperTransport | LocalTransport:
    """The transport of a command (``tce chat``, ``tce exec``): the user's warm helper, unless
    ``PERCENT_AGENT_WARM`` turns it off, else this process."""
    return HelperTransport() if helper.enabled() else LocalTransport()


class HelperTransport:
    """The warm helper process when one runs; otherwise this process (``fallback``).

    ``wait``: seconds a call that needs litellm waits for a helper that is starting, rather
    than importing litellm here. A long-lived process (the kernel) sets it, and ``warm_up``
    then starts the helper instead of importing litellm: every kernel and ``tce`` of the
    environment share that one helper, and no kernel holds litellm's hundred-odd megabytes.
    """

    def __init__(self, fallback: LocalTransport | None = None, *, wait: float = 0.0) -> None:
        self.fallback = fallback or LocalTransport()
        self.wait = wait

    @property
    def helper_running(self) -> bool:
        try:
            return helper.socket_path().exists()
        except OSError:
            return False

    def warm_up(self) -> None:
        if self.helper_running:
            return
        if self.wait and models.environment_needs_litellm():
            helper.start()
        else:  # this process will make the call: import its client now
            self.fallback.warm_up()

    async def ready(self) -> None:
        if self.fallback.warming:
            await self.fallback.ready()

    async def complete(self, spec: CallSpec, on_event: OnEvent = ignore) -> CallResult:
        if self.helper_running or not models.goes_direct(spec):
            result = await helper.request(spec, on_event)  # none running: one is started
            if result is None and self.wait and await helper.wait(self.wait):
                result = await helper.request(spec, on_event)
            if result is not None:
                return result
        await self.fallback.ready()
        return await self.fallback.complete(spec, on_event)

    def count(self, model: str, messages: list[dict[str, Any]]) -> list[int]:
        counts = helper.count(model, messages)
        return counts if counts is not None else self.fallback.count(model, messages)
