"""Fresh per-run stand-ins for the allow-listed modules (imported only inside the child).

The real modules must never be handed to sandboxed code: ``json.codecs``,
``statistics.sys``, ``re.enum``, ``re.functools`` and ``statistics.random`` are public
attributes leading to files, ``sys.modules`` and the real builtins. Each facade is a new
module object holding only the listed functions and constants; ``random`` is bound to a
``random.Random`` instance of its own.
"""

from __future__ import annotations

import datetime as _datetime
import json as _json
import math as _math
import random as _random
import re as _re
import statistics as _statistics
import types
from collections.abc import Callable
from typing import Any

_MATH_NAMES = tuple(n for n in dir(_math) if not n.startswith("_"))

_RE_FUNCTIONS = (
    "compile", "search", "match", "fullmatch", "split", "findall", "finditer", "sub",
    "subn", "escape", "error",
)  # fmt: skip
_RE_FLAGS = (
    "A", "ASCII", "I", "IGNORECASE", "M", "MULTILINE", "S", "DOTALL", "X", "VERBOSE",
)  # fmt: skip

_RANDOM_METHODS = (
    "seed", "random", "uniform", "triangular", "randint", "randrange", "choice", "choices",
    "shuffle", "sample", "gauss", "normalvariate", "lognormvariate", "expovariate",
    "vonmisesvariate", "gammavariate", "betavariate", "paretovariate", "weibullvariate",
    "getrandbits", "randbytes",
)  # fmt: skip

_STATISTICS_NAMES = (
    "mean", "fmean", "geometric_mean", "harmonic_mean", "median", "median_low", "median_high",
    "median_grouped", "mode", "multimode", "quantiles", "pstdev", "pvariance", "stdev",
    "variance", "covariance", "correlation", "linear_regression", "StatisticsError",
)  # fmt: skip

_DATETIME_NAMES = ("date", "datetime", "time", "timedelta", "timezone", "tzinfo", "MINYEAR",
                   "MAXYEAR")  # fmt: skip
_JSON_DUMPS_OPTIONS = frozenset({"indent", "sort_keys", "ensure_ascii", "separators", "default",
                                 "allow_nan", "skipkeys"})  # fmt: skip
_JSON_LOADS_OPTIONS = frozenset({"object_hook", "parse_float", "parse_int",
                                 "object_pairs_hook"})  # fmt: skip


def _module(name: str, attrs: dict[str, Any]) -> types.ModuleType:
    module = types.ModuleType(name, f"Sandbox stand-in for the {name} module.")
    for key, value in attrs.items():
        setattr(module, key, value)
    return module


def _checked_options(fn: Callable[..., Any], allowed: frozenset[str], label: str) -> Any:
    def call(value: Any, **options: Any) -> Any:
        extra = set(options) - allowed
        if extra:
            raise TypeError(f"{label}() does not accept {', '.join(sorted(extra))} here")
        return fn(value, **options)

    call.__name__ = label.rsplit(".", 1)[-1]
    return call


def _now(tz: Any = None) -> _datetime.datetime:
    return _datetime.datetime.now(tz)


def _parse(text: str) -> _datetime.datetime:
    return _datetime.datetime.fromisoformat(text)


def build_facades() -> dict[str, types.ModuleType]:
    """A new set of module facades (call once per run)."""
    rng = _random.Random()
    datetime_names = {n: getattr(_datetime, n) for n in _DATETIME_NAMES}
    datetime_names.update(UTC=_datetime.UTC, now=_now, parse=_parse)
    re_names = {n: getattr(_re, n) for n in _RE_FUNCTIONS}
    re_names.update({n: int(getattr(_re, n)) for n in _RE_FLAGS})
    return {
        "math": _module("math", {n: getattr(_math, n) for n in _MATH_NAMES}),
        "json": _module(
            "json",
            {
                "dumps": _checked_options(_json.dumps, _JSON_DUMPS_OPTIONS, "json.dumps"),
                "loads": _checked_options(_json.loads, _JSON_LOADS_OPTIONS, "json.loads"),
                "JSONDecodeError": _json.JSONDecodeError,
            },
        ),
        "datetime": _module("datetime", datetime_names),
        "re": _module("re", re_names),
        "random": _module("random", {n: getattr(rng, n) for n in _RANDOM_METHODS}),
        "statistics": _module(
            "statistics", {n: getattr(_statistics, n) for n in _STATISTICS_NAMES}
        ),
    }
