"""The one rule for on/off environment variables (``PERCENT_AGENT_WARM=0`` and friends).

Unset means the default; ``""``, ``0``, ``false``, ``no`` and ``off`` (any case, spaces
ignored) mean off; anything else means on. Standard library only: the format core and the
command line read flags before anything heavy is imported. (The jupytext start-up hook keeps
its own copy of this rule: it runs in every interpreter and may not import this package.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping

OFF = frozenset({"", "0", "false", "no", "off"})


def env_flag(name: str, default: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """Whether the flag ``name`` is on."""
    value = (os.environ if env is None else env).get(name)
    if value is None:
        return default
    return value.strip().lower() not in OFF
