"""The notebook mapping's output half: what an output (``%%%``) record means as nbformat
outputs, appended to the input cell above it (docs/format.md, "The notebook").

Which output type a heading reads as, and its body's MIME type, is the ``[type]`` table
(``record.output_of``); each output type's fields and attributes are ``record.OUTPUT_KINDS``.
:func:`add_output` reads the attributes every output shares and hands the record to the rule
of its output type: streams (:func:`_read_streams`), an error (:func:`_read_error`), display
data or an execute result (in :func:`add_output` itself), a later nbformat's output
(:func:`_read_future`).
"""

from __future__ import annotations

import json
from typing import Any, Final

from .attrs import NS
from .lines import split_fenced
from .notebook import Context, drop_last_line, is_json_mime, put_fields, take_ns
from .record import OUTPUT_KINDS, STREAMS, Record

__all__ = ["OUT_STRUCT", "add_output"]

# The attributes of an output's footnote that are not its metadata: those that hold an output
# type's fields (record.OUTPUT_KINDS; ``stream=`` aside, read only on a block that reads as a
# stream and metadata on any other), the closing line, a later nbformat's output type, NS.
OUT_STRUCT: Final = frozenset(
    attr for kind in OUTPUT_KINDS.values() for attr in kind.attrs if attr != "stream"
) | {"close_fence", "output_type", NS}

# Attributes of streams and errors that display data cannot carry.
_NOT_DATA: Final = OUT_STRUCT & {
    attr for ot in ("stream", "error") for attr in OUTPUT_KINDS[ot].attrs}


def add_output(rec: Record, cell: dict, index: int, ctx: Context, parent: str,
               out_level: int) -> None:
    """Append the outputs of an output (``%%%``) record read to ``cell``: the ``index``-th
    block under it, whose default id is ``PARENT.index`` and default level ``out_level``."""
    _out, level, title, ref, t, sub, link, _struct, attrs, _ns, body, pos = rec
    t = t or "output"
    # structural attributes (mime_type, execution_count, ...) are rare: one test for all
    plain = attrs.keys().isdisjoint(OUT_STRUCT)
    if plain or NS not in attrs:
        ns: dict[str, Any] = {}
        over = None
    else:
        ns, over = take_ns(attrs, ctx, pos)
    if ref is not None and ref != f"{parent}.{index}":
        ns["id"] = ref
    if title:
        ns["title"] = title
    if level != out_level:
        ns["level"] = level
    if sub is not None:
        ns["sub"] = sub
    if link is not None:
        ns["link"] = link
    if not plain and "close_fence" in attrs and attrs.pop("close_fence") is True:
        body = drop_last_line(body)
    row = ctx.output_row(t, sub)
    if row.output_type == "error":
        _read_error(rec, ns, over, body, cell, ctx)
        return
    if t != ctx.lang:
        ns["type"] = t
    mt = has_ec = None
    if not plain:
        if "output_type" in attrs:
            _read_future(pos, attrs, body, cell, ctx)
            return
        mt = attrs.get("mime_type")
        has_ec = "execution_count" in attrs
    if (row.output_type == "stream" and not has_ec
            and (mt is None or mt == "text/plain")):
        _read_streams(rec, ns, over, body, cell, ctx)
        return
    ec = None
    if not plain:
        if t == ctx.lang:
            ns.pop("type", None)
        attrs.pop("mime_type", None)
        ec = attrs.pop("execution_count", None)
        if not attrs.keys().isdisjoint(_NOT_DATA):
            key = sorted(attrs.keys() & _NOT_DATA)[0]
            raise ctx.error(f"{key}= belongs to [error] or stream cells, not [{t}]", pos)
        if over:
            attrs.update(over)
    if mt is None:
        bundle = {row.mime: body}
    elif isinstance(mt, str):
        bundle = {mt: _decode(mt, body, ctx, pos)}
    elif isinstance(mt, list) and all(isinstance(m, str) for m in mt):
        bundle = _read_bundle(mt, body, ctx, pos)
    else:
        raise ctx.error(f"mime_type must be a string or a list of strings, not {mt!r}", pos)
    fields = ns.pop("fields", None) if not plain else None
    if ns:
        attrs[NS] = ns
    if has_ec:
        if ec is not None and (not isinstance(ec, int) or isinstance(ec, bool)):
            raise ctx.error(f"execution_count must be an integer, not {ec!r}", pos)
        out = {"output_type": "execute_result", "data": bundle, "metadata": attrs,
               "execution_count": ec}
    else:
        out = {"output_type": "display_data", "data": bundle, "metadata": attrs}
    if fields is not None:
        put_fields(out, fields, OUTPUT_KINDS[out["output_type"]].fields)
    cell["outputs"].append(out)


def _decode(mime: str, content: str, ctx: Context, pos: int) -> Any:
    if is_json_mime(mime):
        try:
            return json.loads(content)
        except ValueError as err:
            raise ctx.error(f"{mime} content is not JSON: {err}", pos) from None
    return content


def _read_bundle(mimes: list[str], body: str, ctx: Context, pos: int) -> dict:
    bundle: dict[str, Any] = {}
    rest = body
    for mime in mimes:
        parts = split_fenced(rest)
        if parts is None or not parts[3]:
            raise ctx.error(f"mime_type lists {mime} but no closed fenced block holds it", pos)
        _pre, _open, content, _close, rest = parts
        bundle[mime] = _decode(mime, content, ctx, pos)
    return bundle


def _read_streams(rec: Record, ns: dict, over: dict | None, body: str, cell: dict,
                  ctx: Context) -> None:
    """The stream outputs of an output record (``body``: its body less a closing line)."""
    pos, sub, attrs = rec.pos, rec.sub, rec.attrs
    eol = attrs.pop("final_newline", True)
    fields = ns.pop("fields", None) if ns else None
    default = sub if sub in STREAMS else "stdout"
    named = attrs.pop("stream", None) if "stream" in attrs else None
    if named is not None:
        if not isinstance(named, str) or not named:
            raise ctx.error(f"stream= must be the stream's name, not {named!r}", pos)
        default = named
    streams: list[list] = []
    if named is not None:
        if body or not eol:
            streams.append([named, [body]])  # one stream, its lines unprefixed
    elif body or not eol:
        for line in body.split("\n"):
            # record.STREAMS spelled out: three tests a line, a third of a stream's read
            # against a generic ``NAME>`` lookup (tests/unit/test_format_type_table.py checks
            # that each of STREAMS is here)
            if line.startswith("stdout>"):
                name, text = "stdout", line[8:] if line.startswith("stdout> ") else line[7:]
            elif line.startswith("stderr>"):
                name, text = "stderr", line[8:] if line.startswith("stderr> ") else line[7:]
            elif line.startswith("stdin>"):
                name, text = "stdin", line[7:] if line.startswith("stdin> ") else line[6:]
            else:
                name, text = default, line
            if streams and streams[-1][0] == name:
                streams[-1][1].append(text)
            else:
                streams.append([name, [text]])
    outputs = cell["outputs"]
    first = len(outputs)
    for name, texts in streams:
        outputs.append({"output_type": "stream", "name": name, "text": "\n".join(texts) + "\n"})
    if not streams:
        outputs.append({"output_type": "stream", "name": default, "text": ""})
    elif eol is False:
        last = outputs[-1]
        last["text"] = last["text"][:-1]
    if fields is not None:
        put_fields(outputs[first], fields, OUTPUT_KINDS["stream"].fields)
    if over:
        attrs.update(over)
    if attrs:
        ns["attrs"] = attrs
    prev = outputs[first - 1] if first else None
    if (not ns and fields is None and prev is not None and prev["output_type"] == "stream"
            and prev["text"].endswith("\n") and prev["name"] != outputs[first]["name"]
            and named is None and prev["name"] in STREAMS):
        ns["new"] = True
    if ns:
        ns["name"] = outputs[first]["name"]
        _cell_ns(cell)["outputs"][str(first)] = ns


def _read_error(rec: Record, ns: dict, over: dict | None, body: str, cell: dict,
                ctx: Context) -> None:
    """The error output of an ``[error]`` record (``body``: its body less a closing line)."""
    pos, attrs = rec.pos, rec.attrs
    ename = attrs.pop("ename", "")
    evalue = attrs.pop("evalue", "")
    counts = attrs.pop("traceback_lines", None)
    lines = body.split("\n")
    if counts is None:
        tb = lines
    else:
        if not isinstance(counts, list) or not all(
            isinstance(n, int) and n > 0 for n in counts
        ) or (counts and sum(counts) != len(lines)) or (not counts and body):
            raise ctx.error("traceback_lines does not add up to the traceback's lines", pos)
        tb, at = [], 0
        for n in counts:
            tb.append("\n".join(lines[at : at + n]))
            at += n
    fields = ns.pop("fields", None)
    if over:
        attrs.update(over)
    if attrs:
        ns["attrs"] = attrs
    outputs = cell["outputs"]
    if ns:
        ns["ename"] = str(ename)
        _cell_ns(cell)["outputs"][str(len(outputs))] = ns
    out = {"output_type": "error", "ename": str(ename), "evalue": str(evalue), "traceback": tb}
    if fields is not None:
        put_fields(out, fields, OUTPUT_KINDS["error"].fields)
    outputs.append(out)


def _read_future(pos: int, attrs: dict, body: str, cell: dict, ctx: Context) -> None:
    """An output of a future type: ``output_type="NAME"``, its other fields as JSON."""
    ot = attrs.pop("output_type")
    if not isinstance(ot, str) or ot in OUTPUT_KINDS:
        raise ctx.error(f"output_type= names an output type from a later nbformat, not {ot!r}",
                        pos)
    try:
        fields = json.loads(body) if body.strip() else {}
    except ValueError as err:
        raise ctx.error(f"the fields of a {ot} output are not JSON: {err}", pos) from None
    if not isinstance(fields, dict):
        raise ctx.error(f"the fields of a {ot} output must be a JSON object", pos)
    cell["outputs"].append({**fields, "output_type": ot})


def _cell_ns(cell: dict) -> dict:
    """The cell's namespaced metadata, created with an ``outputs`` map if missing."""
    ns = cell["metadata"].get(NS)
    if ns is None:
        ns = cell["metadata"][NS] = {}
    ns.setdefault("outputs", {})
    return ns
