"""How a run ended, one vocabulary for every kind of run: a message turn, a code or tool cell,
a sandbox run and each tool call in it, a model call, a task step, a validation's verdict, a
``[task]`` cell and a whole task run.

:class:`RunStatus` (``ok``, ``error``, ``interrupted``) says how it ended; a run stopped by one
of its limits says which in a :class:`Reason` (``timeout``, ``memory``, ``cpu``,
``output_limit``) beside an ``error`` status. Nothing keeps a status word of its own: the words
a user reads or a file keeps are chosen where the value leaves the process, from the tables
here, so that files and scripts made before keep working:

- a whole task run is written and printed (``tce run --json``, ``results.jsonl``, the
  transcript's ``task_state``) with :data:`RUN_WORDS` (``succeeded``, ``failed``,
  ``interrupted``);
- a verdict is written (the context a validator fills, its ``[verdict]`` output) with
  :data:`VERDICT_WORDS` (``pass``, ``fail``);
- a sandbox run's output in a message file says :func:`sandbox_word` (``success``,
  ``error``, or the limit: ``timeout``...).

:func:`read_status` reads every word written before. Standard library only: the sandbox's
worker imports it. A new kind of run returns an :class:`Outcome` (or is a ``Run``, which has
one), or carries a ``RunStatus``; it adds no status of its own.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class RunStatus(enum.StrEnum):
    """How a run ended."""

    OK = "ok"
    ERROR = "error"
    INTERRUPTED = "interrupted"


class Reason(enum.StrEnum):
    """Which limit ended a run (its status is ``error``)."""

    TIMEOUT = "timeout"              # its wall-clock seconds ran out
    MEMORY = "memory"                # it ran out of memory
    CPU = "cpu"                      # its CPU seconds ran out
    OUTPUT_LIMIT = "output_limit"    # it printed or returned more than may be kept


# How a whole task run's status is written (transcripts, --json, results.jsonl).
RUN_WORDS: dict[RunStatus, str] = {RunStatus.OK: "succeeded", RunStatus.ERROR: "failed",
                                   RunStatus.INTERRUPTED: "interrupted"}

# How a verdict is written (what a validator says, the context, the [verdict] output).
VERDICT_WORDS: dict[RunStatus, str] = {RunStatus.OK: "pass", RunStatus.ERROR: "fail"}

# How a sandbox run that ended well is written in a message file's output (its limit, else
# "error", when it did not).
SANDBOX_OK_WORD = "success"

_READ: dict[str, RunStatus] = {
    **{s.value: s for s in RunStatus}, **{w: s for s, w in RUN_WORDS.items()},
    **{w: s for s, w in VERDICT_WORDS.items()}, SANDBOX_OK_WORD: RunStatus.OK,
}


def read_status(word: Any) -> RunStatus | None:
    """The status a saved or printed word means (today's and earlier ones), else None (a
    run still going: ``running``)."""
    return _READ.get(word.strip().lower()) if isinstance(word, str) else None


def sandbox_word(status: RunStatus, reason: Reason | None) -> str:
    """The word a message file keeps for a sandbox run (``success``, ``error``,
    ``timeout``, ``memory``, ``cpu``, ``output_limit``): those of every earlier version."""
    if status is RunStatus.OK:
        return SANDBOX_OK_WORD
    return str(reason) if reason is not None else str(RunStatus.ERROR)


@dataclass
class Outcome:
    """How one run ended: its status, the error's type and one line (safe to save in a
    file) when it failed, the tokens and cost it used, and the seconds it spent in model
    calls."""

    status: RunStatus = RunStatus.OK
    error_type: str | None = None
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK

    def fail(self, error_type: str, error: str) -> None:
        self.status, self.error_type, self.error = RunStatus.ERROR, error_type, error
