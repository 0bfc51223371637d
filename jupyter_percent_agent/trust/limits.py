"""Budgets only go down: one rule for every number a file or a SOP folder sets.

A file may ask for less than the user's limit, never for more; a file in a trusted folder may
ask for more, up to a hard cap. The user's limits are the defaults below unless their
``config.toml`` (or, for the model timeout, ``PERCENT_AGENT_TIMEOUT``) says otherwise. What a
run uses, and whether the file's number was lowered and by what, is a :class:`Bounded`, so
that ``tce list`` and a task's transcript can show it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limit:
    """A budget: its name (the key in ``config.toml`` and in files), what it bounds, the
    user's limit when their config names none (None: none of ours below the hard cap), and
    the hard cap even a trusted folder stays under."""

    name: str
    what: str
    default: int | float | None
    hard: int | float
    integer: bool = True
    env: str | None = None  # an environment variable that is the user's limit when set
    least: int = 1          # 1: above 0; 0: 0 too (no retries is a choice)


LIMITS: dict[str, Limit] = {limit.name: limit for limit in (
    Limit("max_steps", "ATTP steps for one message", 8, 50),
    Limit("task_max_steps", "steps of one task run", 100, 1000),
    Limit("retries", "retries of a failed task step", 3, 10, least=0),
    Limit("timeout", "seconds one model call may take", 120, 600, integer=False,
          env="PERCENT_AGENT_TIMEOUT"),
    Limit("tool_timeout", "seconds the tools of a [tool_call] cell may run", 30, 600,
          integer=False),
    Limit("tool_limit", "tools described to the model for one message", 12, 100),
    Limit("max_output_tokens", "tokens of one reply", None, 200_000),
    Limit("code_output_bytes", "bytes of outputs one [code] cell saves", 1_000_000, 100_000_000),
    Limit("context_window", "tokens of history sent with one message", None, 10_000_000),
)}


def number(value: Any, *, integer: bool, least: int = 1) -> int | float | None:
    """``value`` (a number, or text that is one: ``timeout="5"``) as a number of the right
    kind above 0 (``least=0``: or 0), else None. A bool is no number."""
    if isinstance(value, str):
        try:
            value = float(value) if not integer else int(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if integer and not isinstance(value, int):
        return None
    if value != value or value < 0 or (value == 0 and least > 0):  # NaN, below the least
        return None
    return value


def user_limit(name: str, limits: Mapping[str, int | float],
               env: Mapping[str, str] | None = None) -> int | float | None:
    """The user's limit for ``name``: their environment variable, their config, else the
    default (None: none of theirs); never above the hard cap."""
    limit = LIMITS[name]
    env = os.environ if env is None else env
    value: Any = limits.get(name, limit.default)
    if limit.env and env.get(limit.env):
        value = number(env[limit.env], integer=limit.integer, least=limit.least) or value
    return None if value is None else min(value, limit.hard)


@dataclass(frozen=True)
class Bounded:
    """The value a run uses for a budget, and the file's own when it was lowered."""

    name: str
    value: int | float | None  # None: no limit of ours (the provider's own, or none)
    asked: Any = None          # what the file said (None: nothing)
    lowered_to: str = ""       # "your limit" or "the hard cap" when the file's number was lowered

    @property
    def lowered(self) -> bool:
        return bool(self.lowered_to)

    def describe(self) -> str:
        """``max_steps 8 (asked 100; your limit)``, or ``max_steps 8``."""
        shown = f"{self.name} {_show(self.value)}"
        return f"{shown} (asked {_show(self.asked)}; {self.lowered_to})" if self.lowered \
            else shown


def _show(value: Any) -> str:
    if value is None:
        return "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


def clamp(name: str, asked: Any, *, trusted: bool, limits: Mapping[str, int | float],
          env: Mapping[str, str] | None = None) -> Bounded:
    """What a run uses for the budget ``name`` when a file asks for ``asked`` (``trusted``:
    its folder is): the user's limit when the file says nothing (or nothing usable); the
    file's number when it is lower; else the user's limit, or in a trusted folder the hard
    cap. ``limits``: the user's own (``Config.limits``)."""
    limit = LIMITS[name]
    mine = user_limit(name, limits, env)
    wanted = number(asked, integer=limit.integer, least=limit.least)
    if wanted is None:
        return Bounded(name, mine)
    cap = limit.hard if mine is None else mine
    if wanted <= cap:
        return Bounded(name, wanted, asked)
    if trusted:
        if wanted <= limit.hard:
            return Bounded(name, wanted, asked)
        return Bounded(name, limit.hard, asked, "the hard cap")
    return Bounded(name, cap, asked, "your limit" if mine is not None else "the hard cap")
