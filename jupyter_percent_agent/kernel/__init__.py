"""The agent kernel: a Jupyter kernel whose cells are messages.

Kernelspec ``percent-agent`` (display name "Agent", language ``markdown``), installed with the
package into ``share/jupyter/kernels/percent-agent``; ``python -m jupyter_percent_agent.kernel``
starts it. The kernel class is ``jupyter_percent_agent.kernel.kernel.AgentKernel``. Importing
this package imports only the format core (no ipykernel, litellm, nbformat or jupytext).
"""

from __future__ import annotations

from pathlib import Path

from jupyter_percent_agent.format import DEFAULT_KERNELSPEC
from jupyter_percent_agent.format.runner import AGENT_LANGUAGE_INFO

KERNEL_NAME: str = DEFAULT_KERNELSPEC["name"]
DISPLAY_NAME: str = DEFAULT_KERNELSPEC["display_name"]
# What the kernel answers in its kernel_info_reply, and JupyterLab then writes into the open
# notebook's ``metadata.language_info``. A message file does not keep it (the kernel says it on
# every start); the contents manager hands it to JupyterLab with the notebook, equal to this, so
# that the kernel's answer changes nothing and an unedited notebook is not marked modified.
LANGUAGE_INFO: dict[str, str] = dict(AGENT_LANGUAGE_INFO)

COMM_TARGET = "percent_agent"
"""The comm target a message notebook in JupyterLab opens to send its live state (``_comm``;
``labextension/src/kernelcomm.ts``)."""


def kernelspec_dir() -> Path:
    """The folder holding this package's ``kernel.json`` (to copy or install it)."""
    return Path(__file__).parent / "kernelspec" / KERNEL_NAME
