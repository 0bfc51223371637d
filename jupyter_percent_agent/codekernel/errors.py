"""What can go wrong running a ``[code]`` cell in a code kernel."""

from __future__ import annotations

from jupyter_percent_agent.errors import Kind, PercentAgentError


class KernelError(PercentAgentError, RuntimeError):
    """A code kernel did not start, or died."""

    error_kind = Kind.TOOL


class NoKernelSpec(KernelError, LookupError):
    """No installed kernelspec runs the cell's language."""


class KernelDied(KernelError):
    """The kernel died while it ran a cell (the next run starts a new one)."""


class InputUnavailable(KernelError):
    """A cell asked for input (``input()``, ``getpass()``) and nothing can answer it (``tce
    exec`` with no terminal); the cell was interrupted."""
