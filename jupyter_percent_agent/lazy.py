"""A package's public names, each imported from its module on first use (PEP 562), so that
importing the package imports none of them."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: ``names`` maps each public name to the
    submodule of ``package`` that defines it; any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(f"{package}.{names[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
