"""Which ``history: auto`` cells go with a message: the budget, the scores, the choice.

The choice itself is pure (``history.select``); this module does its I/O: the model's
context window from litellm's model map (read without importing litellm), the local scorer
(``ranking.passages``: the bundled embedder fused with BM25, vectors cached in the user's cache
folder), and, when the agent or the user's config names a ``history_model``, one batched call
to that model, with the local scores as the fallback when it fails.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime import auto_history
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.events import OnEvent, Status, ignore
from jupyter_percent_agent.runtime.transport import Transport

HISTORY_SHARE = 0.5
"""Without ``history_budget``, the history may take this share of what the context window
leaves once the reply's room, the system prompt and the message are taken."""
UNKNOWN_WINDOW = 16_384
"""The context window assumed for a model neither the agent nor litellm's map knows."""
MIN_BUDGET = 1_000
SCORE_CHARS = 400
"""How much of each candidate the history model sees (its start)."""

Scores = dict[tuple[str, str], float]


def model_window(model: str) -> int | None:
    """The model's input window by litellm's model map (``max_input_tokens``), if it knows.
    Only the model's own entry is decoded: parsing the whole map costs more than choosing
    the history."""
    from jupyter_percent_agent.litellm_setup import packaged_model_map

    try:
        text = packaged_model_map()
    except OSError:
        return None
    decoder = json.JSONDecoder()
    for name in dict.fromkeys((model, model.split("/", 1)[-1])):
        at = text.find(json.dumps(name) + ":")
        if at < 0:
            continue
        start = text.find("{", at)
        try:
            entry, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(entry, dict):
            value = entry.get("max_input_tokens") or entry.get("max_tokens")
            if isinstance(value, int) and value > 0:
                return value
    return None


def history_budget(agent: Agent, history: hist.History) -> tuple[int, str]:
    """Tokens the earlier cells may take, and the setting that says so: the agent's
    ``history_budget``, else :data:`HISTORY_SHARE` of what the context window (the agent's
    ``context_window``, else litellm's map, else :data:`UNKNOWN_WINDOW`) leaves."""
    if agent.history_budget:
        return agent.history_budget, "history_budget"
    window = agent.context_window or model_window(agent.models[0]) or UNKNOWN_WINDOW
    fixed = sum(auto_history.estimate_tokens(t.content) for t in history.turns
                if t.group in (hist.SYSTEM, hist.CURRENT, hist.DOCUMENT))
    left = window - (agent.max_output_tokens or 0) - fixed
    return max(MIN_BUDGET, int(HISTORY_SHARE * left)), "history_budget (or context_window)"


def local_scores(history: hist.History) -> Scores:
    """The local scorer's score of each auto cell's passages (words only when the embedding
    model cannot be loaded)."""
    from jupyter_percent_agent.ranking.embed import EmbeddingError, shared_embedder
    from jupyter_percent_agent.ranking.passages import rank_passages, user_cache

    texts = auto_history.passages(history)
    query = auto_history.current_message(history)
    try:
        return rank_passages(texts, query, embedder=shared_embedder(), cache=user_cache())
    except EmbeddingError as exc:
        warnings.warn(f"embedding model failed, history ranked by its words only: {exc}",
                      RuntimeWarning, stacklevel=2)
        return rank_passages(texts, query, embedder=None)


def history_model_for(agent: Agent) -> tuple[str | None, bool]:
    """The model that scores auto cells and whether a file chose it: the agent's
    ``history_model``, else the user's config, else None (the local scorer)."""
    if agent.history_model:
        return agent.history_model, agent.source != "environment"
    try:
        return trust.load_config().history_model, False
    except (trust.ConfigError, OSError):
        return None, False


SCORE_PROMPT = (
    "You choose the conversation history a new message needs. Below are numbered earlier "
    "parts of a conversation (their start), then the new message. Answer with JSON only: "
    '{"relevant": [numbers]}, the parts an answer to the new message needs, most needed first.'
)


def score_request(history: hist.History) -> list[dict[str, str]]:
    """The one batched request that asks the history model which auto cells matter."""
    lines = []
    texts = auto_history.passages(history)
    for n, group in enumerate(history.auto, start=1):
        text = " ".join(" ".join(texts.get((group, p), "") for p in ("asked", "answered"))
                        .split())
        lines.append(f"[{n}] {text[:SCORE_CHARS]}")
    return [{"role": "system", "content": SCORE_PROMPT},
            {"role": "user", "content": "\n".join(lines) + "\n\nNew message:\n"
             + auto_history.current_message(history)}]


def parse_relevant(text: str, count: int) -> list[int] | None:
    """The 1-based part numbers the model named (None: no JSON list in its answer)."""
    match = re.search(r"\{.*\}", text, re.S)
    try:
        found = json.loads(match.group()).get("relevant") if match else None
    except (ValueError, AttributeError):
        return None
    if not isinstance(found, list):
        return None
    return [n for n in dict.fromkeys(found) if isinstance(n, int) and 1 <= n <= count]


def model_scores(history: hist.History, relevant: list[int], base: Scores) -> Scores:
    """The local scores with the cells the model named first, in its order."""
    top = max(base.values(), default=0.0) + 1.0
    scores = dict(base)
    for rank, n in enumerate(relevant):
        group = history.auto[n - 1]
        scores[(group, "asked")] = top + len(relevant) - rank
    return scores


async def scored(history: hist.History, agent: Agent, *, transport: Transport, folder: Path,
                 on_event: OnEvent = ignore) -> Scores:
    """Scores for the auto cells: the local scorer's, reordered by the history model when
    there is one and it answers (when it fails, one line says so and the local scores stand).
    """
    from jupyter_percent_agent.runtime.models import spec_for

    base = local_scores(history)
    model, from_file = history_model_for(agent)
    if not model:
        return base
    try:
        route = trust.route_agent(agent.name, agent.api_base, [model], from_file=from_file,
                                  folder=folder)
        scorer = replace(agent, models=[model], max_output_tokens=400, temperature=0,
                         reasoning=None)
        res = await transport.complete(spec_for(scorer, score_request(history), route=route))
        relevant = parse_relevant(res.text, len(history.auto)) if res.ok else None
        why = res.error if not res.ok else "its answer held no list"
    except trust.TrustError as exc:
        relevant, why = None, str(exc)
    if relevant is None:
        on_event(Status(f"history_model {model} failed ({why}): history chosen locally"))
        return base
    return model_scores(history, relevant, base)


async def choose(history: hist.History, agent: Agent, *, transport: Transport, folder: Path,
                 on_event: OnEvent = ignore, scores: Mapping[tuple[str, str], float] | None = None
                 ) -> hist.History:
    """``history`` with its auto cells chosen to fit the budget (unchanged when everything
    fits: nothing is scored then). ``scores`` skips scoring (they were made already)."""
    budget, setting = history_budget(agent, history)
    if not auto_history.needs_selection(history, budget):
        return history
    if scores is None:
        scores = await scored(history, agent, transport=transport, folder=folder,
                              on_event=on_event)
    return auto_history.select(history, budget, scores, setting=setting)
