"""What a step's call means: an LLM reply as a value, a verdict, a planner's steps.

Pure functions over text and data. A verdict from an LLM validator is TOML in the ATTP style
(``status = "pass"`` or ``"fail"`` with ``error_type`` and ``message``); from a tool validator,
``{"ok": bool, "error_type": str, "message": str}``. Anything else is a failed verdict whose
error type is ``invalid_verdict``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_percent_agent.outcome import VERDICT_WORDS, RunStatus

INVALID_VERDICT = "invalid_verdict"
FAILED = "failed"

_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$",
                     re.S | re.M)


@dataclass(frozen=True)
class Verdict:
    """A validator's verdict: ``RunStatus.OK`` (it passes) or ``ERROR`` (it fails, with its
    error type and message). Written with the words validators answer in (``pass``,
    ``fail``: ``outcome.VERDICT_WORDS``)."""

    status: RunStatus
    error_type: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK

    @property
    def word(self) -> str:
        return VERDICT_WORDS[self.status]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.word, "error_type": self.error_type, "message": self.message}

    def __str__(self) -> str:
        said = self.word if self.ok else f"{self.word}: {self.error_type}"
        return said + (f": {self.message}" if self.message else "")


# The words a validator answers with (pass, fail), read back.
_VERDICT_STATUS = {word: status for status, word in VERDICT_WORDS.items()}


def _fences(text: str) -> list[tuple[str, str]]:
    return [(m.group(2).lower(), m.group(3)) for m in _FENCED.finditer(text)]


def reply_value(text: str) -> Any:
    """An LLM result: the JSON value when the reply is JSON (bare, or in one fenced ``json``
    block), else the reply text."""
    stripped = text.strip()
    if stripped[:1] in "[{\"" or stripped in ("true", "false", "null") or _is_number(stripped):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    blocks = [body for lang, body in _fences(text) if lang in ("json", "")]
    if len(blocks) == 1:
        try:
            return json.loads(blocks[0])
        except ValueError:
            pass
    return text


def _is_number(text: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(\.\d+)?([eE][+-]?\d+)?", text))


def verdict_instructions(error_types: Sequence[str]) -> str:
    """What the runner appends to an LLM validator's prompt."""
    kinds = (" One of: " + ", ".join(json.dumps(e, ensure_ascii=False) for e in error_types)
             + ", or another short name.") if error_types else ""
    return (
        "\n\n---\nAnswer with your verdict only, in TOML:\n\n"
        "```toml\n"
        'status = "pass"        # or "fail"\n'
        'error_type = ""        # when it fails: a short name for what is wrong\n'
        'message = """"""       # when it fails: what is wrong and how to fix it\n'
        "```\n"
        f"error_type names the kind of failure.{kinds}"
    )


def llm_verdict(text: str) -> Verdict:
    """The verdict in an LLM validator's reply (bare TOML or one fenced ``toml`` block)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    blocks = [body for lang, body in _fences(text) if lang in ("toml", "")]
    source = blocks[0] if len(blocks) == 1 else text
    try:
        data = tomlkit.parse(source).unwrap()
    except ParseError as exc:
        return Verdict(RunStatus.ERROR, INVALID_VERDICT,
                       f"the validator's reply is not TOML (line {exc.line}, column "
                       f"{exc.col}): {_short(text)}")
    except Exception as exc:  # tomlkit raises a few other kinds on odd input
        return Verdict(RunStatus.ERROR, INVALID_VERDICT,
                       f"the validator's reply is not TOML: {exc}")
    return _verdict_of(data, "status", text)


def tool_verdict(data: Any) -> Verdict:
    """The verdict a tool validator returned: ``{"ok": bool, "error_type", "message"}``."""
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return Verdict(RunStatus.ERROR, INVALID_VERDICT,
                       'a tool validator returns {"ok": true|false, "error_type": ..., '
                       f'"message": ...}}, not {_short(json.dumps(data, ensure_ascii=False))}')
    return _verdict_of(data, "ok", None)


def _verdict_of(data: Any, key: str, text: str | None) -> Verdict:
    if not isinstance(data, dict):
        return Verdict(RunStatus.ERROR, INVALID_VERDICT, "the verdict is not a table of keys")
    status = data.get(key)
    if key == "ok":
        ok = status
    else:
        said = _VERDICT_STATUS.get(str(status).strip().lower()) if status is not None else None
        ok = None if said is None else said is RunStatus.OK
    if ok is None:
        return Verdict(RunStatus.ERROR, INVALID_VERDICT,
                       f'the verdict has no status = "pass" or "fail" (got {status!r})'
                       + (f": {_short(text)}" if text else ""))
    message = data.get("message")
    message = "" if message is None else str(message).strip()
    if ok:
        return Verdict(RunStatus.OK, "", message)
    etype = data.get("error_type")
    etype = str(etype).strip() if etype is not None else ""
    return Verdict(RunStatus.ERROR, etype or FAILED, message)


def _short(text: str | None, limit: int = 200) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def planner_prompt(goal: str, failed: str, verdict: Verdict,
                   candidates: Sequence[tuple[str, str, str]]) -> str:
    """The prompt that asks the planner for new steps, chosen from ``candidates``
    ((task_id, task_type, description))."""
    listing = "\n".join(f"- {tid} ({kind}): {desc}" for tid, kind, desc in candidates)
    return (
        f"A workflow ({goal}) failed at step {failed}.\n"
        f"Error type: {verdict.error_type}\nMessage: {verdict.message}\n\n"
        "Choose the steps to run next to fix this, in order, from these documents only:\n"
        f"{listing}\n\n"
        'Answer with a JSON array of task_ids only, e.g. ["a/b", "a/c"].'
    )


def planner_steps(text: str, known: Collection[str]) -> list[str]:
    """The task_ids a planner answered with; ``ValueError`` saying why they are unusable."""
    value = reply_value(text)
    if isinstance(value, dict) and isinstance(value.get("steps"), list):
        value = value["steps"]
    if not isinstance(value, list) or not value or \
            not all(isinstance(x, str) for x in value):
        raise ValueError(f"the planner did not answer with a JSON array of task_ids: "
                         f"{_short(text)}")
    unknown = [x for x in value if x not in known]
    if unknown:
        raise ValueError("the planner chose steps that are not among the candidates: "
                         + ", ".join(unknown))
    return list(value)
