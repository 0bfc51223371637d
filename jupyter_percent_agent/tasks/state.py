"""The records of a task run: the stack's items and the saved state (JSON, in the
transcript after every step), a step as it is shown, why a step failed, and how the whole
run ended (``TaskResult``, built on the runtime's one ``Outcome``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent.outcome import RUN_WORDS, VERDICT_WORDS, Outcome, RunStatus


@dataclass
class Item:
    """One task on the stack. ``frame`` is the plan run that pushed it (its step list is in
    the state's ``frames``) and ``index`` its place there; ``after`` says why it runs again
    ("retry", "route", "replan")."""

    task_id: str
    frame: int = 0
    index: int = 0
    attempt: int = 1
    feedback: str = ""
    after: str = ""
    replanned: bool = False


@dataclass
class State:
    """Everything a run needs to go on: JSON, saved after every step."""

    context: dict[str, Any]
    stack: list[Item] = field(default_factory=list)
    frames: dict[int, list[str]] = field(default_factory=dict)
    steps: int = 0
    error: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        live = {i.frame for i in self.stack}
        return {"context": self.context, "stack": [asdict(i) for i in self.stack],
                "frames": {str(k): v for k, v in self.frames.items() if k in live},
                "steps": self.steps, "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        context = data.get("context")
        return cls(context=context if isinstance(context, dict) else {},
                   stack=[Item(**i) for i in data.get("stack") or []],
                   frames={int(k): list(v) for k, v in (data.get("frames") or {}).items()},
                   steps=int(data.get("steps") or 0), error=data.get("error"))


@dataclass
class StepInfo:
    """A step as it is shown while the run goes on (``StepStarted(info)`` when it starts,
    ``StepFinished(info)`` when it ends): how it ended (``outcome``: its status, the failure's
    type and message, the seconds its model calls took), and for a validation its verdict
    (True: pass), data on the step rather than another status."""

    step: int
    task_id: str
    task_type: str
    attempt: int
    outcome: Outcome = field(default_factory=Outcome)
    verdict: bool | None = None
    then: str = ""           # what happens next after a failure
    seconds: float = 0.0     # the whole step, its transcript's save included

    @property
    def status(self) -> RunStatus:
        return self.outcome.status

    @property
    def model_seconds(self) -> float:
        return self.outcome.seconds

    @property
    def detail(self) -> str:
        """``error_type: message`` of a failed step, else ""."""
        o = self.outcome
        return f"{o.error_type}: {o.error}" if o.error_type is not None else ""

    @property
    def shown(self) -> str:
        """The word a person reads: ``pass`` or ``fail`` for a validation, else the status."""
        if self.verdict is not None:
            return VERDICT_WORDS[RunStatus.OK if self.verdict else RunStatus.ERROR]
        return str(self.status)


@dataclass
class TaskResult:
    """How a whole run ended (``outcome``; ``status``: its ``RunStatus``), with its context,
    transcript (None: the run never began, its input was refused) and steps, and where it
    failed (``error``: task_id, error_type, message). :meth:`to_json` is what ``tce run
    --json`` prints and a batch's ``results.jsonl`` keeps, its status in the words those
    have always had (``succeeded``, ``failed``, ``interrupted``: ``outcome.RUN_WORDS``)."""

    outcome: Outcome
    task_id: str
    context: dict[str, Any]
    transcript: Path | None
    steps: int
    error: dict[str, Any] | None = None

    @property
    def status(self) -> RunStatus:
        return self.outcome.status

    @classmethod
    def ended(cls, status: RunStatus, task_id: str, context: dict[str, Any],
              transcript: Path | None, steps: int,
              error: dict[str, Any] | None = None) -> TaskResult:
        outcome = Outcome(status)
        if error is not None:
            outcome.error_type = str(error.get("error_type") or "") or None
            outcome.error = str(error.get("message") or "") or None
        return cls(outcome, task_id, context, transcript, steps, error)

    def to_json(self) -> dict[str, Any]:
        return {"status": RUN_WORDS[self.status], "task_id": self.task_id,
                "context": self.context,
                "transcript": None if self.transcript is None else str(self.transcript),
                "steps": self.steps, "error": self.error}


@dataclass
class StepFailure:
    """Why a step failed. A ``final`` failure ends the run at once: retrying or routing it
    cannot help (the folder's trust is missing: only the user can give it)."""

    error_type: str
    message: str
    final: bool = False
