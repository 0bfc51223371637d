"""The namespace sandboxed code runs in (imported only inside the child).

Builtins: RestrictedPython's ``safe_builtins`` minus ``setattr``, ``delattr`` and ``MemoryError``,
plus the plain container and iteration builtins it leaves out. Never ``getattr``, ``type``,
``vars``, ``dir``, the real ``__import__``, ``open``, ``globals``, ``compile``. Guards: attribute
reads refuse ``_`` names, inspection attributes and ``str.format``; writes are allowed only on
dicts, lists, sets and instances of classes defined by the sandboxed code itself. One shared,
size-capped print collector for the whole run, so prints inside functions are kept.
"""

from __future__ import annotations

import _strptime  # noqa: F401  (INTERNAL_IMPORTS: loaded before any job)
import builtins
import operator
import re  # noqa: F401  (INTERNAL_IMPORTS)
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any

from RestrictedPython.Guards import (
    guarded_iter_unpack_sequence,
    guarded_unpack_sequence,
    safe_builtins,
)
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

_EXTRA_BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "list", "dict", "set", "frozenset", "tuple", "sorted", "zip", "min", "max", "sum",
        "enumerate", "any", "all", "reversed", "map", "filter", "iter", "next", "format",
        "ascii", "bin", "bytes",
    )
}  # fmt: skip
_REMOVED_BUILTINS = ("setattr", "delattr", "_getattr_", "MemoryError")  # see _policy
_FORMAT_METHODS = frozenset({"format", "format_map"})
_WRITABLE_TYPES = frozenset({dict, list, set})

_INPLACE = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow,
    "<<=": operator.ilshift, ">>=": operator.irshift, "&=": operator.iand,
    "|=": operator.ior, "^=": operator.ixor, "@=": operator.imatmul,
}  # fmt: skip


# C code reached from sandboxed code imports helpers through the calling frame's builtins:
# PyImport_Import looks up ``__import__`` there (date.strftime imports time, datetime.strptime
# _strptime, a compiled pattern's sub() with a template re). PyImport_Import calls __import__ only
# for its side effect and then reads sys.modules itself, so this hook loads nothing and hands
# nothing back: it succeeds, returning None, for these names once they are loaded (they are
# imported below, before any job), and refuses every other name. Sandboxed code cannot name
# __import__ at all (no "_" names); even if it could, it would get None.
INTERNAL_IMPORTS = frozenset({"time", "_strptime", "re"})


def _internal_import(name: object, *args: Any, **kwargs: Any) -> None:
    if type(name) is str and name in INTERNAL_IMPORTS and name in sys.modules:
        return None
    raise ImportError("import is not allowed in the sandbox")


def build_builtins() -> dict[str, Any]:
    """The ``__builtins__`` mapping of a run."""
    names = {k: v for k, v in safe_builtins.items() if k not in _REMOVED_BUILTINS}
    names.update(_EXTRA_BUILTINS)
    names["__import__"] = _internal_import
    return names


_CHECKED_NAMES: set[str] = set()  # names that passed every name-only check below


def guarded_getattr(obj: Any, name: str, default: Any = None) -> Any:
    """``_getattr_``: like RestrictedPython's ``safer_getattr_raise``, raising when missing."""
    if type(name) is str and name in _CHECKED_NAMES:
        return getattr(obj, name)
    if type(name) is not str:
        raise TypeError("attribute name must be a string")
    if name.startswith("_"):
        raise AttributeError(f'"{name}" is not allowed: names starting with "_" are private')
    if name in INSPECT_ATTRIBUTES:
        raise AttributeError(f'"{name}" is a restricted name')
    if name in _FORMAT_METHODS and (
        isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))
    ):
        raise NotImplementedError(
            "str.format() is not available in the sandbox; use f-strings or the % operator"
        )
    if name not in _FORMAT_METHODS and len(_CHECKED_NAMES) < 10_000:
        _CHECKED_NAMES.add(name)
    return getattr(obj, name)


class _ReadOnly:
    """What ``_write_`` hands back for an object sandboxed code may not modify."""

    __slots__ = ("_name",)

    def __init__(self, ob: Any) -> None:
        object.__setattr__(self, "_name", type(ob).__name__)

    def _refuse(self, *args: Any) -> None:
        raise TypeError(f"a {self._name} object cannot be modified in the sandbox")

    __setattr__ = __delattr__ = __setitem__ = __delitem__ = _refuse


class Namespace:
    """Per-run state behind the guards: the classes the code defined, the print collector."""

    def __init__(
        self,
        max_output: int,
        on_output_overflow: Callable[[str], None],
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self.own_classes: weakref.WeakSet[type] = weakref.WeakSet()
        self.printer = SharedPrinter(max_output, on_output_overflow, on_output)

    def make_class(self, name: str, bases: tuple[type, ...], body: dict[str, Any]) -> type:
        """``__metaclass__``: classes the code defines get attribute writes on instances."""
        cls = type(name, bases, body)
        self.own_classes.add(cls)
        return cls

    def write_guard(self, ob: Any) -> Any:
        """``_write_``: the object itself when writable, else a refusing stand-in."""
        kind = type(ob)
        if kind in _WRITABLE_TYPES or kind in self.own_classes:
            return ob
        return _ReadOnly(ob)

    def globals(self, extra: dict[str, Any]) -> dict[str, Any]:
        """A fresh globals dict for ``exec`` with builtins, guards and ``extra`` names."""
        printer = self.printer
        namespace = {
            "__builtins__": build_builtins(),
            "__name__": "sandbox",
            "__metaclass__": self.make_class,
            "_getattr_": guarded_getattr,
            "_getitem_": operator.getitem,
            "_getiter_": iter,
            "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
            "_unpack_sequence_": guarded_unpack_sequence,
            "_write_": self.write_guard,
            "_inplacevar_": inplacevar,
            "_apply_": apply,
            "_print_": lambda _getattr_=None: printer,
        }
        namespace.update(extra)
        return namespace


def inplacevar(op: str, target: Any, value: Any) -> Any:
    """``_inplacevar_``: ``x += y`` and friends on plain names."""
    try:
        fn = _INPLACE[op]
    except KeyError:
        raise SyntaxError(f"operator {op} is not supported") from None
    return fn(target, value)


def apply(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``_apply_``: calls written with ``*args`` or ``**kwargs``."""
    return fn(*args, **kwargs)


class SharedPrinter:
    """One print collector for the whole run (RestrictedPython's makes one per function).

    New text is also handed to ``on_output`` at most every ``FLUSH_INTERVAL`` seconds, so that
    the parent keeps what was printed before a run is killed at its wall clock.
    """

    FLUSH_INTERVAL = 0.05

    def __init__(
        self,
        max_chars: int,
        on_overflow: Callable[[str], None],
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._max = max_chars
        self._on_overflow = on_overflow
        self._on_output = on_output
        self._flushed = 0  # parts already handed to on_output
        self._last_flush = -1.0

    def _call_print(
        self, *objects: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None,
        flush: bool = False,
    ) -> None:  # fmt: skip
        if file is not None:
            raise TypeError("print(file=...) is not available in the sandbox")
        sep = " " if sep is None else sep
        end = "\n" if end is None else end
        if type(sep) is not str or type(end) is not str:
            raise TypeError("sep and end must be strings")
        # Piece by piece, stopping past the cap: print(*['y' * 1000] * 100000) must not build
        # 100 MB of text before it finds out.
        room = self._max - self._size
        pieces: list[str] = []
        length = 0
        for i, obj in enumerate(objects):
            pieces.append(sep + str(obj) if i else str(obj))
            length += len(pieces[-1])
            if length > room:
                break
        else:
            pieces.append(end)
        text = "".join(pieces)
        self._size += len(text)
        if self._size > self._max:
            room = self._max - (self._size - len(text))
            self._parts.append(text[: max(room, 0)])
            self._on_overflow(self.text())
        self._parts.append(text)
        if self._on_output is not None:
            now = time.monotonic()
            if now - self._last_flush >= self.FLUSH_INTERVAL:
                self._last_flush = now
                new = "".join(self._parts[self._flushed :])
                self._flushed = len(self._parts)
                self._on_output(new)

    def text(self) -> str:
        return "".join(self._parts)

    def __call__(self) -> str:
        return self.text()
