"""Choosing the ``history="auto"`` cells of a history, as pure functions.

``history.build_history`` lists the auto cells (``History.auto``); when the earlier cells
exceed the budget (``needs_selection``), ``select`` keeps the cells always sent (pinned:
``include`` and its synonyms, ``summary``, ``-i``; the last turns) and fills what is left with
the best-scored auto cells. Sizes are estimated (``estimate_tokens``); the exact fit to the
context window comes after. The scores come from ``relevance`` (I/O).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from jupyter_percent_agent.runtime.history import (
    CURRENT,
    DOCUMENT,
    IMAGE_TOKENS,
    SYSTEM,
    Candidate,
    History,
    Turn,
)

LARGE_REPLY_TOKENS = 1_000
"""A reply at least this large (estimated) is left out of a chosen cell when it alone is
irrelevant (it scores below the average passage): its message goes without it."""
REPLY_LEFT_OUT = "[a reply of about {n} tokens, not relevant to this message, left out]"


def estimate_tokens(text: str) -> int:
    """Tokens of a text, estimated as a third of its bytes (more than a BPE tokenizer makes for
    English and code, about as many for Chinese): selection never imports a tokenizer; the
    context-window fit that follows counts exactly."""
    return (len(text.encode()) + 2) // 3 + 4


def _turn_tokens(t: Turn) -> int:
    return estimate_tokens(t.content) + IMAGE_TOKENS * len(t.images)


def group_tokens(history: History) -> dict[str, int]:
    """Estimated tokens of each earlier cell's turns (not the system prompt, document or
    current message)."""
    sizes: dict[str, int] = {}
    for t in history.turns:
        if t.group not in (SYSTEM, CURRENT, DOCUMENT):
            sizes[t.group] = sizes.get(t.group, 0) + _turn_tokens(t)
    return sizes


def current_message(history: History) -> str:
    """The text of the message being sent."""
    return next((t.content for t in reversed(history.turns) if t.group == CURRENT), "")


def passages(history: History) -> dict[tuple[str, str], str]:
    """What is scored for each auto cell: ``(group, "asked")`` its message (or code, tool
    call) and ``(group, "answered")`` its replies and results, when it has them."""
    auto = set(history.auto)
    parts: dict[tuple[str, str], list[str]] = {}
    for t in history.turns:
        if t.group in auto:
            part = "answered" if t.role == "assistant" else "asked"
            parts.setdefault((t.group, part), []).append(t.content)
    return {key: "\n\n".join(texts) for key, texts in parts.items()}


def needs_selection(history: History, budget: int) -> bool:
    """Whether the auto cells must be chosen: there are some and the history exceeds the
    budget (otherwise every cell is sent and nothing is scored)."""
    return bool(history.auto) and sum(group_tokens(history).values()) > budget


def select(history: History, budget: int, scores: Mapping[tuple[str, str], float], *,
           setting: str = "history_budget") -> History:
    """The history with only the auto cells that fit ``budget`` tokens after the cells always
    sent, best score first (a cell's score: the better of its message's and its reply's).

    A chosen cell whose reply is large and irrelevant on its own goes with a line in place of
    the reply. When the always-sent cells alone exceed the budget they are sent anyway,
    with ``warning`` naming ``setting``.
    """
    sizes = group_tokens(history)
    auto = set(history.auto)
    fixed = sum(n for g, n in sizes.items() if g not in auto)
    left = budget - fixed
    warning = None
    if left < 0:
        warning = (f"the pinned cells and the last turns take about {fixed:,} tokens, more than "
                   f"the history budget of {budget:,}: sent anyway (raise {setting}, or "
                   "exclude or unpin cells)")
    reply_tokens: dict[str, int] = {}
    for t in history.turns:
        if t.group in auto and t.role == "assistant":
            reply_tokens[t.group] = reply_tokens.get(t.group, 0) + _turn_tokens(t)
    lowest = min(scores.values(), default=0.0) - 1.0

    def score(group: str) -> float:
        return max(scores.get((group, "asked"), lowest), scores.get((group, "answered"), lowest))

    order = sorted(history.auto, key=lambda g: (-score(g), -history.indices.get(g, 0)))
    candidates: list[Candidate] = []
    trimmed: set[str] = set()
    for group in order:
        size = sizes.get(group, 0)
        reply = reply_tokens.get(group, 0)
        trim = (reply >= LARGE_REPLY_TOKENS and (group, "answered") in scores
                and scores[(group, "answered")] < 0.0
                and scores.get((group, "asked"), lowest) >= scores[(group, "answered")])
        if trim:
            size = size - reply + estimate_tokens(REPLY_LEFT_OUT.format(n=reply))
        sent = size <= left
        if sent:
            left -= size
            if trim:
                trimmed.add(group)
        candidates.append(Candidate(group, history.indices.get(group, 0), size, score(group),
                                    sent, trim and sent))
    sent_groups = {c.group for c in candidates if c.sent}
    turns: list[Turn] = []
    for t in history.turns:
        if t.group in auto and t.group not in sent_groups:
            continue
        if t.group in trimmed and t.role == "assistant":
            if turns and turns[-1].group == t.group and turns[-1].role == "assistant":
                continue  # one line for the whole reply
            turns.append(Turn("assistant", REPLY_LEFT_OUT.format(n=reply_tokens[t.group]),
                              t.group))
            continue
        turns.append(t)
    return replace(history, turns=turns, candidates=candidates, warning=warning)
