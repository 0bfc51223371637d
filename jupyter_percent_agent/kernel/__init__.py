"""The agent kernel: a Jupyter kernel whose cells are messages.

Kernelspec ``percent-agent`` (display name "Agent", language ``markdown``), installed with the
package into ``share/jupyter/kernels/percent-agent``; ``python -m jupyter_percent_agent.kernel``
starts it. The kernel class is ``jupyter_percent_agent.kernel.kernel.AgentKernel``. Importing
this package imports nothing (no ipykernel, litellm, nbformat or jupytext).
"""

from __future__ import annotations

from pathlib import Path

KERNEL_NAME = "percent-agent"
DISPLAY_NAME = "Agent"


def kernelspec_dir() -> Path:
    """The folder holding this package's ``kernel.json`` (to copy or install it)."""
    return Path(__file__).parent / "kernelspec" / KERNEL_NAME
