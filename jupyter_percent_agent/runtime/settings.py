"""The numbers a model call takes from the environment (``PERCENT_AGENT_RETRIES``,
``PERCENT_AGENT_BACKOFF``, ``PERCENT_AGENT_TIMEOUT``), read in one place: a value that is
no such number is one line naming the variable, checked when a turn is planned, before
anything is written or called (not a traceback in the middle of the call, nor a silent
default)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.trust.limits import number

__all__ = ["SettingError", "check_environment", "env_number"]

# name -> (a whole number?, the least value, what it must be)
NUMBERS: dict[str, tuple[bool, int, str]] = {
    "PERCENT_AGENT_RETRIES": (True, 0, "not a whole number of retries, 0 or more"),
    "PERCENT_AGENT_BACKOFF": (False, 0, "not a number of seconds, 0 or more"),
    "PERCENT_AGENT_TIMEOUT": (False, 1, "not a number of seconds above 0"),
}


class SettingError(PercentAgentError, ValueError):
    """An environment variable that should hold a number and does not."""

    error_kind = Kind.USAGE


def env_number(name: str, default: float, env: Mapping[str, str] | None = None) -> float:
    """The number ``name`` holds in ``env`` (the process's by default), ``default`` when it
    is unset or blank; ``SettingError`` when it is no such number."""
    env = os.environ if env is None else env
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    integer, least, what = NUMBERS[name]
    value = number(raw.strip(), integer=integer, least=least)
    if value is None:
        raise SettingError(f"{name}={raw!r}: {what}")
    return value


def check_environment(env: Mapping[str, str] | None = None) -> None:
    """Raise ``SettingError`` for the first of these variables that holds no such number."""
    for name in NUMBERS:
        env_number(name, 0, env)
