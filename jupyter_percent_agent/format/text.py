"""Text that can always be written: lone UTF-16 surrogates made visible instead of fatal.

A str can hold a lone surrogate (``"\\ud800"``): JSON decoders pass ``\\ud800`` escapes
through (a model's stream cut between the two halves of an emoji), and ``chr(55296)`` is one
call away in any tool. UTF-8 cannot encode it, so writing or printing such text raises
``UnicodeEncodeError``, and a save that raises loses the reply and every tool step with it.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["escape_surrogates", "escape_surrogates_in"]

_LONE: Final = re.compile("[\ud800-\udfff]")


def _visible(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def escape_surrogates(text: str) -> str:
    """``text`` with surrogate pairs joined into their character and every lone surrogate
    written as a visible escape (``\\ud800``, six characters), so that it encodes as UTF-8.

    Text with no surrogate (nearly all) is returned as is, at the cost of an ASCII check or
    one UTF-8 encoding.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return text
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE.sub(_visible, joined)


def escape_surrogates_in(value: Any) -> Any:
    """A JSON value (attributes) with :func:`escape_surrogates` applied to every string in it,
    keys included; anything else is returned as is."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {escape_surrogates_in(k): escape_surrogates_in(v) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_surrogates_in(v) for v in value]
    return value
