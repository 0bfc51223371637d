"""What the model sees for one cell: the selections (``-i``/``-e`` and the file's own
``include:``/``exclude:``), the cells of other files they include, and the history fitted
to the agent's context window.

The assembly itself is pure (``history``); this module does its I/O: reading included files
(those the file names itself only from inside its own folder) and counting tokens through the
transport when the cheap byte bound says the history might not fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime import attachments, auto_history
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.events import OnEvent, ignore
from jupyter_percent_agent.runtime.ranges import Selection, SelectionError, parse_selection
from jupyter_percent_agent.runtime.transport import Transport


@dataclass(frozen=True)
class Selections:
    """Cells to include and exclude: ``saved`` are those the file itself asked for."""

    include: tuple[Selection, ...] = ()
    exclude: tuple[Selection, ...] = ()
    saved: tuple[Selection, ...] = ()


def saved_selections(nb: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Include / exclude selections saved in the front matter by ``--save``."""
    fm = fmt.front_matter(nb)
    found = []
    for key in ("include", "exclude"):
        value = fm.get(key) or []
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fmt.FormatError(f"the front matter's {key}: is not a selection or a list of "
                                  f"them (other.msg.md, other/[1..3]): {value!r}")
        found.append(list(value))
    return found[0], found[1]


def selections(nb: Mapping[str, Any], include: Sequence[str] = (),
               exclude: Sequence[str] = ()) -> Selections:
    """The file's saved selections and the caller's, parsed (``SelectionError``)."""
    inc, exc = saved_selections(nb)
    saved = tuple(parse_selection(s) for s in inc)
    return Selections((*saved, *(parse_selection(s) for s in include)),
                      tuple(parse_selection(s) for s in [*exc, *exclude]), saved)


def check_selected(chosen: Selections, count: int) -> None:
    """``SelectionError`` for a selection of this file's cells the caller gave (``-i``,
    ``-e``) that selects none of its ``count`` cells: a typo is said, not ignored. (Saved
    selections may name cells a file does not have yet.)"""
    for sel in (*chosen.include, *chosen.exclude):
        if sel.path is None and sel not in chosen.saved and not sel.indices(count):
            before = max(count - 1, 0)  # the new message is the last
            raise SelectionError(f"{sel.text} selects no cell: this file has {before} "
                                 f"message{'s' if before != 1 else ''} before this one (tce "
                                 "list shows them)")


def resolve_item(item: str, base_dir: Path | None = None) -> Path:
    """A message file path from an ITEM (``.msg.md`` optional)."""
    p = Path(item)
    if base_dir is not None and not p.is_absolute():
        p = base_dir / p
    if p.exists() or p.name.endswith(".md"):
        return p
    return p.with_name(p.name + ".msg.md")


def _confined_item(item: str, base_dir: Path) -> Path:
    """An ITEM named in a file's front matter, inside the file's folder, with no other hard
    link (``TrustError``): a real path, to be read with ``real=True``."""
    path = trust.resolve_inside(base_dir, item, what="include", one_link=True)
    if path.exists() or path.name.endswith(".md"):
        return path
    return trust.resolve_inside(base_dir, item + ".msg.md", what="include", one_link=True)


def load_included(chosen: Selections, base_dir: Path) -> list[hist.Included]:
    """Cells of other files named by ``-i OTHER/[1..3]`` (selections with a path), less
    those excluded by ``-e OTHER/[2]``."""
    out: list[hist.Included] = []
    for sel in chosen.include:
        if sel.path is None:
            continue
        if sel in chosen.saved:  # the file's own include: checked, then opened as checked
            path = _confined_item(sel.path, base_dir)
            nb = fmt.reads(fmt.read_text(path, real=True, one_link=True), path=str(path))
        else:
            path = resolve_item(sel.path, base_dir)
            nb = fmt.read(path)
        cells = hist.conversation_cells(nb)
        if sel not in chosen.saved and not sel.indices(len(cells)):
            raise SelectionError(f"{sel.text} selects no cell: {sel.path} has {len(cells)} "
                                 f"message{'s' if len(cells) != 1 else ''}")
        skip = {i for e in chosen.exclude if e.path is not None
                and resolve_item(e.path, base_dir).resolve() == path.resolve()
                for i in e.indices(len(cells))}
        for i in sel.indices(len(cells)):
            if i not in skip:
                out.append(hist.Included(f"{sel.path}[{i}]", cells[i - 1]))
    return out


class TokenCounter:
    """Counts tokens with the agent's first model through the transport, so that a process
    whose calls go to the warm helper never imports litellm to count."""

    def __init__(self, transport: Transport, model: str) -> None:
        self.transport, self.model = transport, model

    def __call__(self, messages: list[dict[str, str]]) -> int:
        return sum(self.each(messages))

    def each(self, messages: list[dict[str, str]]) -> list[int]:
        return self.transport.count(self.model, messages)


def budget(agent: Agent) -> int | None:
    """Tokens the history may take: the context window less the reply's room."""
    if agent.context_window is None:
        return None
    return max(256, agent.context_window - (agent.max_output_tokens or 0))


def assemble(nb: Mapping[str, Any], index: int, agent: Agent, chosen: Selections, *,
             base_dir: Path, system_prompt: str, current_text: str | None = None,
             summaries: Mapping[str, str] | None = None,
             included: Sequence[hist.Included] | None = None) -> hist.History:
    """Every cell the history may hold for the cell at 1-based ``index``, before the auto
    cells are chosen and before the fit to the window."""
    cells = hist.conversation_cells(nb)
    exclude_here = {i for s in chosen.exclude if s.path is None for i in s.indices(len(cells))}
    include_here = {i for s in chosen.include if s.path is None for i in s.indices(len(cells))}
    return hist.build_history(cells, index, system_prompt=system_prompt,
                              current_text=current_text,
                              included=list(included) if included is not None
                              else load_included(chosen, base_dir),
                              exclude=exclude_here, include=include_here,
                              summaries=summaries, document=hist.preamble_text(nb),
                              default=hist.default_mode(nb),
                              keep_last=agent.history_keep_last,
                              attach=lambda text: attachments.expand(text, base_dir))


async def plan_history(nb: Mapping[str, Any], index: int, agent: Agent, chosen: Selections, *,
                       base_dir: Path, system_prompt: str, transport: Transport,
                       current_text: str | None = None,
                       summaries: Mapping[str, str] | None = None,
                       included: Sequence[hist.Included] | None = None,
                       on_event: OnEvent = ignore) -> hist.History:
    """The history for the cell at 1-based ``index``: its auto cells chosen
    (``relevance.choose``), then fitted to the agent's window (``included``: the other
    files' cells, when the plan has read them already)."""
    from jupyter_percent_agent.runtime.relevance import choose

    history = assemble(nb, index, agent, chosen, base_dir=base_dir, system_prompt=system_prompt,
                       current_text=current_text, summaries=summaries, included=included)
    if history.auto:
        history = await choose(history, agent, transport=transport, folder=base_dir,
                               on_event=on_event)
    limit = budget(agent)
    if limit is None:
        return history
    return hist.fit(history, limit, TokenCounter(transport, agent.models[0]))


@dataclass(frozen=True)
class ExplainRow:
    """One earlier cell as the history would hold it for a message."""

    index: int
    cell: str
    why: str  # "auto", "pinned" (include, summary, -i), "last" (the last turns)
    tokens: int
    score: float | None
    sent: bool


async def explain_history(nb: Mapping[str, Any], message: str, agent: Agent,
                          chosen: Selections, *, base_dir: Path, transport: Transport
                          ) -> tuple[list[ExplainRow], int | None]:
    """What sending ``message`` as the next cell would send: a row per earlier cell, and the
    history budget when the file has auto cells. Nothing is sent but a ``history_model``'s
    scoring call; nothing is written."""
    from jupyter_percent_agent.runtime.relevance import choose, history_budget

    cells = hist.conversation_cells(nb)
    index = len(cells) + 1
    history = assemble(nb, index, agent, chosen, base_dir=base_dir,
                       system_prompt=agent.system_prompt, current_text=message)
    limit = None
    if history.auto:
        limit = history_budget(agent, history)[0]
        history = await choose(history, agent, transport=transport, folder=base_dir)
    sizes = auto_history.group_tokens(history)
    decided = {c.group: c for c in history.candidates}
    last = hist.last_turns_start(cells, index, agent.history_keep_last) if history.auto \
        else index
    auto = set(history.auto)
    rows = []
    for group, i in history.indices.items():
        c = decided.get(group)
        if group in auto:
            rows.append(ExplainRow(i, group, "auto", c.tokens if c else sizes.get(group, 0),
                                   c.score if c else None, c.sent if c else True))
        else:
            rows.append(ExplainRow(i, group, "last" if i >= last else "pinned",
                                   sizes.get(group, 0), None, True))
    return rows, limit
