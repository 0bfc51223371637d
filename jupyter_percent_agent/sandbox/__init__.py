"""Runs model-written code in a separate, limited process (RestrictedPython inside).

``execute(code, tools=..., defined=..., timeout=..., memory_mb=..., on_chunk=...)`` returns a
``SandboxResult``; ``execute_async`` is the same for asyncio code and is cancellable (the
worker's process group is killed at once). Registry tools run in the calling process and are
reached from the sandbox over a JSON message bridge. Tools written in a message file
(``DefinedTool``, from ``[tool]`` cells) are untrusted code: they run in the sandbox too, under
the same policy and limits, and ``call_defined`` calls one directly (``[tool_call]`` cells).
Importing this package is cheap: RestrictedPython is imported only in the worker processes,
the tools package only when a run or a ``DefinedTool`` needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jupyter_percent_agent.lazy import lazy_getattr

from ._names import ALLOWED_MODULES
from ._types import ErrorInfo, SandboxResult, ToolCallRecord

if TYPE_CHECKING:  # pragma: no cover
    from ._defined import DefinedTool
    from ._runner import call_defined, call_defined_async, execute, execute_async

__all__ = [
    "ALLOWED_MODULES",
    "DefinedTool",
    "ErrorInfo",
    "SandboxResult",
    "ToolCallRecord",
    "call_defined",
    "call_defined_async",
    "execute",
    "execute_async",
    "set_pool_size",
    "shutdown_pool",
    "warm_pool",
]


__getattr__ = lazy_getattr(__name__, {
    "execute": "_runner", "execute_async": "_runner", "call_defined": "_runner",
    "call_defined_async": "_runner", "DefinedTool": "_defined"})


def warm_pool(timeout: float = 10.0) -> bool:
    """Start the worker pool now and wait until it is full (True if it filled in time)."""
    from ._pool import POOL

    return POOL.wait_full(timeout)


def set_pool_size(size: int) -> None:
    """Number of pre-started workers to keep (default 2; 0 starts a fresh process per run)."""
    from ._pool import POOL

    POOL.resize(size)


def shutdown_pool() -> None:
    """Kill the idle pre-started workers (also done at interpreter exit)."""
    from ._pool import POOL

    POOL.shutdown()
