"""The compiled format core: which modules it holds, where it lives, when it may be used.

``make setup`` compiles the hot modules of the format core with mypyc into ``_compiled/``
beside them (``scripts/compile_format.py``). The Python sources stay the reference: the
package puts ``_compiled/`` first on its ``__path__`` only while the stamp written at build
time still matches every source, byte for byte, and the running interpreter. An edited
source, a ``git pull`` that changed one, or another Python version means the sources are
used again, never a stale build; ``PERCENT_AGENT_PURE_PYTHON=1`` asks for them outright.

Standard library only, and cheap: it runs on every import of the format package.
"""

from __future__ import annotations

import json
import os
import sys
import zlib

__all__ = ["BUILD_DIR", "MODULES", "STAMP", "stamp", "usable"]

# The modules the read and write paths spend their time in. errors.py stays Python, so that
# FormatError is one class whichever core raised it; model.py is not on those paths.
MODULES = ("attrs", "lines", "parse", "notebook", "emit")
BUILD_DIR = "_compiled"
STAMP = "stamp.json"
_PURE_ENV = "PERCENT_AGENT_PURE_PYTHON"


def stamp(source_dir: str) -> dict:
    """What a build from ``source_dir`` is valid for: each source's CRC and the interpreter."""
    sources = {}
    for name in MODULES:
        with open(os.path.join(source_dir, name + ".py"), "rb") as f:
            sources[name] = zlib.crc32(f.read())
    return {"python": sys.implementation.cache_tag, "sources": sources}


def usable(source_dir: str) -> str | None:
    """The build directory to put first on the package path, or None to use the sources."""
    if os.environ.get(_PURE_ENV, "") not in ("", "0"):
        return None
    built = os.path.join(source_dir, BUILD_DIR)
    try:
        with open(os.path.join(built, STAMP), encoding="utf-8") as f:
            recorded = json.load(f)
        current = stamp(source_dir)
    except (OSError, ValueError):
        return None
    return built if recorded == current else None
