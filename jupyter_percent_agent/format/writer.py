"""Notebook -> text: the writer. Canonical form only (docs/format.md, "Canonical form").

Each cell and each of its outputs becomes a record (``record.Record``, the reader's: level,
title, footnote id, type, the attributes, the body: the notebook mapping of docs/format.md
read from right to left), and one f-string (:func:`record_text`) writes a record as::

    #{level} %%[%] Title[^ID]
    [^ID]: [TYPE](LINK) key=value ...

    body

with one blank line between metadata, body and the next heading, the attributes in their one
order (``attrs.emit_meta``) and body lines that would read as a heading escaped with one
backslash (``rules.escape_body``: the reader's own scanner says which). A record holds all
it writes; what a ``[type]`` means, either way, is ``record.py``'s table, the reader's.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from . import ns_checks as checks
from .attrs import NS, emit_meta, json_text
from .lines import Fence, fence_closes, fence_for, split_fenced, unclosed_fence
from .model import without_plain_text
from .notebook import (
    CELL_FIELDS,
    CELL_KEYS,
    CELL_TYPES,
    IN_STRUCT,
    NOTEBOOK_FIELDS,
    TRANSIENT,
    Context,
    extra_fields,
    front_matter_block,
    is_front_matter_cell,
    is_json_mime,
    is_preamble_cell,
    join_source,
    notebook_language,
)
from .outputs import OUT_STRUCT
from .record import CELL_TYPE_OF, OUTPUT_KINDS, STREAMS, TYPE_OF_CELL, Record, make_record
from .rules import escape_body, structure
from .runner import without_runner_cell_keys, without_runner_notebook_keys

__all__ = ["record_text", "write_notebook", "write_parts"]

_EMPTY: Final[Mapping] = MappingProxyType({})
_IN_FLAT: Final = IN_STRUCT - {NS}
_OUT_FLAT: Final = OUT_STRUCT - {NS}
# Entries of an input cell's namespaced metadata that its heading, type and fence say.
_IN_NS: Final = frozenset({"type", "id", "title", "level", "sub", "link", "lang", "pre",
                           "post", "fence", "outputs"})
# Entries of an output's namespaced metadata that its heading and footnote say.
_OUT_NS: Final = frozenset(
    {"type", "sub", "link", "title", "level", "id", "new", "attrs", "name", "ename"})
_TYPE_ID: Final = frozenset({"type", "id"})
# Attributes of a stream that only the namespaced entry can hold: its own, and those that
# would read it as another output (an execute_result, a later nbformat's output).
_STREAM_STRUCT: Final = frozenset(OUTPUT_KINDS["stream"].attrs) | {
    "close_fence", NS, "execution_count", "output_type"}
# "#" * level, then the input's or the output's marker: _HEADS[out][level]
_HEADS: Final = tuple(tuple("#" * level + marker for level in range(6))
                      for marker in (" %%", " %%%"))


def record_text(rec: Record, section: str | None) -> str:
    """One cell or output, ending with a newline (``section``: the section heading of a plain
    ``.md``, whose lines in a body are escaped)."""
    out, level, title, ref, typ, sub, link, struct, attrs, ns, body, _pos = rec
    meta = emit_meta(typ, sub, link, struct, attrs, ns)
    head = _HEADS[out][level]
    if title:
        head = f"{head} {title}"
    if not body:
        return f"{head}[^{ref}]\n[^{ref}]: {meta}\n" if meta else f"{head}[^{ref}]\n[^{ref}]:\n"
    if section is not None or "%%" in body:
        body = escape_body(body, section)
    if meta:
        return f"{head}[^{ref}]\n[^{ref}]: {meta}\n\n{body}\n"
    return f"{head}[^{ref}]\n[^{ref}]:\n\n{body}\n"


def write_notebook(nb: Mapping, path: str | None = None, section: str | None = None) -> str:
    """The text of ``nb``; ``section``: the section a plain ``.md``'s messages go under."""
    head, texts, crlf = write_parts(nb, path, section)
    text = head + "\n".join(texts)
    return text.replace("\n", "\r\n") if crlf else text


def write_parts(nb: Mapping, path: str | None = None, section: str | None = None,
                ) -> tuple[str, list[str], bool]:
    """What :func:`write_notebook` joins: the front matter and preamble with the blank line
    before the first record, the records (each from its heading to a newline; joined with
    one), and whether the file is CRLF. A script message file writes them behind a comment
    prefix (``script.py``)."""
    metadata = without_runner_notebook_keys(dict(nb.get("metadata") or {}))
    nbns = metadata.pop(NS, None) or {}
    cells = list(nb.get("cells") or [])
    kept: dict[str, Any] = {}
    minor = nb.get("nbformat_minor")
    if type(minor) is int and minor > 5:  # a notebook from a later nbformat (4.6, ...)
        kept["nbformat_minor"] = minor
    fields = extra_fields(nb, NOTEBOOK_FIELDS)
    if fields:
        kept["fields"] = fields
    if kept:
        metadata[NS] = kept
    fm_source = None
    if cells and is_front_matter_cell(cells[0]):
        fm_source = join_source(cells[0]["source"])
        cells = cells[1:]
    front = front_matter_block(fm_source, metadata)
    preamble = None
    if cells and is_preamble_cell(cells[0]):
        preamble = join_source(cells[0]["source"])
        section = cells[0]["metadata"][NS].get("section") or section
        cells = cells[1:]
    elif section is not None:
        preamble = ""
    level = nbns.get("level", 1)
    if type(level) is not int or not 1 <= level <= 5:
        level = 1
    ctx = Context(notebook_language(metadata), level, section, path)
    used = ctx.used
    for cell in cells:
        md = cell.get("metadata")
        ns = md.get(NS) if md else None
        ref = (ns.get("id") if ns else None) or cell.get("id")
        if ref and type(ref) is str:
            used.add(ref)
    texts: list[str] = []
    for cell in cells:
        _cell(cell, ctx, texts)
    if section is not None and texts and not any(
            kind == "section" for kind, _pos in structure(preamble or "", 0, section)[0]):
        pre = preamble or ""
        if pre and not pre.endswith("\n"):
            pre += "\n"
        preamble = pre + ("\n" if pre else "") + f"# {section}\n\n"
    parts = []
    if front is not None:
        parts.append(front)
    if preamble:
        if texts and not preamble.endswith("\n"):
            preamble += "\n\n"
        parts.append(preamble)
    elif front is not None and texts:
        parts.append("\n")
    return "".join(parts), texts, bool(nbns.get("crlf"))


# --------------------------------------------------------------------------- the records


def unique_ref(ref: str, ctx: Context, generated: bool = False) -> str:
    """``ref`` if no record written so far has it (``ctx.seen``; and, when ``generated``, no
    cell of the notebook does), else a fresh id, which is none of those either."""
    seen = ctx.seen
    if ref and ref not in seen and not (generated and ref in ctx.used):
        seen[ref] = 0
        return ref
    out = ctx.fresh(ref or "cell")
    seen[out] = 0
    return out


def _attrs(md: Mapping, flat_struct: frozenset) -> tuple[Mapping, dict | None]:
    """(the attributes to write, those whose keys clash with ``flat_struct``: written inside
    the namespaced entry as ``meta``)."""
    attrs = {}
    over: dict[str, Any] = {}
    for k, v in md.items():
        if k in flat_struct:
            over[k] = v
        else:
            attrs[k] = v
    return attrs, over


def _ns(md: Mapping) -> Mapping:
    """The namespaced entry of ``md`` (a cell's or an output's metadata), ``{}`` if none."""
    ns = md.get(NS)
    return ns if type(ns) is dict or (ns is not None and isinstance(ns, Mapping)) else _EMPTY


def _left(info: Mapping, consumed: frozenset[str], over: dict | None) -> dict | None:
    """What the namespaced entry must still say: its entries that the heading and footnote do
    not (``consumed``), and the clashing attributes (``over``) under ``meta``."""
    left = None if info.keys() <= consumed else {
        k: v for k, v in info.items() if k not in consumed}
    if over:
        left = left or {}
        left["meta"] = over
    return left


def _close(body: str, struct: dict) -> str:
    """``body`` with a closing line for a fence left open at its end (``close_fence``)."""
    line = unclosed_fence(body)
    if line is not None:
        struct["close_fence"] = True
        return body + "\n" + line
    return body


def _cell(cell: Mapping, ctx: Context, texts: list[str]) -> None:
    """The ``%%`` record of a cell, then those of its outputs, appended to ``texts``."""
    ct = cell.get("cell_type", "code")
    md = cell.get("metadata") or _EMPTY
    if TRANSIENT in md:
        md = {k: v for k, v in md.items() if k != TRANSIENT}
    md = without_runner_cell_keys(md)  # nbclient's timings, papermill's status (runner.py)
    attrs, over = (md, None) if md.keys().isdisjoint(_IN_FLAT) else _attrs(md, _IN_FLAT)
    ns = md.get(NS)
    if ns and type(ns) is not dict:
        ns = _ns(md)
    if ns:
        t = ns.get("type") or TYPE_OF_CELL.get(ct, "markdown")
        if type(t) is not str or t not in CELL_TYPE_OF \
                or not ns.keys().isdisjoint(checks.CELL_CHECKED):
            checks.check_cell(cell, ns, t)
        left = _left(ns, _IN_NS, over) if over or not ns.keys() <= _IN_NS else None
        nsid = ns.get("id")
        title = ns.get("title", "")
        if title:
            title = title.replace("\n", " ") if isinstance(title, str) else str(title)
        level = ns.get("level") or ctx.level
    else:  # no namespaced entry: every default
        ns = _EMPTY
        t = TYPE_OF_CELL.get(ct, "markdown")
        left = _left(ns, _IN_NS, over) if over else None
        nsid = None
        title = ""
        level = ctx.level
    struct: dict[str, Any] = {}
    if ct != CELL_TYPE_OF.get(t, "code"):
        struct["cell_type"] = ct
    if ct == "code":
        if cell.get("execution_count") is not None:
            struct["execution_count"] = cell["execution_count"]
    elif "attachments" in cell:
        struct["attachments"] = cell["attachments"]
    # a cell of a future type keeps its other fields, a known one a later minor version's
    known = CELL_FIELDS.get(ct, CELL_KEYS)
    if not cell.keys() <= known:
        left = left or {}
        left["fields"] = extra_fields(cell, known)
    if ct not in CELL_TYPES and "source" not in cell:
        left = left or {}
        left["no_source"] = True
    ref = unique_ref(nsid or cell.get("id") or "", ctx)
    source = cell.get("source", "")
    if type(source) is not str:
        source = join_source(source)
    body = source
    if t == "code" and ct == "code":
        lang = ns.get("lang")
        lang = ctx.lang if lang is None else lang
        pre = ns.get("pre", "")
        post = ns.get("post", "")
        fence = ns.get("fence")
        if not fence or any(fence_closes(line, Fence(fence[0], len(fence)))
                            for line in source.split("\n")):
            fence = fence_for(source)
        block = fence + lang + "\n" + source + "\n" + fence
        body = pre + block + post
        if (pre or post) and split_fenced(body) != (pre, fence + lang, source, fence, post):
            # text around the fence that would read back differently: keep it verbatim
            left = left or {}
            left["pre"], left["post"] = pre, post
            body = block
    if "```" in body or "~~~" in body:
        body = _close(body, struct)
    texts.append(record_text(make_record((False, level, title, ref, t, ns.get("sub"),
                                          ns.get("link"), struct, attrs, left, body, 0)),
                             ctx.section))
    if ct == "code" and cell.get("outputs"):
        _outputs(cell, ref, min(level + 1, 5), ctx, texts)


def _stream_info(cell: Mapping, i: int, out: Mapping) -> dict:
    """What is kept for stream or error output ``i`` of ``cell`` beyond nbformat's fields."""
    outputs = _ns(cell.get("metadata") or _EMPTY).get("outputs")
    if outputs is not None and not isinstance(outputs, Mapping):  # kept per output: a mapping
        outputs = None
    extra = out.get("metadata")
    known = OUTPUT_KINDS[out["output_type"]].fields  # a stream's or an error's
    if not outputs and extra is None and out.keys() <= known:
        return {}  # nothing kept for this output
    info = (outputs or {}).get(str(i))
    if not isinstance(info, Mapping):
        info = {}
    key = "name" if out.get("output_type") == "stream" else "ename"
    if info and info.get(key) != out.get(key):
        info = {}
    info = dict(info)
    fields = {k: v for k, v in out.items() if k not in known and k != "metadata"}
    if fields:  # a later minor version's keys ("metadata" is the constructors' side entry)
        info["fields"] = fields
    if isinstance(extra, Mapping):  # attributes given to stream_output()/error_output()
        for k, v in extra.items():
            if k == NS and isinstance(v, Mapping):
                info.update(v)
            else:
                info.setdefault("attrs", {})
                info["attrs"] = {**info["attrs"], k: v}
    return info


def _outputs(cell: Mapping, parent: str, level: int, ctx: Context, texts: list[str]) -> None:
    """The ``%%%`` records of a code cell's outputs (``parent``: the cell's footnote id,
    ``level``: its outputs' default heading level), appended to ``texts``."""
    outputs = cell["outputs"]
    i = 0
    n = len(outputs)
    index = 0
    while i < n:
        out = outputs[i]
        ot = out.get("output_type")
        index += 1
        if ot == "stream":
            info = _stream_info(cell, i, out)
            group = [out]
            i += 1
            while i < n and out.get("name") in STREAMS:
                nxt = outputs[i]
                if (nxt.get("output_type") != "stream" or _stream_info(cell, i, nxt)
                        or nxt.get("name") == group[-1].get("name")
                        or nxt.get("name") not in STREAMS
                        or not join_source(group[-1].get("text", "")).endswith("\n")):
                    break
                group.append(nxt)
                i += 1
            texts.append(_stream(group, info, parent, index, level, ctx))
            continue
        if ot == "error":
            texts.append(_error(out, _stream_info(cell, i, out), parent, index, level, ctx))
        elif ot in OUTPUT_KINDS:
            out = without_plain_text(out)
            texts.append(_data(out, ot, parent, index, level, ctx))
        else:
            texts.append(_future(out, parent, index, level, ctx))
        i += 1


def _block(info: Mapping, parent: str, index: int, level: int, default_type: str,
           ctx: Context) -> tuple[str, int, str, str, str | None, str | None]:
    """(id, level, title, type, sub, link) of output block ``index`` under ``parent``."""
    given = info.get("id")
    t = info.get("type") or default_type
    plain = info.keys() <= _TYPE_ID  # nothing but the type and the id: the defaults
    if not plain or type(t) is not str or t not in checks.HEAD_TYPES \
            or not (given is None or type(given) is str):
        checks.check_output(info, parent, index, t)
    if given and given not in ctx.seen:
        ctx.seen[given] = 0
        ref = given
    else:
        ref = unique_ref(given or f"{parent}.{index}", ctx, generated=not given)
    if plain:
        return ref, level, "", t, None, None
    title = info.get("title")
    if not title:
        title = ""
    elif type(title) is not str or "\n" in title:
        title = str(title).replace("\n", " ")
    return ref, info.get("level") or level, title, t, info.get("sub"), info.get("link")


def _stream(group: list, info: dict, parent: str, index: int, level: int,
            ctx: Context) -> str:
    default = OUTPUT_KINDS["stream"].type or ctx.lang
    ref, level, title, t, sub, link = _block(info, parent, index, level, default, ctx)
    struct: dict[str, Any] = {}
    name = group[0].get("name")
    if name in STREAMS:
        lines = []
        for out in group:
            text = join_source(out.get("text", ""))
            prefix = out.get("name", "") + ">"
            eol = text.endswith("\n")
            if eol:
                text = text[:-1]
            for line in text.split("\n"):
                lines.append(prefix + " " + line if line else prefix)
        body = "\n".join(lines)
    else:  # a stream of another name: its own block, unprefixed
        body = join_source(group[0].get("text", ""))
        eol = body.endswith("\n")
        if eol:
            body = body[:-1]
        struct["stream"] = str(name)
    if not eol:  # the last output of the group has no final newline
        struct["final_newline"] = False
    if "stream" in struct and ("```" in body or "~~~" in body):
        body = _close(body, struct)
    if ctx.output_row(t, sub).output_type != "stream":
        t = ctx.lang  # a type that would not read back as a stream
    attrs = checks.attrs_of(info, ref)
    over = None
    if not attrs.keys().isdisjoint(_STREAM_STRUCT) or (
            isinstance(attrs.get("mime_type"), str) and attrs["mime_type"] != "text/plain"):
        attrs = dict(attrs)
        over = {k: attrs.pop(k) for k in list(attrs) if k in _STREAM_STRUCT}
        if isinstance(attrs.get("mime_type"), str) and attrs["mime_type"] != "text/plain":
            over["mime_type"] = attrs.pop("mime_type")
    return record_text(make_record((True, level, title, ref, t, sub, link, struct, attrs,
                                    _left(info, _OUT_NS, over), body, 0)), ctx.section)


def _future(out: Mapping, parent: str, index: int, level: int, ctx: Context) -> str:
    """An output of a type from a later nbformat: its type, and its other fields as JSON."""
    ref, level, _title, t, _sub, _link = _block(_EMPTY, parent, index, level, ctx.lang, ctx)
    struct: dict[str, Any] = {"output_type": out.get("output_type")}
    body = json_text({k: v for k, v in out.items() if k != "output_type"}, indent=1)
    if "```" in body or "~~~" in body:
        body = _close(body, struct)
    return record_text(make_record((True, level, "", ref, t, None, None, struct, _EMPTY, None,
                                    body, 0)), ctx.section)


def _error(out: Mapping, info: dict, parent: str, index: int, level: int,
           ctx: Context) -> str:
    typ = OUTPUT_KINDS["error"].type
    ref, level, title, _t, sub, link = _block(info, parent, index, level, typ, ctx)
    tb = [join_source(x) for x in out.get("traceback") or []]
    struct: dict[str, Any] = {"ename": out.get("ename", ""), "evalue": out.get("evalue", "")}
    if not tb or any("\n" in x for x in tb):
        struct["traceback_lines"] = [x.count("\n") + 1 for x in tb]
    attrs = checks.attrs_of(info, ref)
    attrs, over = (attrs, None) if attrs.keys().isdisjoint(OUT_STRUCT) else _attrs(attrs,
                                                                                  OUT_STRUCT)
    body = _close("\n".join(tb), struct)
    return record_text(make_record((True, level, title, ref, typ, sub, link, struct, attrs,
                                    _left(info, _OUT_NS, over), body, 0)), ctx.section)


def _data(out: Mapping, ot: str, parent: str, index: int, level: int, ctx: Context) -> str:
    """A ``display_data`` or ``execute_result`` (``ot``): a reply, a tool call or result, code
    output."""
    md = out.get("metadata") or _EMPTY
    attrs, over = (md, None) if md.keys().isdisjoint(_OUT_FLAT) else _attrs(md, _OUT_FLAT)
    ns = md.get(NS)
    if type(ns) is not dict:
        ns = _ns(md)
    kind = OUTPUT_KINDS[ot]
    known = kind.fields
    if not out.keys() <= known:
        ns = {**ns, "fields": extra_fields(out, known)}
    ref, level, title, t, sub, link = _block(ns, parent, index, level, kind.type or ctx.lang, ctx)
    row = ctx.output_row(t, sub)
    if row.output_type == "error":
        raise checks.bad(f"[^{ref}]", "type", t, f"a type of {ot} (error is an error's)")
    struct: dict[str, Any] = {}
    data = out.get("data") or _EMPTY
    is_result = ot == "execute_result"
    body = None
    if len(data) == 1:
        [(mime, value)] = data.items()
        if is_json_mime(mime):
            body = json_text(value, indent=1)
        elif type(value) is str:
            body = value
        elif isinstance(value, list):
            body = join_source(value)
        if body is not None:
            if row.output_type == "stream" and not is_result:  # would read back as a stream
                if mime == "text/plain":
                    body = None  # the bundle form
                else:
                    struct["mime_type"] = mime
            elif mime != row.mime:
                struct["mime_type"] = mime
    if body is None:
        mimes = list(data)
        struct["mime_type"] = mimes
        chunks = []
        for mime in mimes:
            value = data[mime]
            content = json_text(value, indent=1) if is_json_mime(mime) else join_source(value)
            fence = fence_for(content)
            chunks.append(fence + mime + "\n" + content + "\n" + fence)
        body = "\n\n".join(chunks)
    if is_result:
        struct["execution_count"] = out.get("execution_count")
    if "```" in body or "~~~" in body:
        body = _close(body, struct)
    left = _left(ns, _OUT_NS, over) if over or not ns.keys() <= _OUT_NS else None
    return record_text(make_record((True, level, title, ref, t, sub, link, struct, attrs, left,
                                    body, 0)), ctx.section)
