"""Helpers that build and inspect cells and outputs, so no other part does it by hand.

Everything here works on the plain dicts ``reads`` returns and ``writes`` accepts. The split
between flat metadata (the footnote's ``key=value`` attributes) and the namespaced structural
part ``metadata["percent_agent"]`` is this module's business, nobody else's.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Any

from .notebook import (
    LANGS,
    NBFORMAT_ID,
    NS,
    is_front_matter_cell,
    is_preamble_cell,
    join_source,
)
from .text import escape_surrogates, escape_surrogates_in

__all__ = [
    "PLAIN_COPY",
    "cell_attrs",
    "cell_id",
    "cell_kind",
    "cell_language",
    "clear_outputs",
    "code_data_output",
    "error_output",
    "message_text",
    "new_cell_id",
    "new_code_cell",
    "new_id",
    "new_message",
    "next_output_id",
    "output_attrs",
    "output_id",
    "output_kind",
    "output_text",
    "reply_output",
    "result_output",
    "set_cell_attrs",
    "set_output_attrs",
    "short_id",
    "short_ids",
    "stream_output",
    "tool_call_id",
    "tool_call_output",
    "tool_result_output",
    "with_plain_text",
    "without_plain_text",
]

# Input cells whose kind is their footnote type ([tool_call], [task]...).
_TYPED_KINDS = ("code", "tool", "tool_call", "toolchain", "async", "task")


def _ns(obj: Mapping) -> Mapping:
    ns = (obj.get("metadata") or {}).get(NS)
    # type() first: an ABC isinstance check per call is the cost of listing a large file.
    return ns if type(ns) is dict or isinstance(ns, Mapping) else {}


def new_id() -> str:
    """A short, random, valid nbformat id (also a footnote id). Unique, not secret: the
    ``random`` module (seeded from the system, reseeded in a forked child) spares a system
    call per id, which a batch of task runs makes thousands of."""
    return f"c{random.getrandbits(32):08x}"


def new_cell_id(nb: Mapping) -> str:
    """The one rule for a new cell's id: :func:`new_id`, not held by any cell of ``nb``."""
    used = {cell_id(c) for c in nb.get("cells") or ()}
    while (cid := new_id()) in used:
        pass
    return cid


def next_output_id(cell_id: str, outputs: Iterable[Mapping]) -> str:
    """The one rule for the id of a cell's next output: ``ID.n`` after its ``outputs`` (tool
    calls, ``ID.NONCE``, do not count: a hex nonce can be all digits; an output without an
    id of its own counts as its place)."""
    prefix = cell_id + "."
    top = 0
    for i, out in enumerate(outputs, start=1):
        if output_kind(out) == "tool_call":
            continue
        oid = output_id(out)
        if oid is None:
            top = max(top, i)
        elif oid.startswith(prefix) and oid[len(prefix):].isdigit():
            top = max(top, int(oid[len(prefix):]))
    return f"{prefix}{top + 1}"


def tool_call_id(cell_id: str) -> str:
    """The id of a new tool call of the cell: ``ID.NONCE``, a random nonce so that text
    cannot forge a call (its results are ``ID.NONCE.n``)."""
    import secrets

    return f"{cell_id}.{secrets.token_hex(3)}"


def _set_attrs(obj: dict, attrs: Mapping[str, Any]) -> None:
    meta = obj.setdefault("metadata", {})  # the attributes are the flat part of the metadata
    for key, value in attrs.items():
        if key == NS:
            raise ValueError(f"{NS!r} is the format's own part of the metadata, not an attribute")
        if value is None:
            meta.pop(key, None)
        else:
            meta[key] = escape_surrogates_in(value)


def set_cell_attrs(cell: dict, attrs: Mapping[str, Any]) -> None:
    """Set footnote attributes of a cell, in place (``None`` removes one). The one way
    other parts change a cell's attributes."""
    _set_attrs(cell, attrs)


def set_output_attrs(output: dict, attrs: Mapping[str, Any]) -> None:
    """Set attributes of an output, in place (``None`` removes one)."""
    _set_attrs(output, attrs)


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def short_ids(nb_id: str) -> list[str]:
    """The footnote ids a cell JupyterLab made (its id is a 36-character UUID) may have in a
    file, shortest first: 8, 12, 16 hex digits (never all digits), then the UUID itself.
    Any other id is its own footnote id."""
    if not _UUID.fullmatch(nb_id):
        return [nb_id]
    digits = nb_id.replace("-", "").lower()
    return [digits[:n] for n in (8, 12, 16) if not digits[:n].isdigit()] + [nb_id]


def short_id(nb_id: str, taken: Container[str] = ()) -> str:
    """The footnote id a file gives the cell ``nb_id``: its shortest form that no other cell
    holds (``taken``). A save and the kernel agree on it without talking to each other."""
    forms = short_ids(nb_id)
    return next((f for f in forms if f not in taken), forms[-1])


# --------------------------------------------------------------------------- cells


def cell_kind(cell: Mapping) -> str:
    """``message``, ``code``, ``raw``, ``note``, ``agent``, ``tool``, ``tool_call``,
    ``toolchain``, ``async`` or ``task``."""
    ct = cell.get("cell_type")
    if ct == "markdown":
        return "note"
    if ct != "code":  # raw, or a cell type from a later nbformat: never run
        return "raw"
    t = _ns(cell).get("type")
    if t in _TYPED_KINDS:
        return t
    if (cell.get("metadata") or {}).get("definition") == "agent":
        return "agent"
    return "message"


def document_part(cell: Mapping) -> str | None:
    """``"front_matter"`` or ``"preamble"`` for the cells that hold the document around the
    conversation (the YAML header; a plain ``.md``'s text before its Discussion heading),
    ``None`` for a conversation cell."""
    if is_front_matter_cell(cell):
        return "front_matter"
    if is_preamble_cell(cell):
        return "preamble"
    return None


def cell_title(cell: Mapping) -> str:
    """The title on the cell's heading line (``""`` when it has none)."""
    title = _ns(cell).get("title")
    return title if isinstance(title, str) else ""


def cell_link(cell: Mapping) -> str | None:
    """The link of a cell's type, e.g. the FILE of ``[async](FILE)``."""
    link = _ns(cell).get("link")
    return link if isinstance(link, str) and link else None


def cell_attrs(cell: Mapping) -> dict:
    """The footnote ``key=value`` attributes of a cell (its flat metadata)."""
    return {k: v for k, v in (cell.get("metadata") or {}).items() if k != NS}


def cell_id(cell: Mapping) -> str:
    """The footnote id: ``cell.id``, or the one kept in metadata when that is not valid."""
    return _ns(cell).get("id") or cell.get("id") or ""


def cell_language(cell: Mapping, nb: Mapping | None = None) -> str:
    """The language of a ``[code]`` cell: its fence's info string, else the notebook's
    kernel language (``python`` for the agent kernel's ``markdown``)."""
    lang = _ns(cell).get("lang") or (cell.get("metadata") or {}).get("language")
    if isinstance(lang, str) and lang.strip():
        return lang.strip().lower()
    meta = (nb or {}).get("metadata") or {}
    name = ((meta.get("kernelspec") or {}).get("language")
            or (meta.get("language_info") or {}).get("name") or "python")
    name = str(name).lower()
    return "python" if name == "markdown" else name


def clear_outputs(cell: dict) -> None:
    """Empty a cell's outputs before it runs again: the outputs, what the format keeps about
    them (stream and error attributes) and its execution count."""
    cell["outputs"] = []
    if "execution_count" in cell:
        cell["execution_count"] = None
    ns = (cell.get("metadata") or {}).get(NS)
    if isinstance(ns, dict):
        ns.pop("outputs", None)
        if not ns:
            cell["metadata"].pop(NS)


def message_text(cell: Mapping) -> str:
    """What a message says (for ``[code]`` cells: the code)."""
    return join_source(cell.get("source", ""))


def new_message(text: str, *, attrs: Mapping | None = None, cell_id: str | None = None,
                title: str | None = None, kind: str = "message") -> dict:
    """A message cell (a code cell, so running it sends it to the agent); ``kind`` makes
    another cell instead: ``"raw"``, ``"note"`` (Markdown, never sent), or a typed input cell
    (``"tool_call"``, ``"task"``...)."""
    if kind not in ("message", "raw", "note") and kind not in _TYPED_KINDS:
        raise ValueError(f"no input cell of kind {kind!r}")
    text = escape_surrogates(text)
    metadata: dict[str, Any] = escape_surrogates_in(dict(attrs or {}))
    ns: dict[str, Any] = {} if kind in ("message", "raw", "note") else {"type": kind}
    cid = cell_id or new_id()
    if not NBFORMAT_ID.fullmatch(cid):
        ns["id"] = cid
        cid = new_id()
    if title:
        ns["title"] = escape_surrogates(title.replace("\n", " "))
    if ns:
        metadata[NS] = ns
    if kind in ("raw", "note"):
        return {"cell_type": "raw" if kind == "raw" else "markdown", "id": cid,
                "metadata": metadata, "source": text}
    return {"cell_type": "code", "id": cid, "metadata": metadata, "source": text,
            "outputs": [], "execution_count": None}


def new_code_cell(code: str, *, language: str | None = None, cell_id: str | None = None,
                  attrs: Mapping | None = None) -> dict:
    """A ``[code]`` cell whose fence holds ``code`` (info string ``language``; None: the
    notebook's language)."""
    cell = new_message(code, attrs=attrs, cell_id=cell_id, kind="code")
    if language:
        cell["metadata"][NS]["lang"] = escape_surrogates(language)
    return cell


# --------------------------------------------------------------------------- outputs


def output_kind(output: Mapping) -> str:
    """``reply``, ``tool_call``, ``tool_result``, ``stream``, ``error`` or ``data``."""
    ot = output.get("output_type")
    if ot == "stream":
        return "stream"
    if ot == "error":
        return "error"
    md = output.get("metadata") or {}
    t = _ns(output).get("type")
    if t is None or t.lower() in LANGS:
        return "data"
    if t == "tool_result":
        return "tool_result"
    if t == "tool":
        return "tool_result" if "status" in md else "tool_call"
    return "reply"


def output_attrs(output: Mapping, cell: Mapping | None = None) -> dict:
    """An output's attributes (``agent``, ``model``, ``time``, ``tokens_in``, ``status``...).

    Stream and error outputs have no metadata in nbformat: pass their ``cell`` to see the
    attributes kept in the cell's metadata.
    """
    md = output.get("metadata") or {}
    attrs = {k: v for k, v in md.items() if k != NS}
    ns = _ns(output)
    if output.get("output_type") in ("stream", "error") and cell is not None:
        outs = cell.get("outputs") or []
        for i, o in enumerate(outs):
            if o is output:
                info = (_ns(cell).get("outputs") or {}).get(str(i)) or {}
                attrs = {**(info.get("attrs") or {}), **attrs}
                break
    t = ns.get("type")
    if (t and "agent" not in attrs and output_kind(output) == "reply" and t != "output"):
        attrs = {"agent": t, **attrs}
    return attrs


def output_id(output: Mapping) -> str | None:
    """The footnote id given to an output, when it has one of its own."""
    return _ns(output).get("id")


def output_text(output: Mapping) -> str:
    """The text of a reply, tool call or result, stream or error."""
    ot = output.get("output_type")
    if ot == "stream":
        return join_source(output.get("text", ""))
    if ot == "error":
        tb = output.get("traceback") or []
        if tb:
            return "\n".join(join_source(x) for x in tb)
        return f"{output.get('ename', '')}: {output.get('evalue', '')}"
    data = output.get("data") or {}
    for mime in ("text/markdown", "text/plain"):
        if mime in data:
            return join_source(data[mime])
    return ""


PLAIN_COPY = "plain_copy"
"""The mark of a ``text/plain`` added beside an output's rich types for clients that show only
plain text (``jupyter console``, ``jupyter run``): the writer drops both, so the file keeps
its own byte form."""


def with_plain_text(output: Mapping) -> Mapping:
    """``output`` with a ``text/plain`` beside its rich types (marked :data:`PLAIN_COPY`), for
    clients that show only plain text; ``output`` itself when it has one or is no bundle."""
    data = output.get("data")
    if not isinstance(data, Mapping) or not data or "text/plain" in data:
        return output
    if "text/markdown" in data:
        text = join_source(data["text/markdown"])
    else:
        mime = next(iter(data))
        text = json.dumps(data[mime], indent=1, ensure_ascii=False) \
            if mime.endswith("json") and not isinstance(data[mime], str) else f"[{mime}]"
    metadata = dict(output.get("metadata") or {})
    ns = metadata.get(NS)
    metadata[NS] = {**(ns if isinstance(ns, Mapping) else {}), PLAIN_COPY: True}
    return {**output, "data": {**data, "text/plain": text}, "metadata": metadata}


def without_plain_text(output: Mapping) -> Mapping:
    """``output`` without the ``text/plain`` that :func:`with_plain_text` added (the form the
    file keeps), or ``output`` itself."""
    metadata = output.get("metadata")
    # type() first: isinstance of an ABC is a Python call, and this runs for every output
    ns = metadata.get(NS) if type(metadata) is dict or isinstance(metadata, Mapping) else None
    if ns is None or not (type(ns) is dict or isinstance(ns, Mapping)) \
            or not ns.get(PLAIN_COPY):
        return output
    data = {k: v for k, v in (output.get("data") or {}).items() if k != "text/plain"}
    rest = {k: v for k, v in ns.items() if k != PLAIN_COPY}
    md = {k: v for k, v in metadata.items() if k != NS}  # type: ignore[union-attr]
    if rest:
        md[NS] = rest
    return {**output, "data": data, "metadata": md}


def _data_output(mime: str, text: str, typ: str, out_id: str | None, attrs: Mapping | None,
                 extra: Mapping | None = None) -> dict:
    text = escape_surrogates(text)
    metadata: dict[str, Any] = escape_surrogates_in(dict(extra or {}))
    metadata.update(escape_surrogates_in(dict(attrs or {})))
    ns: dict[str, Any] = {"type": escape_surrogates(typ)}
    if out_id is not None:
        ns["id"] = out_id
    metadata[NS] = ns
    return {"output_type": "display_data", "data": {mime: text}, "metadata": metadata}


def result_output(text: str, *, out_id: str, language: str = "python",
                  execution_count: int | None = None, attrs: Mapping | None = None) -> dict:
    """The value of a ``[code]`` cell (its ``__result__``): ``execute_result`` with
    ``text/plain``, Jupyter's ``Out[n]``; written ``[LANGUAGE]``."""
    out = _data_output("text/plain", text, language, out_id, attrs)
    return {"output_type": "execute_result", "data": out["data"],
            "metadata": out["metadata"], "execution_count": execution_count}


def code_data_output(data: Mapping[str, Any], *, out_id: str | None, language: str = "python",
                     execution_count: int | None = None, result: bool = False,
                     attrs: Mapping | None = None) -> dict:
    """A rich output of a code kernel (``display_data``, or ``execute_result`` when
    ``result``): every MIME type of ``data`` kept as sent (PNG and JPEG as base64, JSON as
    objects); written ``[LANGUAGE] mime_type=...``."""
    kept = {k: escape_surrogates(v) if isinstance(v, str) else escape_surrogates_in(v)
            for k, v in data.items()}
    metadata: dict[str, Any] = escape_surrogates_in(dict(attrs or {}))
    ns: dict[str, Any] = {"type": escape_surrogates(language)}
    if out_id is not None:
        ns["id"] = out_id
    metadata[NS] = ns
    if result:
        return {"output_type": "execute_result", "data": kept, "metadata": metadata,
                "execution_count": execution_count}
    return {"output_type": "display_data", "data": kept, "metadata": metadata}


def reply_output(text: str, *, agent: str, out_id: str, attrs: Mapping | None = None) -> dict:
    """An agent's reply: ``display_data`` with ``text/markdown``; written ``[AGENT]``."""
    attrs = {k: v for k, v in (attrs or {}).items() if not (k == "agent" and v == agent)}
    return _data_output("text/markdown", text, agent, out_id, attrs)


def tool_call_output(name: str, code: str, *, out_id: str, attrs: Mapping | None = None) -> dict:
    """A tool call made by an agent (id ``CELL.NONCE``); written ``[tool] name="NAME"``."""
    return _data_output("text/plain", code, "tool", out_id, attrs, {"name": name})


def tool_result_output(text: str, *, out_id: str, status: str,
                       attrs: Mapping | None = None) -> dict:
    """That call's result (id ``CELL.NONCE.n``); written ``[tool] status="..."``."""
    return _data_output("text/plain", text, "tool", out_id, attrs, {"status": status})


def _side_metadata(out_id: str | None, attrs: Mapping | None) -> dict | None:
    md: dict[str, Any] = escape_surrogates_in(dict(attrs or {}))
    if out_id is not None:
        md[NS] = {"id": out_id}
    return md or None


def stream_output(name: str, text: str, *, out_id: str | None = None,
                  attrs: Mapping | None = None, language: str | None = None) -> dict:
    """A ``stream`` output (``stdout`` or ``stderr``); ``language``: its ``[LANG]`` when not
    the notebook's (a code cell of another language).

    nbformat streams have no metadata: when ``out_id`` or ``attrs`` are given they ride in a
    ``metadata`` key that ``writes`` honours and ``reads`` moves into the cell's metadata.
    """
    if name not in ("stdout", "stderr"):
        raise ValueError(f"stream name must be stdout or stderr, not {name!r}")
    out: dict[str, Any] = {"output_type": "stream", "name": name,
                           "text": escape_surrogates(text)}
    md = _side_metadata(out_id, attrs)
    if language:
        md = md or {}
        md.setdefault(NS, {})["type"] = escape_surrogates(language)
    if md:
        out["metadata"] = md
    return out


def error_output(ename: str, evalue: str, traceback: Sequence[str], *,
                 out_id: str | None = None, attrs: Mapping | None = None) -> dict:
    """An ``error`` output; ``out_id``/``attrs`` as for :func:`stream_output`."""
    out: dict[str, Any] = {"output_type": "error", "ename": escape_surrogates(ename),
                           "evalue": escape_surrogates(evalue),
                           "traceback": [escape_surrogates(line) for line in traceback]}
    md = _side_metadata(out_id, attrs)
    if md:
        out["metadata"] = md
    return out
