"""How a run ended, one type for every kind of run: a message turn, a code or tool cell, a
task step, a ``[task]`` cell and a whole task run.

One status vocabulary (:class:`RunStatus`: ``ok``, ``error``, ``interrupted``). A validation's
pass or fail is data on its step (``verdict``), not another status. Words written before this
vocabulary (a transcript's ``succeeded`` and ``failed``, a step's ``pass`` and ``fail``) are
read by :func:`read_status`; a whole task run is still written and printed (``tce run
--json``, ``results.jsonl``, the transcript's ``task_state``) with its documented words,
:data:`RUN_WORDS`, so files and scripts made before keep working.

A new kind of run returns an :class:`Outcome` (or is a ``Run``, which has one); it adds no
status of its own.
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


# How a whole task run's status is written (transcripts, --json, results.jsonl).
RUN_WORDS: dict[RunStatus, str] = {RunStatus.OK: "succeeded", RunStatus.ERROR: "failed",
                                RunStatus.INTERRUPTED: "interrupted"}

_READ: dict[str, RunStatus] = {
    **{s.value: s for s in RunStatus}, **{w: s for s, w in RUN_WORDS.items()},
    "pass": RunStatus.OK, "fail": RunStatus.ERROR,  # a step's words before the verdict was data
}


def read_status(word: Any) -> RunStatus | None:
    """The status a saved or printed word means (today's and earlier ones), else None (a
    run still going: ``running``)."""
    return _READ.get(word) if isinstance(word, str) else None


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
