"""What a notebook's namespaced metadata (``percent_agent``) may give the text, checked as the
writer writes it.

The writer takes a record's heading level, ``[TYPE:SUB](LINK)``, footnote id and the kept
attributes of streams and errors from that entry, which a client, a tool or a hand-edited
``.ipynb`` may have filled with anything. A value no heading or footnote can hold is refused
with a FormatError naming the cell or output and the key, so the writer never writes a file
its reader refuses, nor fails with a TypeError half-way. The writer's defaults always pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .attrs import NS, is_type_head
from .errors import FormatError
from .record import CELL_TYPE_OF

__all__ = ["CELL_CHECKED", "HEAD_TYPES", "attrs_of", "bad", "check_cell", "check_output"]

_CODE_KEYS: Final = ("lang", "pre", "post", "fence")
#: The keys of an input cell's entry that :func:`check_cell` checks beside its type: a cell
#: of a known type whose entry has none of them needs no call.
CELL_CHECKED: Final = frozenset({"id", "level", "sub", "link", *_CODE_KEYS})
#: The ``[TYPE]`` names of outputs (no SUB, no LINK) checked so far: an output of one whose
#: entry holds only its type and id needs no call to :func:`check_output`.
HEAD_TYPES: Final[set[str]] = set()


def bad(where: str, key: str, value: object, want: str) -> FormatError:
    """The error for ``NS.key`` of ``where`` holding ``value`` where ``want`` is needed."""
    return FormatError(f"{where}: {NS}.{key} must be {want}, not {value!r:.60}")


def _heading(where: str, level: object, typ: object, sub: object, link: object) -> None:
    """A heading level (None: the default) and ``[TYPE:SUB](LINK)`` the reader reads back."""
    if level is not None and (type(level) is not int or not 0 < level < 6):
        raise bad(where, "level", level, "a heading level from 1 to 5")
    if not is_type_head(typ, sub, link):
        raise bad(where, "type", (typ, sub, link), "words a [TYPE:SUB](LINK) heading holds "
                  "(type, sub, link: no blank, bracket or parenthesis)")


def check_cell(cell: Mapping, ns: Mapping, typ: object) -> None:
    """An input cell's entry: its ``[type]`` one the reader takes, its heading one it reads
    back, its id and the text kept around a ``[code]`` fence strings."""
    where = f"cell {cell.get('id')!r}"
    if type(typ) is not str or typ not in CELL_TYPE_OF:
        raise bad(where, "type", typ, "one of " + ", ".join(sorted(CELL_TYPE_OF)))
    for key in ("id", *_CODE_KEYS):
        value = ns.get(key)
        if value is not None and type(value) is not str:
            raise bad(where, key, value, "a string")
    _heading(where, ns.get("level") or None, typ, ns.get("sub"), ns.get("link"))


def check_output(info: Mapping, parent: str, index: int, typ: object) -> None:
    """The entry of output ``index`` under ``[^parent]``, whose ``[type]`` is ``typ``: its id
    a string, its heading one the reader reads back."""
    where = f"output {index} of [^{parent}]"
    given = info.get("id")
    if given is not None and type(given) is not str:
        raise bad(where, "id", given, "a string")
    sub, link = info.get("sub"), info.get("link")
    _heading(where, info.get("level") or None, typ, sub, link)
    if sub is None and link is None and len(HEAD_TYPES) < 1024:
        HEAD_TYPES.add(typ)  # type: ignore[arg-type]


def attrs_of(info: Mapping, ref: str) -> Mapping[str, Any]:
    """The flat attributes kept for a stream or an error (``info["attrs"]``): a mapping."""
    attrs = info.get("attrs") or {}
    if not isinstance(attrs, Mapping):
        raise bad(f"[^{ref}]", "attrs", attrs, "a mapping")
    return attrs
