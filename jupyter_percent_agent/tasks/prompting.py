"""What an LLM step of a task sends and how its reply is read: the bound on its prompt (the
agent's context window) and the format of its result (``output_format:``)."""

from __future__ import annotations

from jupyter_percent_agent import trust
from jupyter_percent_agent.tasks import paths, templates
from jupyter_percent_agent.tasks.documents import TaskDocument
from jupyter_percent_agent.tasks.sop import Sop


def prompt_limit(sop: Sop, doc: TaskDocument) -> int:
    """The most characters a prompt of ``doc`` may have: its agent's context window (bounded
    by the trust rules; ``templates.DEFAULT_WINDOW`` when it sets none), at
    ``templates.CHARS_PER_TOKEN`` characters per token."""
    props = sop.agents.get(doc.agent or "") or {}
    asked = props.get("context_window") if isinstance(props, dict) else None
    window = trust.bound("context_window", asked if isinstance(asked, int) else None,
                         folder=sop.root).value
    return int(window or templates.DEFAULT_WINDOW) * templates.CHARS_PER_TOKEN


def result_format(doc: TaskDocument) -> str:
    """How an LLM step's reply is read: ``"json"`` (its JSON value, bare or in one fenced
    ``json`` block) or ``"text"`` (as it is). ``output_format:`` when the document declares
    it, else JSON when an output reads inside the result (``$.title``), text when every
    output takes it whole (``$``): a reply that happens to be JSON stays text."""
    if doc.output_format:
        return doc.output_format
    return "json" if any(not paths.is_root(s) for s in doc.outputs.values()) else "text"
