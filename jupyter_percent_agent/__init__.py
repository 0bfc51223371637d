"""jupyter-percent-agent: agent conversations kept as Markdown message files (`.msg.md`).

The top-level names are loaded lazily so that ``import jupyter_percent_agent`` costs
almost nothing: no nbformat, jupytext or litellm is imported until it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_getattr

__version__ = "0.1.0"

__all__ = ["FormatError", "__version__", "read", "reads", "write", "writes"]

if TYPE_CHECKING:  # pragma: no cover
    from .format import FormatError, read, reads, write, writes

__getattr__ = lazy_getattr(__name__, dict.fromkeys(("FormatError", "read", "reads", "write",
                                                    "writes"), "format"))
