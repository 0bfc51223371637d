"""Code kernels: ``[code]`` cells run in a real Jupyter kernel of their language.

Only for files in a folder the user trusted (the runtime checks; see docs/security.md). A
notebook's ``CodeKernels`` starts one kernel per language with ``jupyter_client`` in the
notebook's folder and keeps it for the session; ``Collector`` turns the kernel's messages
into the format's outputs (``[python]`` streams, rich results by MIME type, ``[error]``),
ANSI stripped, under a byte cap. Heavy imports (``jupyter_client``) happen on first use.
"""

from __future__ import annotations

from jupyter_percent_agent.codekernel.errors import (
    InputUnavailable,
    KernelDied,
    KernelError,
    NoKernelSpec,
)
from jupyter_percent_agent.codekernel.outputs import Collector, strip_ansi
from jupyter_percent_agent.codekernel.session import AnswerInput, CodeKernel, CodeKernels
from jupyter_percent_agent.codekernel.specs import kernel_name

__all__ = [
    "AnswerInput",
    "CodeKernel",
    "CodeKernels",
    "Collector",
    "InputUnavailable",
    "KernelDied",
    "KernelError",
    "NoKernelSpec",
    "kernel_name",
    "strip_ansi",
]
