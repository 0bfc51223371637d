"""History assembly: the messages sent to a model for one cell, as pure functions.

Order: the system prompt (with the ATTP protocol prompt when the agent has tools), cells
included from other files, then every earlier cell of this file whose ``history`` allows
it (``summary`` cells as their stored summary), then the current message. Replies are
``assistant`` turns; messages, code and tool results ``user`` turns. ``fit`` drops the
oldest whole cells until the turns fit a token budget, never the system prompt or the
current message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.errors import Kind, PercentAgentError

IMAGE_TOKENS = 1_000
"""What one image of a code cell counts for in the budget (a scaled-down image costs a vision
model about this many tokens; a model without vision gets one line instead)."""
SYSTEM = "system"
CURRENT = "current"
DOCUMENT = "document"


@dataclass
class Turn:
    """One chat message and the cell it came from (``group``: what is dropped together)."""

    role: str
    content: str
    group: str
    joins_next: bool = False  # a failed message: sent joined to the next user turn
    images: tuple[tuple[str, str], ...] = ()  # a code cell's or tool's images: (MIME, base64)

    def message(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Candidate:
    """An auto cell as selection saw it: its score, size, and whether it is sent (and whether
    its reply was left out as large and irrelevant on its own)."""

    group: str
    index: int
    tokens: int
    score: float
    sent: bool
    reply_left_out: bool = False


@dataclass
class History:
    """The turns to send, and the groups (cell ids) dropped to fit the context window."""

    turns: list[Turn]
    dropped: list[str] = field(default_factory=list)
    tokens: int | None = None
    auto: list[str] = field(default_factory=list)
    """Groups of ``history="auto"`` cells: sent only when relevant (``select``)."""
    indices: dict[str, int] = field(default_factory=dict)
    """Each earlier cell's group -> its 1-based index (as ``tce list`` numbers it)."""
    candidates: list[Candidate] = field(default_factory=list)
    """What ``select`` decided for each auto cell, best first (empty: no selection made)."""
    warning: str | None = None
    """One line for the user about the history (the always-sent cells exceed the budget)."""
    attached: list[str] = field(default_factory=list)
    """The files and images the current message named that go with it (``attachments``)."""

    @property
    def auto_sent(self) -> list[str]:
        """The auto cells that selection chose, in file order."""
        sent = {c.group for c in self.candidates if c.sent}
        return [g for g in self.auto if g in sent]

    def _joined(self) -> list[tuple[dict[str, str], tuple[tuple[str, str], ...]]]:
        out: list[tuple[dict[str, str], tuple[tuple[str, str], ...]]] = []
        joins = False
        for t in self.turns:
            if joins and t.role == "user" and out and out[-1][0]["role"] == "user":
                prev, images = out[-1]
                out[-1] = ({"role": "user", "content": prev["content"] + "\n\n" + t.content},
                           images + t.images)
            else:
                out.append((t.message(), t.images))
            joins = t.joins_next
        return out

    @property
    def messages(self) -> list[dict[str, str]]:
        """The chat messages to send. A message whose call failed (it has an ``[error]`` and
        no reply) is joined to the user turn after it, so the model never sees two user turns
        in a row because an earlier call failed."""
        return [msg for msg, _ in self._joined()]

    @property
    def has_images(self) -> bool:
        return any(t.images for t in self.turns)

    def messages_for(self, *, vision: bool) -> list[dict[str, Any]]:
        """``messages`` with code cells' images: image parts for a model that sees images
        (``vision``), else a line saying they are not shown."""
        from jupyter_percent_agent.runtime.code_history import with_images

        return [{**msg, "content": with_images(msg["content"], images, vision=vision)}
                if images else msg for msg, images in self._joined()]


class HistoryValueError(PercentAgentError, ValueError):
    """A ``history`` attribute that is none of the values (a typo such as ``exlcude``)."""

    error_kind = Kind.BAD_FILE


SENT_BY_DEFAULT = ("message", "code", "tool_call", "toolchain", "async")
"""Cell kinds sent without a ``history`` attribute (the file's default mode applies to them)."""
AUTO = "auto"


def history_mode(value: Any, kind: str, cell: str | None = None, *,
                 default: str = "include") -> str:
    """``"include"``, ``"exclude"``, ``"summary"`` or ``"auto"`` for a cell's ``history``
    attribute (``default``: the file's ``history:``, for a cell that sets none);
    ``HistoryValueError`` (naming ``cell``) for a value that is none of them: a misspelt
    ``exclude`` must not send the cell."""
    if value is None or value == "":
        return default if kind in SENT_BY_DEFAULT else "exclude"
    if isinstance(value, bool):
        return "include" if value else "exclude"
    text = str(value).strip().lower()
    if text in ("none", "exclude", "0", "false", "no"):
        return "exclude"
    if text == "summary":
        return "summary"
    if text == AUTO:
        return AUTO
    if text in ("include", "1", "true", "yes", "pin", "pinned"):
        return "include"
    raise HistoryValueError((f"cell {cell}: " if cell else "") + f"history={value!r} is not one "
                            "of include, exclude, summary, auto, none (or true/false, yes/no, "
                            "1/0, pinned)")


def default_mode(nb: Mapping[str, Any]) -> str:
    """The mode of cells that set no ``history``: the front matter's ``history:`` (``auto``
    or ``include``), else ``include``; ``HistoryValueError`` for any other value."""
    value = fmt.front_matter(nb).get("history")
    if value is None:
        return "include"
    mode = history_mode(value, "message", "front matter")
    if mode not in ("include", AUTO):
        raise HistoryValueError(f"front matter: history: {value!r} must be auto or include "
                                "(the default of cells that set no history=)")
    return mode


def check_history_values(nb: Mapping[str, Any]) -> None:
    """Raise ``HistoryValueError`` for the first cell (or output) whose ``history`` is no
    value: checked before a turn writes anything."""
    default_mode(nb)
    for cell in conversation_cells(nb):
        value = (cell.get("metadata") or {}).get("history")
        if value is not None:
            history_mode(value, "message", fmt.cell_id(cell))
        for out in cell.get("outputs") or ():
            value = (out.get("metadata") or {}).get("history")
            if value is not None:
                history_mode(value, "message", fmt.output_id(out) or fmt.cell_id(cell))


def conversation_cells(nb: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The cells that ``tce list`` numbers from 1: the front-matter cell and the preamble
    of a plain ``.md`` (the document before its Discussion heading) are left out."""
    return [c for c in nb.get("cells", []) if fmt.document_part(c) is None]


def preamble_text(nb: Mapping[str, Any]) -> str | None:
    """The document before the Discussion heading of a plain ``.md`` (None for ``.msg.md``)."""
    for cell in nb.get("cells", []):
        if fmt.document_part(cell) == "preamble":
            return fmt.message_text(cell)
    return None


cell_title = fmt.cell_title
cell_link = fmt.cell_link


# -- one cell -> turns --------------------------------------------------------------------

CUT_NOTE = "\n\n[this reply stopped here: it did not finish]"
"""What follows a reply marked ``incomplete`` or ``interrupted`` in the model's history."""


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def output_turns(outputs: Iterable[Mapping[str, Any]], group: str) -> list[Turn]:
    """Turns for a cell's outputs: replies as assistant turns, tool results as user turns."""
    turns: list[Turn] = []
    streams: list[str] = []
    for out in outputs:
        history = (out.get("metadata") or {}).get("history")  # attrs live in its metadata
        if history is not None and history_mode(history, "message") == "exclude":
            continue
        kind = fmt.output_kind(out)
        if kind == "reply":
            text = fmt.output_text(out)
            if text.strip():  # an empty reply (a call that failed) is no turn at all
                md = out.get("metadata") or {}
                if md.get("incomplete") is True or md.get("interrupted") is True:
                    text = text.rstrip() + CUT_NOTE  # never taken for a finished reply
                turns.append(Turn("assistant", text, group))
        elif kind == "tool_result":
            images = _images(out)
            if images and turns and turns[-1].role == "user" and turns[-1].group == group:
                last = turns[-1]  # a tool's image joins the result of its call
                last.content += "\n" + fmt.output_text(out)
                last.images += images
            else:
                turns.append(Turn("user", "Tool result:\n" + fmt.output_text(out), group,
                                  images=images))
        elif kind in ("stream", "data"):
            streams.append(fmt.output_text(out))
    if streams:
        turns.append(Turn("user", "Output:\n" + _fence("".join(streams)), group))
    return turns


def _images(out: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    data = out.get("data")
    if not isinstance(data, Mapping) or not any(str(k).startswith("image/") for k in data):
        return ()
    from jupyter_percent_agent.runtime.code_history import output_images

    return tuple(output_images(out))


Attach = Callable[[str], Any]
"""A message's text -> what is sent for it (``attachments.Expanded``: ``content``, ``images``,
``sent``): the files and images it names, read from the conversation's folder."""


def cell_turns(cell: Mapping[str, Any], group: str, *, summary: str | None = None,
               kind: str | None = None, attrs: Mapping[str, Any] | None = None,
               attach: Attach | None = None) -> list[Turn]:
    """Turns for one earlier cell; ``summary`` replaces the whole cell when given.
    ``kind`` and ``attrs`` may be passed when the caller already has them; ``attach``
    adds the files a message names."""
    if summary is not None:
        return [Turn("user", f"(Summary of an earlier part of the conversation)\n{summary}",
                     group)]
    kind = kind or fmt.cell_kind(cell)
    outputs = cell.get("outputs", []) or []
    if kind == "message":
        text = fmt.message_text(cell)
        failed = _failed(outputs)
        turns = [_message_turn(text, group, attach, joins_next=failed)] if text.strip() else []
        return turns + output_turns(outputs, group) if outputs else turns
    attrs = attrs if attrs is not None else fmt.cell_attrs(cell)
    if kind in ("agent", "tool"):
        return []
    if kind == "code":
        from jupyter_percent_agent.runtime.code_history import code_turn_parts

        kept = [o for o in outputs if history_mode(
            (o.get("metadata") or {}).get("history", "include"), "message") != "exclude"]
        text, images = code_turn_parts(cell, fmt.cell_language(cell), kept)
        return [Turn("user", text, group, images=images)]
    if kind in ("tool_call", "toolchain"):
        what = attrs.get("tool") or attrs.get("tools")
        args = attrs.get("args") or attrs.get("params") or "{}"
        if not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        turns = [Turn("user", f"Tool call {json.dumps(what, ensure_ascii=False)} "
                      f"with arguments {args}", group)]
        return turns + output_turns(outputs, group)
    text = fmt.message_text(cell)
    turns = [Turn("user", text, group)] if text.strip() else []
    return turns + output_turns(outputs, group)


def _message_turn(text: str, group: str, attach: Attach | None, *,
                  joins_next: bool = False) -> Turn:
    if attach is None:
        return Turn("user", text, group, joins_next=joins_next)
    sent = attach(text)
    return Turn("user", sent.content, group, joins_next=joins_next, images=tuple(sent.images))


def _failed(outputs: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a message's outputs say its call failed: an error, and no reply with text."""
    kinds = [fmt.output_kind(o) for o in outputs]
    return "error" in kinds and not any(
        k == "reply" and fmt.output_text(o).strip() for k, o in zip(kinds, outputs, strict=True))


def content_hash(cell: Mapping[str, Any]) -> str:
    """A hash of what a cell says and what answered it: a stored summary is stale when this
    changes."""
    import hashlib  # here: tce list reads histories and never hashes

    h = hashlib.sha256(fmt.message_text(cell).encode())
    for out in cell.get("outputs", []) or []:
        h.update(b"\x00" + fmt.output_text(out).encode())
    return h.hexdigest()[:16]


def stored_summary(cell: Mapping[str, Any]) -> str | None:
    """The cell's stored summary, if it was made from the cell as it is now."""
    attrs = fmt.cell_attrs(cell)
    summary = attrs.get("summary")
    if isinstance(summary, str) and attrs.get("summary_hash") == content_hash(cell):
        return summary
    return None


# -- the whole history --------------------------------------------------------------------

@dataclass(frozen=True)
class Included:
    """Cells of another file to include: a label (``path[i]``) and the cell."""

    label: str
    cell: Mapping[str, Any]


def earlier_cells(cells: Sequence[Mapping[str, Any]], index: int, *,
                  exclude: Iterable[int] = (), include: Iterable[int] = ()
                  ) -> list[tuple[int, Mapping[str, Any], str]]:
    """(index, cell, mode) for the cells before 1-based ``index`` that go into the history."""
    return [(i, cell, mode) for i, cell, mode, _, _ in
            _earlier(cells, index, exclude=exclude, include=include)]


def last_turns_start(cells: Sequence[Mapping[str, Any]], index: int, keep_last: int) -> int:
    """The 1-based index from which the earlier cells are always sent: that of the
    ``keep_last``-th message before ``index`` (with everything after it: replies are outputs
    of their message, code and tool cells follow it). ``index`` when ``keep_last`` is 0."""
    if keep_last <= 0:
        return index
    seen = 0
    for i in range(index - 1, 0, -1):
        if fmt.cell_kind(cells[i - 1]) in ("message", "async"):
            seen += 1
            if seen == keep_last:
                return i
    return 1


def _earlier(cells: Sequence[Mapping[str, Any]], index: int, *, exclude: Iterable[int] = (),
             include: Iterable[int] = (), default: str = "include", keep_last: int = 0
             ) -> list[tuple[int, Mapping[str, Any], str, str, dict[str, Any] | None]]:
    exclude, include = set(exclude), set(include)
    last = last_turns_start(cells, index, keep_last)
    chosen = []
    for i, cell in enumerate(cells[: index - 1], start=1):
        if i in exclude:
            continue
        # Attributes are the cell's flat metadata (docs/format.md, "The notebook"): reading one key
        # directly keeps a 5,000-cell history cheap; the full dict only when needed.
        kind = fmt.cell_kind(cell)
        attrs = None if kind == "message" else fmt.cell_attrs(cell)
        value = (cell.get("metadata") or {}).get("history") if attrs is None \
            else attrs.get("history")
        mode = history_mode(value, kind, default=default)
        if (i in include and mode == "exclude") or (mode == AUTO and (i in include
                                                                       or i >= last)):
            mode = "include"  # -i, and the last turns, always go
        if mode != "exclude":
            chosen.append((i, cell, mode, kind, attrs))
    return chosen


def build_history(cells: Sequence[Mapping[str, Any]], index: int, *, system_prompt: str = "",
                  current_text: str | None = None, included: Sequence[Included] = (),
                  exclude: Iterable[int] = (), include: Iterable[int] = (),
                  summaries: Mapping[str, str] | None = None,
                  document: str | None = None, default: str = "include",
                  keep_last: int = 0, attach: Attach | None = None) -> History:
    """The turns for the cell at 1-based ``index`` of ``cells``.

    ``summaries`` maps cell ids to summaries made in this run (stored ones are read from the
    cells); a ``summary`` cell with neither is sent whole. ``document`` is the text of a plain
    ``.md`` whose Discussion this is: sent first, as what is being discussed.
    ``current_text`` overrides the current cell's text (the kernel sends the live source).
    ``default``: the mode of cells that set no ``history`` (``default_mode``); ``auto`` cells
    are listed in ``History.auto``, except those of the last ``keep_last`` turns (sent always).
    ``attach``: messages (this one and the earlier ones) go with the files they name.
    """
    summaries = summaries or {}
    turns: list[Turn] = []
    auto: list[str] = []
    indices: dict[str, int] = {}
    if system_prompt.strip():
        turns.append(Turn("system", system_prompt, SYSTEM))
    if document and document.strip():
        turns.append(Turn("user", "The document under discussion:\n\n" + document.strip(),
                          DOCUMENT))
    for inc in included:
        turns.extend(cell_turns(inc.cell, inc.label))
    for i, cell, mode, kind, attrs in _earlier(cells, index, exclude=exclude, include=include,
                                               default=default, keep_last=keep_last):
        cid = fmt.cell_id(cell)
        summary = None
        if mode == "summary":
            summary = summaries.get(cid) or stored_summary(cell)
        group = cid or str(i)
        made = cell_turns(cell, group, summary=summary, kind=kind, attrs=attrs, attach=attach)
        if made:
            indices[group] = i
            if mode == AUTO:
                auto.append(group)
        turns.extend(made)
    current = cells[index - 1] if 0 < index <= len(cells) else None
    text = current_text if current_text is not None else (
        fmt.message_text(current) if current is not None else "")
    attached: list[str] = []
    if attach is not None:
        sent = attach(text)
        turns.append(Turn("user", sent.content, CURRENT, images=tuple(sent.images)))
        attached = list(sent.sent)
    else:
        turns.append(Turn("user", text, CURRENT))
    return History(turns, auto=auto, indices=indices, attached=attached)


def fit(history: History, budget: int | None,
        count: Callable[[list[dict[str, str]]], int]) -> History:
    """Drop the oldest groups until the turns fit ``budget`` tokens (``None``: no limit).

    ``count`` counts the tokens of a list of messages (litellm.token_counter). Bytes bound
    tokens from above for byte-level BPE tokenizers, so a history whose bytes fit is kept
    without counting anything.
    """
    turns = history.turns
    if budget is None:
        return history
    cheap = sum(len(t.content.encode()) + 8 + IMAGE_TOKENS * len(t.images) for t in turns)
    if cheap <= budget:
        return replace(history, turns=list(turns), dropped=[], tokens=None)
    each = getattr(count, "each", None)  # a counter may count many messages in one go
    sizes = (list(each([t.message() for t in turns])) if each is not None
             else [count([t.message()]) for t in turns])
    sizes = [n + IMAGE_TOKENS * len(t.images) for n, t in zip(sizes, turns, strict=True)]
    total = sum(sizes) + 3
    order: list[str] = []
    for t in turns:
        if t.group not in (SYSTEM, CURRENT) and t.group not in order:
            order.append(t.group)
    dropped: list[str] = []
    for group in order:
        if total <= budget:
            break
        total -= sum(s for t, s in zip(turns, sizes, strict=True) if t.group == group)
        dropped.append(group)
    gone = set(dropped)
    return replace(history, turns=[t for t in turns if t.group not in gone], dropped=dropped,
                   tokens=total)

