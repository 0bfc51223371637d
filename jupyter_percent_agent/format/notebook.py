"""Records <-> nbformat 4.5 notebook dicts (docs/format.md, "The notebook").

Mapping, in short (docs/format.md has the table):

* ``%%`` cells are code cells (messages, ``[code]``, ``[tool]``, ``[tool_call]``, ...),
  ``[raw]`` raw cells, ``cell_type="markdown"`` markdown cells; the preamble before the first
  cell is a markdown cell, the front matter a raw cell with id ``front-matter``.
* footnote ``key=value`` attributes are the cell's flat metadata; the structural parts (type,
  title, heading level, link, invalid ids, the text around a ``[code]`` fence, stream and error
  output attributes) live under ``metadata["percent_agent"]``.
* ``%%%`` cells are the outputs of the input cell above them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from .attrs import json_text
from .errors import FormatError
from .lines import FENCE_LINE, Fence, fence_closes, fence_for, scan, unclosed_fence
from .parse import INPUT_TYPES, Document, Record
from .safe_yaml import load_yaml

NS: Final = "percent_agent"
DEFAULT_KERNELSPEC: Final = {
    "name": "percent-agent", "display_name": "Agent", "language": "markdown"}
FRONT_MATTER_ID: Final = "front-matter"
PREAMBLE_ID: Final = "preamble"

# Cell metadata that Jupyter recomputes on every load (from the notebook's signature) and
# nbformat's own .ipynb writer and reader drop (``strip_transient``): never part of a message.
TRANSIENT: Final = "trusted"
IN_STRUCT: Final = frozenset({"cell_type", "execution_count", "attachments", "close_fence", NS})
OUT_STRUCT: Final = frozenset({"execution_count", "mime_type", "ename", "evalue",
                               "traceback_lines", "final_newline", "close_fence", "output_type",
                               NS})
# The cell types and output types of nbformat 4.5; any other is from a future minor version
# (its "unrecognized_cell" and "unrecognized_output"), kept as it is.
CELL_TYPES: Final = frozenset({"code", "markdown", "raw"})
OUTPUT_TYPES: Final = frozenset({"display_data", "execute_result", "stream", "error"})
# Streams whose lines carry their name as a prefix (``stdout> ``); JupyterLab records what a
# user typed into input() as a "stdin" stream. A stream of any other name is a block of its own
# with ``stream="NAME"`` and its text unprefixed.
STREAMS: Final = ("stdout", "stderr", "stdin")
# Keys of a cell of a future type that the file holds elsewhere than in its ``fields``.
_CELL_KEYS: Final = frozenset({"cell_type", "id", "metadata", "source", "attachments"})
# The keys nbformat 4.5 gives each kind of cell, output and notebook. Any other key (a later
# minor version's) is kept as it is, under "fields" in the namespaced metadata, and put back
# on reading: a notebook of nbformat 4.6+ round-trips equal as JSON.
CELL_FIELDS: Final = {
    "code": frozenset({"cell_type", "id", "metadata", "source", "execution_count", "outputs"}),
    "markdown": _CELL_KEYS, "raw": _CELL_KEYS}
OUTPUT_FIELDS: Final = {
    "stream": frozenset({"output_type", "name", "text"}),
    "display_data": frozenset({"output_type", "data", "metadata"}),
    "execute_result": frozenset({"output_type", "data", "metadata", "execution_count"}),
    "error": frozenset({"output_type", "ename", "evalue", "traceback"})}
NOTEBOOK_FIELDS: Final = frozenset({"cells", "metadata", "nbformat", "nbformat_minor"})
# Types of %%% cells that are code output rather than an agent's reply.
LANGS: Final = frozenset({
    "python", "python2", "python3", "ipython", "ipython3", "r", "julia", "bash", "sh", "shell",
    "zsh", "powershell", "javascript", "js", "typescript", "ts", "node", "ruby", "scala", "java",
    "c", "c++", "cpp", "c#", "csharp", "f#", "fsharp", "rust", "go", "sql", "matlab", "octave",
    "perl", "lua", "kotlin", "haskell", "ocaml", "clojure", "scheme", "groovy", "sas", "stata",
    "q", "idl", "maxima", "wolfram", "mathematica", "sage", "xonsh", "tcl", "gnuplot", "coconut",
    "logtalk", "robotframework", "sos", "swift", "php", "dart", "elixir", "erlang", "nim", "zig",
})
#: A valid nbformat 4.5 cell id (``fullmatch`` it); a footnote id that is one is the cell's id.
NBFORMAT_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_BAD_ID_CHARS: Final = re.compile(r"[^A-Za-z0-9_-]")
_FM_CELL: Final = re.compile(r"---\n(?:.*\n)?(?:---|\.\.\.)[ \t]*", re.S)

_DERIVED_OUT: Final = frozenset(
    {"type", "sub", "link", "title", "level", "id", "new", "attrs", "name", "ename"})
_PLAIN_TYPES: Final = frozenset({"tool", "tool_result", "error"})
_NOT_DATA: Final = frozenset({"ename", "evalue", "traceback_lines", "final_newline"})

def join_source(src: Any) -> str:
    return src if isinstance(src, str) else "".join(src)


def is_json_mime(mime: str) -> bool:
    return mime == "application/json" or (mime.startswith("application/") and
                                          mime.endswith("+json"))


def default_mime(typ: str, is_lang: bool) -> str:
    if is_lang or typ in ("tool", "tool_result", "error"):
        return "text/plain"
    return "text/markdown"


class Context:
    """What the cells of one notebook share: language, heading level, ids in use."""

    __slots__ = ("_langs", "doc", "lang", "level", "path", "section", "used")

    def __init__(self, lang: str = "python", level: int = 1, section: str | None = None,
                 path: str | None = None, doc: Document | None = None):
        self.lang = lang
        self.level = level
        self.used: set[str] = set()
        self._langs: dict[str, bool] = {}
        self.section = section
        self.path = path
        self.doc = doc

    def is_lang(self, typ: str) -> bool:
        known = self._langs.get(typ)
        if known is None:
            known = self._langs[typ] = typ == self.lang or typ.lower() in LANGS
        return known

    def error(self, message: str, rec: Record | None = None,
              footnote: bool = False) -> FormatError:
        """A FormatError naming the record's heading line, or with ``footnote`` the line of
        its footnote definition (when it has one) for what the footnote says."""
        line = None
        if rec is not None and self.doc is not None:
            pos = rec.pos
            if footnote:
                text = self.doc.text
                at = pos
                for _ in range(3):  # the heading, at most one blank line, the footnote
                    at = text.find("\n", at) + 1
                    if not at:
                        break
                    if text.startswith("[^", at):
                        pos = at
                        break
            line = self.doc.line(pos)
        return FormatError(message, line=line, path=self.path)

    def fresh(self, base: str) -> str:
        """A valid nbformat id not used yet, derived from ``base``."""
        cand = _BAD_ID_CHARS.sub("-", base)[:64] or "cell"
        n = 1
        out = cand
        while out in self.used:
            n += 1
            suffix = f"-{n}"
            out = cand[: 64 - len(suffix)] + suffix
        self.used.add(out)
        return out


def notebook_language(metadata: Mapping) -> str:
    """The language code outputs are labelled with: the kernel's, unless it is Markdown."""
    ks = metadata.get("kernelspec") or {}
    lang = ks.get("language") if isinstance(ks, Mapping) else None
    if not lang:
        li = metadata.get("language_info") or {}
        lang = li.get("name") if isinstance(li, Mapping) else None
    if not isinstance(lang, str) or not lang or lang == "markdown" or " " in lang:
        return "python"
    return lang


# --------------------------------------------------------------------------- front matter


def split_front_matter(block: str) -> tuple[str | None, dict | None]:
    """(front matter cell source without the ``jupyter:`` entry, notebook metadata or None)."""
    lines = block.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    meta = None
    for k in range(1, len(lines) - 1):
        if lines[k].startswith("jupyter:"):
            j = k + 1
            while j < len(lines) - 1 and (lines[j][:1] in (" ", "\t") or not lines[j].strip()):
                j += 1
            rest = lines[k][8:].strip()
            if rest.startswith("{") and j == k + 1:
                try:
                    meta = json.loads(rest)
                except (ValueError, RecursionError):  # read again as YAML, which says why
                    meta = None
            if meta is None:  # hand-written YAML-style notebook metadata
                meta = (load_yaml("\n".join(lines[k:j]), line=k + 1,
                                  what="the front matter's jupyter: entry") or {}).get("jupyter")
                if not isinstance(meta, dict):
                    meta = {}
            del lines[k:j]
            break
    if meta is not None and all(not line.strip() for line in lines[1:-1]):
        return None, meta
    return "\n".join(lines), meta


def front_matter_block(source: str | None, metadata: dict) -> str | None:
    """The front matter text to write, with notebook metadata as a one-line ``jupyter:``."""
    jline = None
    if metadata != {"kernelspec": DEFAULT_KERNELSPEC}:
        jline = "jupyter: " + json_text(metadata)
    if source is None:
        return None if jline is None else "---\n" + jline + "\n---\n"
    if jline is None:
        return source + "\n"
    head, _, last = source.rpartition("\n")
    return head + "\n" + jline + "\n" + last + "\n"


# --------------------------------------------------------------------------- reading


def to_notebook(doc: Document, path: str | None = None) -> dict:
    """The notebook a parsed document means."""
    metadata: dict = {"kernelspec": dict(DEFAULT_KERNELSPEC)}
    cells: list[dict] = []
    fm_source = None
    if doc.front_matter is not None:
        try:
            fm_source, jmeta = split_front_matter(doc.front_matter)
        except FormatError as err:
            raise err.with_path(path) from None
        if jmeta is not None:
            metadata = jmeta
    minor = 5
    fields = None
    if NS in metadata:  # a later nbformat's minor version and fields, kept by the writer
        kept = metadata[NS]
        metadata = {k: v for k, v in metadata.items() if k != NS}
        if isinstance(kept, dict) and type(kept.get("nbformat_minor")) is int:
            minor = max(5, kept["nbformat_minor"])
        if isinstance(kept, dict) and isinstance(kept.get("fields"), dict):
            fields = kept["fields"]
    # the document's heading level: the first message's; cells differing from it keep theirs
    level = 1
    for rec in doc.records:
        if not rec.out:
            level = rec.level
            break
    ctx = Context(notebook_language(metadata), level, doc.section, path, doc)
    used = ctx.used
    for rec in doc.records:
        ref = rec.ref
        if ref is not None and "." not in ref and NBFORMAT_ID.fullmatch(ref):
            used.add(ref)
    if fm_source is not None:
        cells.append({"cell_type": "raw", "id": ctx.fresh(FRONT_MATTER_ID), "metadata": {},
                      "source": fm_source})
    if doc.preamble is not None:
        ns: dict[str, Any] = {"type": "preamble"}
        if doc.section is not None:
            ns["section"] = doc.section
        cells.append({"cell_type": "markdown", "id": ctx.fresh(PREAMBLE_ID),
                      "metadata": {NS: ns}, "source": doc.preamble})
    cell: dict | None = None
    blocks = 0
    parent = ""
    out_level = 2
    for rec in doc.records:
        if rec.out:
            if cell is None:
                raise ctx.error("an output cell (%%%) before any message", rec)
            if cell["cell_type"] != "code":
                raise ctx.error("an output cell (%%%) under a cell that cannot have outputs "
                                f"({cell['cell_type']})", rec)
            blocks += 1
            read_block(rec, cell, blocks, ctx, parent, out_level)
        else:
            attrs = rec.attrs
            if TRANSIENT in attrs:
                del attrs[TRANSIENT]
            if (rec.type == "markdown" and rec.ref in used and not rec.title
                    and rec.level == level and rec.sub is None and rec.link is None
                    and attrs.keys().isdisjoint(IN_STRUCT)):
                # a plain message: what input_cell makes of it, made directly
                cell = {"cell_type": "code", "id": rec.ref, "metadata": attrs,
                        "source": rec.body, "execution_count": None, "outputs": []}
                parent = rec.ref
            else:
                cell = input_cell(rec, len(cells), ctx)
                parent = cell_ref(cell)
            cells.append(cell)
            blocks = 0
            out_level = min(rec.level + 1, 5)
    if doc.crlf or level != 1:
        metadata = dict(metadata)
        nbns: dict[str, Any] = {}
        if level != 1:
            nbns["level"] = level
        if doc.crlf:
            nbns["crlf"] = True
        metadata[NS] = nbns
    nb = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": minor}
    if fields:
        put_fields(nb, fields, NOTEBOOK_FIELDS)
    return nb


def extra_fields(obj: Mapping, known: frozenset[str]) -> dict | None:
    """The keys of ``obj`` that nbformat 4.5 does not give it, or None."""
    if obj.keys() <= known:
        return None
    return {k: v for k, v in obj.items() if k not in known}


def put_fields(obj: dict, fields: Any, known: frozenset[str]) -> None:
    """Put back the kept ``fields`` of ``obj``, never over one nbformat 4.5 defines."""
    if isinstance(fields, dict):
        for key, value in fields.items():
            if key not in known and key not in obj:
                obj[key] = value


def _take_ns(attrs: dict, ctx: Context, rec: Record) -> tuple[dict, dict | None]:
    extra = attrs.pop(NS, None)
    if extra is None:
        return {}, None
    if not isinstance(extra, dict):
        raise ctx.error(f"{NS}= must be a JSON object", rec)
    ns = dict(extra)
    over = ns.pop("meta", None)
    return ns, over if isinstance(over, dict) else None


def _drop_last_line(body: str) -> str:
    cut = body.rfind("\n")
    return body[:cut] if cut >= 0 else ""


def input_cell(rec: Record, index: int, ctx: Context) -> dict:
    """Cell of an input (``%%``) record."""
    t = rec.type or "markdown"
    if t not in INPUT_TYPES:
        raise ctx.error(f"unknown cell type [{t}] (expected one of "
                        f"{', '.join(sorted(INPUT_TYPES))})", rec, footnote=True)
    attrs = rec.attrs
    ns: dict[str, Any] = {}
    if attrs.keys().isdisjoint(IN_STRUCT):
        over, ct, has_ec, ec, attachments, close = None, None, False, None, None, False
    else:
        ns, over = _take_ns(attrs, ctx, rec)
        ct = attrs.pop("cell_type", None)
        has_ec = "execution_count" in attrs
        ec = attrs.pop("execution_count", None)
        attachments = attrs.pop("attachments", None)
        close = attrs.pop("close_fence", False)
    if ct is not None and (not isinstance(ct, str) or not ct):
        raise ctx.error(f"cell_type must be a cell type's name, not {ct!r}", rec)
    cell_type = ct or ("raw" if t == "raw" else "code")
    future = ct is not None and ct not in CELL_TYPES
    fields = ns.pop("fields", None)
    no_source = ns.pop("no_source", False) if future else False
    if t != ("raw" if cell_type == "raw" else "markdown"):
        ns["type"] = t
    body = _drop_last_line(rec.body) if close is True else rec.body
    source = body
    if t == "code" and cell_type == "code":
        source = _read_code(body, ns, ctx)
    if rec.sub is not None:
        ns["sub"] = rec.sub
    if rec.link is not None:
        ns["link"] = rec.link
    if rec.title:
        ns["title"] = rec.title
    if rec.level != ctx.level:
        ns["level"] = rec.level
    ref = rec.ref
    if ref is None:
        cid = ctx.fresh(f"cell-{index}")
    elif ref in ctx.used:  # every valid footnote id is in ``used``; parse rejected duplicates
        cid = ref
    else:
        cid = ctx.fresh(ref)
        ns["id"] = ref
    if over:
        attrs.update(over)
    if ns:
        attrs[NS] = ns
    cell: dict[str, Any] = {"cell_type": cell_type, "id": cid, "metadata": attrs,
                            "source": source}
    if fields is not None:  # a cell of a future type, or a later minor version's keys
        put_fields(cell, fields, CELL_FIELDS.get(cell_type, _CELL_KEYS))
    if no_source is True:
        del cell["source"]
    if cell_type == "code":
        if ec is not None and (not isinstance(ec, int) or isinstance(ec, bool)):
            raise ctx.error(f"execution_count must be an integer, not {ec!r}", rec)
        cell["execution_count"] = ec
        cell["outputs"] = []
    else:
        if has_ec:
            attrs["execution_count"] = ec
        if attachments is not None:
            cell["attachments"] = attachments
    return cell


def split_fenced(body: str) -> tuple[str, str, str, str, str] | None:
    """(pre, open line, code, close line, post) of the first fenced block, or None."""
    if "```" not in body and "~~~" not in body:
        return None
    opened = None
    # matched in "\n" + body: a match's start is the start of its line in ``body``, and its
    # end less one the end of that line
    for m in FENCE_LINE.finditer("\n" + body):
        run, info = m.groups()
        if opened is None:
            if run[0] == "`" and "`" in info:
                continue  # not a fence: a backtick fence's info string has no backtick
            opened = m
            char, size = run[0], len(run)
        elif run[0] == char and len(run) >= size and not info.strip(" \t"):
            start, eol = opened.start(), opened.end() - 1
            cpos, ceol = m.start(), m.end() - 1
            code = body[eol + 1 : cpos - 1] if cpos > eol + 1 else ""
            return body[:start], body[start:eol], code, body[cpos:ceol], body[ceol:]
    if opened is None:
        return None
    start, eol = opened.start(), opened.end() - 1
    return body[:start], body[start:eol], body[eol + 1 :], "", ""


def _read_code(body: str, ns: dict, ctx: Context) -> str:
    if (body.startswith("```") and body.endswith("\n```") and body.count("```") == 2
            and "~~~" not in body):
        # as the writer puts it: one three-backtick block, nothing around it
        eol = body.find("\n")
        info = body[3:eol]
        if "`" not in info:
            info = info.strip()
            if info != ctx.lang:
                ns["lang"] = info
            return body[eol + 1 : -4]
    parts = split_fenced(body)
    if parts is None:
        return body
    pre, open_line, code, _close, post = parts
    fence_char = open_line.lstrip(" ")[0]
    size = len(open_line.lstrip(" ")) - len(open_line.lstrip(" ").lstrip(fence_char))
    info = open_line.lstrip(" ")[size:].strip()
    if info != ctx.lang:
        ns["lang"] = info
    fence = fence_char * size
    if fence != fence_for(code):
        ns["fence"] = fence
    if pre:
        ns["pre"] = pre
    if post:
        ns["post"] = post
    return code


def read_block(rec: Record, cell: dict, index: int, ctx: Context, parent: str,
               out_level: int) -> None:
    """Append the outputs of one ``%%%`` record to ``cell``."""
    t = rec.type or "output"
    attrs = rec.attrs
    if (rec.sub is None and t != "error" and attrs.keys().isdisjoint(OUT_STRUCT)
            and not ctx.is_lang(t)):
        cell["outputs"].append(_reply(rec, t, index, parent, out_level))
        return
    if (not attrs and t == ctx.lang and rec.sub is None and rec.link is None and not rec.title
            and rec.level == out_level and rec.ref == f"{parent}.{index}"):
        _read_streams(rec, attrs, {}, None, rec.body, cell, ctx)  # plain code output
        return
    ns, over = _take_ns(attrs, ctx, rec) if NS in attrs else ({}, None)
    if rec.ref is not None and rec.ref != f"{parent}.{index}":
        ns["id"] = rec.ref
    if rec.title:
        ns["title"] = rec.title
    if rec.level != out_level:
        ns["level"] = rec.level
    if rec.sub is not None:
        ns["sub"] = rec.sub
    if rec.link is not None:
        ns["link"] = rec.link
    close = attrs.pop("close_fence", False) if "close_fence" in attrs else False
    body = _drop_last_line(rec.body) if close is True else rec.body
    outputs = cell["outputs"]
    is_lang = ctx.is_lang(t)
    if t == "error":
        _read_error(rec, attrs, ns, over, body, cell, ctx)
        return
    if t != ctx.lang:
        ns["type"] = t
    mt = attrs.get("mime_type")
    if "output_type" in attrs:
        _read_future(rec, attrs, body, cell, ctx)
        return
    if ((is_lang or (t == "output" and rec.sub in STREAMS))
            and "execution_count" not in attrs and (mt is None or mt == "text/plain")):
        _read_streams(rec, attrs, ns, over, body, cell, ctx)
        return
    if t == ctx.lang:
        ns.pop("type", None)
    mt = attrs.pop("mime_type", None)
    has_ec = "execution_count" in attrs
    ec = attrs.pop("execution_count", None)
    if mt is None:
        bundle = {default_mime(t, is_lang): body}
    elif isinstance(mt, str):
        bundle = {mt: _decode(mt, body, ctx, rec)}
    elif isinstance(mt, list) and all(isinstance(m, str) for m in mt):
        bundle = _read_bundle(mt, body, ctx, rec)
    else:
        raise ctx.error(f"mime_type must be a string or a list of strings, not {mt!r}", rec)
    if not attrs.keys().isdisjoint(_NOT_DATA):
        key = sorted(attrs.keys() & _NOT_DATA)[0]
        raise ctx.error(f"{key}= belongs to [error] or stream cells, not [{t}]", rec)
    if over:
        attrs.update(over)
    fields = ns.pop("fields", None)
    if ns:
        attrs[NS] = ns
    if has_ec:
        if ec is not None and (not isinstance(ec, int) or isinstance(ec, bool)):
            raise ctx.error(f"execution_count must be an integer, not {ec!r}", rec)
        out = {"output_type": "execute_result", "data": bundle, "metadata": attrs,
               "execution_count": ec}
    else:
        out = {"output_type": "display_data", "data": bundle, "metadata": attrs}
    if fields is not None:
        put_fields(out, fields, OUTPUT_FIELDS[out["output_type"]])
    outputs.append(out)


def _reply(rec: Record, t: str, index: int, parent: str, out_level: int) -> dict:
    """A reply, tool call or result (no structural attributes): what ``read_block`` makes of
    it, made directly."""
    ns: dict[str, Any] = {}
    ref = rec.ref
    if ref is not None and ref != f"{parent}.{index}":
        ns["id"] = ref
    if rec.title:
        ns["title"] = rec.title
    if rec.level != out_level:
        ns["level"] = rec.level
    if rec.link is not None:
        ns["link"] = rec.link
    ns["type"] = t
    attrs = rec.attrs
    attrs[NS] = ns
    mime = "text/plain" if t == "tool" or t == "tool_result" else "text/markdown"
    return {"output_type": "display_data", "data": {mime: rec.body}, "metadata": attrs}


def _decode(mime: str, content: str, ctx: Context, rec: Record) -> Any:
    if is_json_mime(mime):
        try:
            return json.loads(content)
        except ValueError as err:
            raise ctx.error(f"{mime} content is not JSON: {err}", rec) from None
    return content


def _read_bundle(mimes: list[str], body: str, ctx: Context, rec: Record) -> dict:
    bundle: dict[str, Any] = {}
    rest = body
    for mime in mimes:
        parts = split_fenced(rest)
        if parts is None or not parts[3]:
            raise ctx.error(f"mime_type lists {mime} but no closed fenced block holds it", rec)
        _pre, _open, content, _close, rest = parts
        bundle[mime] = _decode(mime, content, ctx, rec)
    return bundle


def _info_attrs(attrs: dict, over: dict | None) -> dict:
    if over:
        attrs.update(over)
    return attrs


def _read_streams(rec: Record, attrs: dict, ns: dict, over: dict | None, body: str,
                  cell: dict, ctx: Context) -> None:
    eol = attrs.pop("final_newline", True)
    fields = ns.pop("fields", None) if ns else None
    default = rec.sub if rec.sub in STREAMS else "stdout"
    named = attrs.pop("stream", None) if "stream" in attrs else None
    if named is not None:
        if not isinstance(named, str) or not named:
            raise ctx.error(f"stream= must be the stream's name, not {named!r}", rec)
        default = named
    streams: list[list] = []
    if named is not None:
        if body or not eol:
            streams.append([named, [body]])  # one stream, its lines unprefixed
    elif body or not eol:
        for line in body.split("\n"):
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
        put_fields(outputs[first], fields, OUTPUT_FIELDS["stream"])
    attrs = _info_attrs(attrs, over)
    if attrs:
        ns["attrs"] = attrs
    prev = outputs[first - 1] if first else None
    if (not ns and fields is None and prev is not None and prev["output_type"] == "stream"
            and prev["text"].endswith("\n") and prev["name"] != outputs[first]["name"]
            and named is None and prev["name"] in STREAMS):
        ns["new"] = True
    if ns:
        ns["name"] = outputs[first]["name"]
        cell_ns(cell)["outputs"][str(first)] = ns


def _read_error(rec: Record, attrs: dict, ns: dict, over: dict | None, body: str,
                cell: dict, ctx: Context) -> None:
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
            raise ctx.error("traceback_lines does not add up to the traceback's lines", rec)
        tb, at = [], 0
        for n in counts:
            tb.append("\n".join(lines[at : at + n]))
            at += n
    fields = ns.pop("fields", None)
    attrs = _info_attrs(attrs, over)
    if attrs:
        ns["attrs"] = attrs
    outputs = cell["outputs"]
    if ns:
        ns["ename"] = str(ename)
        cell_ns(cell)["outputs"][str(len(outputs))] = ns
    out = {"output_type": "error", "ename": str(ename), "evalue": str(evalue), "traceback": tb}
    if fields is not None:
        put_fields(out, fields, OUTPUT_FIELDS["error"])
    outputs.append(out)


def _read_future(rec: Record, attrs: dict, body: str, cell: dict, ctx: Context) -> None:
    """An output of a future type: ``output_type="NAME"``, its other fields as JSON."""
    ot = attrs.pop("output_type")
    if not isinstance(ot, str) or ot in OUTPUT_TYPES:
        raise ctx.error(f"output_type= names an output type from a later nbformat, not {ot!r}",
                        rec)
    try:
        fields = json.loads(body) if body.strip() else {}
    except ValueError as err:
        raise ctx.error(f"the fields of a {ot} output are not JSON: {err}", rec) from None
    if not isinstance(fields, dict):
        raise ctx.error(f"the fields of a {ot} output must be a JSON object", rec)
    cell["outputs"].append({**fields, "output_type": ot})


def cell_ns(cell: dict) -> dict:
    """The cell's namespaced metadata, created with an ``outputs`` map if missing."""
    ns = cell["metadata"].get(NS)
    if ns is None:
        ns = cell["metadata"][NS] = {}
    ns.setdefault("outputs", {})
    return ns


def cell_ref(cell: Mapping) -> str:
    ns = cell.get("metadata", {}).get(NS) or {}
    return ns.get("id") or cell.get("id") or ""


# --------------------------------------------------------------------------- writing


def from_notebook(nb: Mapping, path: str | None = None, section: str | None = None) -> Document:
    """The document that writes ``nb``."""
    metadata = dict(nb.get("metadata") or {})
    nbns = metadata.pop(NS, None) or {}
    cells = list(nb.get("cells") or [])
    doc = Document(crlf=bool(nbns.get("crlf")))
    minor = nb.get("nbformat_minor")
    kept: dict[str, Any] = {}
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
    doc.front_matter = front_matter_block(fm_source, metadata)
    if cells and is_preamble_cell(cells[0]):
        pns = cells[0]["metadata"][NS]
        doc.preamble = join_source(cells[0]["source"])
        doc.section = pns.get("section") or section
        cells = cells[1:]
    elif section is not None:
        doc.section = section
        doc.preamble = ""
    level = nbns.get("level", 1)
    if type(level) is not int or not 1 <= level <= 5:
        level = 1
    ctx = Context(notebook_language(metadata), level, doc.section, path, doc)
    used = ctx.used
    for cell in cells:
        md = cell.get("metadata")
        ns = md.get(NS) if md else None
        ref = (ns.get("id") if ns else None) or cell.get("id")
        if ref:
            used.add(ref)
    seen: set[str] = set()
    records = doc.records
    for cell in cells:
        md = cell.get("metadata")
        if md and TRANSIENT in md:
            cell = {**cell, "metadata": {k: v for k, v in md.items() if k != TRANSIENT}}
        rec = input_record(cell, ctx, seen)
        records.append(rec)
        outputs = cell.get("outputs")
        if outputs and cell.get("cell_type") == "code":
            if len(outputs) == 1 and outputs[0].get("output_type") == "display_data":
                records.append(_data_record(outputs[0], rec, 1, ctx, seen))  # a lone reply
            else:
                records.extend(output_records(cell, rec, ctx, seen))
    if doc.section is not None and doc.records and not _has_section(doc):
        pre = doc.preamble or ""
        if pre and not pre.endswith("\n"):
            pre += "\n"
        doc.preamble = pre + ("\n" if pre else "") + f"# {doc.section}\n\n"
    return doc


def _has_section(doc: Document) -> bool:
    return any(k == "s" for k, _, _ in scan(doc.preamble or "", section=doc.section))


def is_front_matter_cell(cell: Mapping) -> bool:
    return (cell.get("cell_type") == "raw" and cell.get("id") == FRONT_MATTER_ID
            and not cell.get("metadata") and not cell.get("attachments")
            and _FM_CELL.fullmatch(join_source(cell.get("source", ""))) is not None)


def is_preamble_cell(cell: Mapping) -> bool:
    ns = (cell.get("metadata") or {}).get(NS)
    return (cell.get("cell_type") == "markdown" and isinstance(ns, Mapping)
            and ns.get("type") == "preamble")


def is_conversation_cell(cell: Mapping) -> bool:
    """A cell of the conversation: neither the front matter nor the preamble around it."""
    return not (is_front_matter_cell(cell) or is_preamble_cell(cell))


def _unique_ref(ref: str, ctx: Context, seen: set[str], generated: bool = False) -> str:
    if ref and ref not in seen and not (generated and ref in ctx.used):
        seen.add(ref)
        return ref
    out = ctx.fresh(ref or "cell")
    seen.add(out)
    return out


def _split_attrs(md: Mapping, struct_names: frozenset,
                 copy_ns: bool = True) -> tuple[dict, dict, dict]:
    """(flat attrs, namespaced dict copy, attrs that clash with structural names)."""
    clash = md.keys() & struct_names
    if not clash:
        return md, {}, {}  # type: ignore[return-value]
    if len(clash) == 1 and NS in clash:
        attrs = dict(md)
        ns = attrs.pop(NS)
        if type(ns) is dict:
            return attrs, ns.copy() if copy_ns else ns, {}
        return attrs, dict(ns) if isinstance(ns, Mapping) else {}, {}
    attrs = {}
    over: dict[str, Any] = {}
    for k, v in md.items():
        if k == NS:
            continue
        if k in struct_names:
            over[k] = v
        else:
            attrs[k] = v
    ns = md.get(NS)
    return attrs, dict(ns) if isinstance(ns, Mapping) else {}, over


def _close(body: str, struct: dict) -> str:
    line = unclosed_fence(body)
    if line is not None:
        struct["close_fence"] = True
        return body + "\n" + line
    return body


def _finish_attrs(struct: dict, attrs: Mapping, ns_left: dict, over: dict) -> dict:
    if not struct and not ns_left and not over:
        return attrs if isinstance(attrs, dict) else dict(attrs)
    if over:
        ns_left["meta"] = over
    out = struct
    out.update(attrs)
    if ns_left:
        out[NS] = ns_left
    return out


def input_record(cell: Mapping, ctx: Context, seen: set[str]) -> Record:
    """The ``%%`` record of a cell."""
    ct = cell.get("cell_type", "code")
    md = cell.get("metadata") or {}
    plain = ct == "code" and cell.keys() <= CELL_FIELDS["code"]
    if plain and md.keys().isdisjoint(IN_STRUCT):
        # a plain message: no namespaced structure, no clashing keys
        ref = _unique_ref(cell.get("id") or "", ctx, seen)
        source = cell.get("source", "")
        if type(source) is not str:
            source = join_source(source)
        ec = cell.get("execution_count")
        struct: dict[str, Any] = {} if ec is None else {"execution_count": ec}
        if "```" in source or "~~~" in source:
            source = _close(source, struct)
        if struct:
            struct.update(md)
            md = struct
        elif not isinstance(md, dict):
            md = dict(md)
        return Record(False, ctx.level, "", ref, "markdown", None, None, md, source)
    if plain:
        ns = md.get(NS)
        if (type(ns) is dict and ns.get("type") == "code" and _CODE_NS.issuperset(ns)
                and len(md.keys() & IN_STRUCT) == 1 and "`" not in ctx.lang):
            return _code_record(cell, md, ns, ctx, seen)
    attrs, ns, over = _split_attrs(cell.get("metadata") or {}, IN_STRUCT)
    t = ns.pop("type", None) or ("raw" if ct == "raw" else "markdown")
    struct = {}
    if ct != ("raw" if t == "raw" else "code"):
        struct["cell_type"] = ct
    if ct == "code" and cell.get("execution_count") is not None:
        struct["execution_count"] = cell["execution_count"]
    if ct != "code" and "attachments" in cell:
        struct["attachments"] = cell["attachments"]
    # a cell of a future type keeps its other fields, a known one a later minor version's
    fields = extra_fields(cell, CELL_FIELDS.get(ct, _CELL_KEYS))
    if fields:
        ns["fields"] = fields
    if ct not in CELL_TYPES and "source" not in cell:
        ns["no_source"] = True
    ref = _unique_ref(ns.pop("id", None) or cell.get("id") or "", ctx, seen)
    if ns:
        title = ns.pop("title", "")
        title = title.replace("\n", " ") if isinstance(title, str) else str(title)
        level = ns.pop("level", ctx.level)
        sub = ns.pop("sub", None)
        link = ns.pop("link", None)
        lang = ns.pop("lang", None)
        pre = ns.pop("pre", "")
        post = ns.pop("post", "")
        fence = ns.pop("fence", None)
        ns.pop("outputs", None)
    else:
        title, level, sub, link, lang, pre, post, fence = (
            "", ctx.level, None, None, None, "", "", None)
    source = cell.get("source", "")
    if type(source) is not str:
        source = join_source(source)
    if t == "code" and ct == "code":
        lang = ctx.lang if lang is None else lang
        if not fence or any(fence_closes(line, Fence(fence[0], len(fence)))
                            for line in source.split("\n")):
            fence = fence_for(source)
        block = fence + lang + "\n" + source + "\n" + fence
        body = pre + block + post
        if (pre or post) and split_fenced(body) != (pre, fence + lang, source, fence, post):
            # text around the fence that would read back differently: keep it verbatim
            ns["pre"], ns["post"] = pre, post
            body = block
    else:
        body = source
    if "```" in body or "~~~" in body:
        body = _close(body, struct)
    return Record(False, level, title, ref, t, sub, link,
                  _finish_attrs(struct, attrs, ns, over), body)


_CODE_NS: Final = frozenset({"type", "title"})


def _code_record(cell: Mapping, md: Mapping, ns: dict, ctx: Context, seen: set[str]) -> Record:
    """A ``[code]`` cell with no structure beyond its type and title: what the general rules
    of :func:`input_record` make of it, made directly."""
    ref = _unique_ref(cell.get("id") or "", ctx, seen)
    title = ns.get("title", "")
    title = title.replace("\n", " ") if isinstance(title, str) else str(title)
    source = cell.get("source", "")
    if type(source) is not str:
        source = join_source(source)
    # the fence is longer than any run in the source: the block is closed by construction
    fence = fence_for(source)
    body = fence + ctx.lang + "\n" + source + "\n" + fence
    ec = cell.get("execution_count")
    attrs: dict[str, Any] = {} if ec is None else {"execution_count": ec}
    for k, v in md.items():
        if k != NS:
            attrs[k] = v
    return Record(False, ctx.level, title, ref, "code", None, None, attrs, body)


def _stream_info(cell: Mapping, i: int, out: Mapping) -> dict:
    ns = (cell.get("metadata") or {}).get(NS) or {}
    outputs = ns.get("outputs")
    extra = out.get("metadata")
    fields = extra_fields(out, OUTPUT_FIELDS.get(out.get("output_type"), frozenset()))
    if not outputs and extra is None and fields is None:
        return {}  # the common case: nothing kept for this output
    info = (outputs or {}).get(str(i))
    if not isinstance(info, Mapping):
        info = {}
    key = "name" if out.get("output_type") == "stream" else "ename"
    if info and info.get(key) != out.get(key):
        info = {}
    info = dict(info)
    if fields is not None:
        info["fields"] = {k: v for k, v in fields.items() if k != "metadata"}
    if isinstance(extra, Mapping):  # attributes given to stream_output()/error_output()
        for k, v in extra.items():
            if k == NS and isinstance(v, Mapping):
                info.update(v)
            else:
                info.setdefault("attrs", {})
                info["attrs"] = {**info["attrs"], k: v}
    return info


def output_records(cell: Mapping, parent: Record, ctx: Context, seen: set[str]) -> list[Record]:
    """The ``%%%`` records of a code cell's outputs."""
    records: list[Record] = []
    outputs = cell["outputs"]
    i = 0
    n = len(outputs)
    while i < n:
        out = outputs[i]
        ot = out.get("output_type")
        index = len(records) + 1
        if ot == "stream":
            info = _stream_info(cell, i, out)
            group = [out]
            j = i + 1
            while j < n and out.get("name") in STREAMS:
                nxt = outputs[j]
                if (nxt.get("output_type") != "stream" or _stream_info(cell, j, nxt)
                        or nxt.get("name") == group[-1].get("name")
                        or nxt.get("name") not in STREAMS
                        or not join_source(group[-1].get("text", "")).endswith("\n")):
                    break
                group.append(nxt)
                j += 1
            records.append(_stream_record(group, info, parent, index, ctx, seen))
            i = j
            continue
        if ot == "error":
            info = _stream_info(cell, i, out)
            records.append(_error_record(out, info, parent, index, ctx, seen))
        elif ot in OUTPUT_TYPES:
            records.append(_data_record(out, parent, index, ctx, seen))
        else:
            records.append(_future_record(out, parent, index, ctx, seen))
        i += 1
    return records


def _block(info: dict, parent: Record, index: int, ctx: Context, seen: set[str],
           default_type: str) -> tuple[str, int, str, str, str | None, str | None]:
    if not info:
        ref = f"{parent.ref}.{index}"
        if ref in seen or ref in ctx.used:
            ref = _unique_ref(ref, ctx, seen, generated=True)
        else:
            seen.add(ref)
        return ref, min(parent.level + 1, 5), "", default_type, None, None
    given = info.get("id")
    if given and given not in seen:
        seen.add(given)
        ref = given
    else:
        ref = _unique_ref(given or f"{parent.ref}.{index}", ctx, seen, generated=not given)
    title = info.get("title")
    if not title:
        title = ""
    elif type(title) is not str or "\n" in title:
        title = str(title).replace("\n", " ")
    level = info.get("level") or min(parent.level + 1, 5)
    return (ref, level, title, info.get("type") or default_type, info.get("sub"),
            info.get("link"))


def _left(info: dict, ignore: frozenset[str]) -> dict:
    if info.keys() <= ignore:
        return {}
    return {k: v for k, v in info.items() if k not in ignore}


def _stream_record(group: list, info: dict, parent: Record, index: int, ctx: Context,
                   seen: set[str]) -> Record:
    ref, level, title, t, sub, link = _block(info, parent, index, ctx, seen, ctx.lang)
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
    if not ctx.is_lang(t) and not (t == "output" and sub in STREAMS):
        t = ctx.lang
    if not info:
        return Record(True, level, title, ref, t, sub, link, struct, body)
    attrs = dict(info.get("attrs") or {})
    over = {k: attrs.pop(k) for k in list(attrs) if k in _STREAM_STRUCT}
    if isinstance(attrs.get("mime_type"), str) and attrs["mime_type"] != "text/plain":
        over["mime_type"] = attrs.pop("mime_type")
    ns_left = _left(info, _DERIVED_OUT)
    return Record(True, level, title, ref, t, sub, link,
                  _finish_attrs(struct, attrs, ns_left, over), body)


_STREAM_STRUCT: Final = frozenset({"final_newline", "close_fence", NS, "execution_count",
                                   "stream", "output_type"})


def _future_record(out: Mapping, parent: Record, index: int, ctx: Context,
                   seen: set[str]) -> Record:
    """An output of a type from a later nbformat: its type, and its other fields as JSON."""
    ref, level, _title, t, _sub, _link = _block({}, parent, index, ctx, seen, ctx.lang)
    struct: dict[str, Any] = {"output_type": out.get("output_type")}
    body = json_text({k: v for k, v in out.items() if k != "output_type"}, indent=1)
    if "```" in body or "~~~" in body:
        body = _close(body, struct)
    return Record(True, level, "", ref, t, None, None, struct, body)


def _error_record(out: Mapping, info: dict, parent: Record, index: int, ctx: Context,
                  seen: set[str]) -> Record:
    ref, level, title, _t, sub, link = _block(info, parent, index, ctx, seen, "error")
    tb = [join_source(x) for x in out.get("traceback") or []]
    struct: dict[str, Any] = {"ename": out.get("ename", ""), "evalue": out.get("evalue", "")}
    if not tb or any("\n" in x for x in tb):
        struct["traceback_lines"] = [x.count("\n") + 1 for x in tb]
    attrs = dict(info.get("attrs") or {})
    over = {k: attrs.pop(k) for k in list(attrs) if k in OUT_STRUCT}
    body = _close("\n".join(tb), struct)
    return Record(True, level, title, ref, "error", sub, link,
                  _finish_attrs(struct, attrs, _left(info, _DERIVED_OUT), over), body)


_REPLY_NS: Final = frozenset({"type", "id"})
_OUT_FIELDS: Final = OUT_STRUCT - {NS}


def _data_record(out: Mapping, parent: Record, index: int, ctx: Context,
                 seen: set[str]) -> Record:
    md = out.get("metadata")
    if md:
        ns = md.get(NS)
        data = out.get("data")
        if (type(ns) is dict and data and len(data) == 1 and _REPLY_NS.issuperset(ns)
                and _OUT_FIELDS.isdisjoint(md) and out.get("output_type") == "display_data"
                and len(out) == 3):
            # fast path: a reply, tool call or result as the model helpers make them
            t = ns.get("type")
            [(mime, body)] = data.items()
            if (t and type(body) is str and not ctx.is_lang(t)
                    and mime == ("text/plain" if t in _PLAIN_TYPES else "text/markdown")):
                given = ns.get("id")
                ref = (_unique_ref(given, ctx, seen) if given else
                       _unique_ref(f"{parent.ref}.{index}", ctx, seen, generated=True))
                attrs = dict(md)
                del attrs[NS]
                if ("```" in body or "~~~" in body) and unclosed_fence(body) is not None:
                    struct: dict[str, Any] = {}
                    body = _close(body, struct)
                    struct.update(attrs)
                    attrs = struct
                return Record(True, min(parent.level + 1, 5), "", ref, t, None, None, attrs,
                              body)
    return _data_record_general(out, parent, index, ctx, seen)


def _data_record_general(out: Mapping, parent: Record, index: int, ctx: Context,
                         seen: set[str]) -> Record:
    attrs, ns, over = _split_attrs(out.get("metadata") or {}, OUT_STRUCT, copy_ns=False)
    fields = extra_fields(out, OUTPUT_FIELDS[out.get("output_type", "display_data")])
    if fields:
        ns = {**ns, "fields": fields}
    ref, level, title, t, sub, link = _block(ns, parent, index, ctx, seen, ctx.lang)
    is_lang = ctx.is_lang(t)
    struct: dict[str, Any] = {}
    data = out.get("data") or {}
    is_result = out.get("output_type") == "execute_result"
    body = None
    if len(data) == 1:
        for mime, value in data.items():
            if is_json_mime(mime):
                body = json_text(value, indent=1)
            elif type(value) is str:
                body = value
            elif isinstance(value, list):
                body = join_source(value)
        if body is not None:
            default = "text/plain" if (is_lang or t in _PLAIN_TYPES) else "text/markdown"
            if is_lang and not is_result:
                if mime == "text/plain":
                    body = None  # would read back as a stream: use the bundle form
                else:
                    struct["mime_type"] = mime
            elif mime != default:
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
    return Record(True, level, title, ref, t, sub, link,
                  _finish_attrs(struct, attrs, _left(ns, _DERIVED_OUT), over), body)
