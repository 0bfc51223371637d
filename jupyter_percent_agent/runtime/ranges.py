"""Cell selections on the command line: ``[2..4]``, ``OTHER/[1..n]``, ``[1,3,5..7]``.

Indices are 1-based positions of cells in file order, as ``tce list`` shows them. ``n`` is
the last cell, ``-k`` counts from the end. A selection without a path refers to the file
being chatted in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jupyter_percent_agent.errors import Kind, PercentAgentError

_SPEC = re.compile(r"^(?P<path>.*?)/?(?:item)?\[(?P<ranges>[^\]]*)\]$")


class SelectionError(PercentAgentError, ValueError):
    """A selection that does not parse."""

    error_kind = Kind.USAGE


@dataclass(frozen=True)
class Selection:
    """``path`` (None = this file) and the index ranges, as written."""

    path: str | None
    ranges: tuple[tuple[str, str], ...]
    text: str

    def indices(self, count: int) -> list[int]:
        """The selected 1-based indices that exist among ``count`` cells, in order."""
        out: list[int] = []
        for lo, hi in self.ranges:
            a, b = _index(lo, count), _index(hi, count)
            out.extend(i for i in range(a, b + 1) if 1 <= i <= count and i not in out)
        return out


def _index(token: str, count: int) -> int:
    if token in ("n", "N", "$"):
        return count
    value = int(token)
    return count + 1 + value if value < 0 else value


def parse_selection(text: str) -> Selection:
    """Parse ``[1..3]``, ``OTHER/[1..3]``, ``OTHER/item/[2]`` or a bare ``3``/``2..4``."""
    raw = text.strip()
    if not raw:
        raise SelectionError("empty selection")
    m = _SPEC.match(raw)
    if m:
        path, body = m.group("path").rstrip("/") or None, m.group("ranges")
        if path and path.endswith("/item"):
            path = path[: -len("/item")]
    elif re.fullmatch(r"[-\dnN$.,\s]+", raw):
        path, body = None, raw
    elif re.search(r"\[[-\dnN$.,\s]*$", raw):  # OTHER/[1..3 with its bracket left open
        raise SelectionError(f"{text!r}: the cell range is not closed (write [1..3] or "
                             "OTHER/[1..3])")
    else:  # a whole other file
        return Selection(raw, (("1", "n"),), raw)
    ranges: list[tuple[str, str]] = []
    for part in body.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("..")
        lo, hi = lo.strip() or "1", (hi.strip() or "n") if sep else lo.strip()
        for tok in (lo, hi):
            if not re.fullmatch(r"-?\d+|[nN$]", tok):
                raise SelectionError(f"{text!r}: {tok!r} is not an index (use 1, n or -1)")
        ranges.append((lo, hi))
    if not ranges:
        raise SelectionError(f"{text!r} selects nothing")
    return Selection(path, tuple(ranges), raw)
