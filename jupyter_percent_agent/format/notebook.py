"""The notebook mapping: what each cell of the text means as an nbformat 4.5 cell or output
(docs/format.md, "The notebook"), and the facts of that mapping the writer shares. No text
is scanned or written here: the reader (``reader.py``) hands each cell of the text over as a
cell read; the writer (``writer.py``) reads the same table from right to left.

A cell read comes as a record (``record.Record``): where its heading starts in the reader's
text, heading level, title, footnote id, ``[TYPE:SUB](LINK)``, the ``key=value`` attributes
and the body.

Mapping, in short (docs/format.md has the table):

* ``%%`` cells are code cells (messages, ``[code]``, ``[tool]``, ``[tool_call]``, ...),
  ``[raw]`` raw cells, ``cell_type="markdown"`` markdown cells; the preamble before the first
  cell is a markdown cell, the front matter a raw cell with id ``front-matter``.
* footnote ``key=value`` attributes are the cell's flat metadata; the structural parts (type,
  title, heading level, link, invalid ids, the text around a ``[code]`` fence, stream and error
  output attributes) live under ``metadata["percent_agent"]``.
* ``%%%`` cells are the outputs of the input cell above them: ``outputs.py``, the mapping's
  output half.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from .attrs import NS, json_text
from .errors import FormatError
from .lines import fence_for, split_fenced
from .record import CELL_TYPE_OF, TYPE_OF_CELL, OutputOf, Record, output_of
from .rules import INPUT_TYPES
from .runner import has_runner_cell_keys, is_runner_cell_key
from .safe_yaml import load_yaml

__all__ = [
    "CELL_FIELDS",
    "CELL_KEYS",
    "CELL_TYPES",
    "DEFAULT_KERNELSPEC",
    "FRONT_MATTER_ID",
    "IN_STRUCT",
    "LANGS",
    "NBFORMAT_ID",
    "NOTEBOOK_FIELDS",
    "NS",
    "PREAMBLE_ID",
    "TRANSIENT",
    "Context",
    "cell_ref",
    "drop_last_line",
    "extra_fields",
    "front_matter_block",
    "input_cell",
    "is_conversation_cell",
    "is_front_matter_cell",
    "is_json_mime",
    "is_preamble_cell",
    "join_source",
    "notebook",
    "notebook_language",
    "notebook_metadata",
    "split_front_matter",
    "take_ns",
]

DEFAULT_KERNELSPEC: Final = {
    "name": "percent-agent", "display_name": "Agent", "language": "markdown"}
FRONT_MATTER_ID: Final = "front-matter"
PREAMBLE_ID: Final = "preamble"

# Cell metadata that Jupyter recomputes on every load (from the notebook's signature) and
# nbformat's own .ipynb writer and reader drop (``strip_transient``): never part of a message.
TRANSIENT: Final = "trusted"
IN_STRUCT: Final = frozenset({"cell_type", "execution_count", "attachments", "close_fence", NS})
# The cell types of nbformat 4.5 (its output types: record.OUTPUT_KINDS); any other is from a
# future minor version (its "unrecognized_cell"), kept as it is.
CELL_TYPES: Final = frozenset({"code", "markdown", "raw"})
#: Keys of a cell of a future type that the file holds elsewhere than in its ``fields``.
CELL_KEYS: Final = frozenset({"cell_type", "id", "metadata", "source", "attachments"})
# The keys nbformat 4.5 gives each kind of cell, output (record.OUTPUT_KINDS) and notebook.
# Any other key (a later minor version's) is kept as it is, under "fields" in the namespaced
# metadata, and put back on reading: a notebook of nbformat 4.6+ round-trips equal as JSON.
CELL_FIELDS: Final = {
    "code": frozenset({"cell_type", "id", "metadata", "source", "execution_count", "outputs"}),
    "markdown": CELL_KEYS, "raw": CELL_KEYS}
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


def join_source(src: Any) -> str:
    return src if isinstance(src, str) else "".join(src)


def is_json_mime(mime: str) -> bool:
    return mime == "application/json" or (mime.startswith("application/") and
                                          mime.endswith("+json"))


class Context:
    """What the cells of one notebook share: language, heading level, ids in use.

    ``used`` holds the ids no made-up id may take, nor may those in ``seen``. Writing, the
    writer fills ``used`` with the ids of the notebook's cells, and ``seen`` holds each
    footnote id written so far (at 0). Reading, ``seen`` maps each footnote id read so far to
    where its heading is; ``used`` holds the ids made up so far, or every footnote id of the
    text when the reader knows them all (its second pass: docs of ``reader.read_notebook``).
    ``src`` is the reader's text (a newline, then the file's text), for line numbers.
    """

    __slots__ = ("_rows", "lang", "level", "path", "section", "seen", "src", "used")

    def __init__(self, lang: str = "python", level: int = 1, section: str | None = None,
                 path: str | None = None, src: str = "", used: set[str] | None = None):
        self.lang = lang
        self.level = level
        self.used: set[str] = set() if used is None else used
        self.seen: dict[str, int] = {}
        self._rows: dict[str, OutputOf] = {}
        self.section = section
        self.path = path
        self.src = src

    def is_lang(self, typ: str) -> bool:
        """Whether an output's ``[typ]`` names a language: the notebook's or a known one."""
        return typ == self.lang or typ.lower() in LANGS

    def output_row(self, typ: str, sub: str | None) -> OutputOf:
        """What an output heading ``[typ:sub]`` reads as in this notebook: its row of the
        ``[type]`` table (``record.output_of``), kept for each type read or written."""
        if sub is None:
            row = self._rows.get(typ)
            if row is None:
                row = self._rows[typ] = output_of(typ, None, self.is_lang(typ))
            return row
        return output_of(typ, sub, self.is_lang(typ))

    def line(self, pos: int) -> int:
        """The 1-based line of ``pos`` in ``src`` (whose first character is a newline)."""
        return self.src.count("\n", 0, pos)

    def error(self, message: str, pos: int, footnote: bool = False) -> FormatError:
        """A FormatError naming the line of the heading at ``pos``, or with ``footnote`` the
        line of its footnote definition (when it has one) for what the footnote says."""
        if footnote:
            src = self.src
            at = pos
            for _ in range(3):  # the heading, at most one blank line, the footnote
                at = src.find("\n", at) + 1
                if not at:
                    break
                if src.startswith("[^", at):
                    pos = at
                    break
        return FormatError(message, line=self.line(pos), path=self.path)

    def fresh(self, base: str) -> str:
        """A valid nbformat id not in use, derived from ``base``."""
        used = self.used
        seen = self.seen
        cand = _BAD_ID_CHARS.sub("-", base)[:64] or "cell"
        n = 1
        out = cand
        while out in used or out in seen:
            n += 1
            suffix = f"-{n}"
            out = cand[: 64 - len(suffix)] + suffix
        used.add(out)
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


# --------------------------------------------------------------------------- the document


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


def notebook_metadata(front: str | None, path: str | None
                      ) -> tuple[str | None, dict, int, dict | None]:
    """From the front matter text: (front matter cell source, notebook metadata, nbformat
    minor version, a later nbformat's notebook fields)."""
    metadata: dict = {"kernelspec": dict(DEFAULT_KERNELSPEC)}
    source = None
    if front is not None:
        try:
            source, jmeta = split_front_matter(front)
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
    return source, metadata, minor, fields


def notebook(cells: list[dict], metadata: dict, minor: int, fields: dict | None, level: int,
             crlf: bool) -> dict:
    """The notebook of the cells read, its layout (heading level, CRLF) in its metadata.
    A text with no cell (only blank lines) writes back empty, with no line to end: no CRLF."""
    crlf = crlf and bool(cells)
    if crlf or level != 1:
        metadata = dict(metadata)
        nbns: dict[str, Any] = {}
        if level != 1:
            nbns["level"] = level
        if crlf:
            nbns["crlf"] = True
        metadata[NS] = nbns
    nb = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": minor}
    if fields:
        put_fields(nb, fields, NOTEBOOK_FIELDS)
    return nb


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


# --------------------------------------------------------------------------- reading


def take_ns(attrs: dict, ctx: Context, pos: int) -> tuple[dict, dict | None]:
    """(the namespaced entry ``percent_agent={...}`` taken from ``attrs``, its ``meta``: the
    attributes whose keys clash with a structural one)."""
    extra = attrs.pop(NS, None)
    if extra is None:
        return {}, None
    if not isinstance(extra, dict):
        raise ctx.error(f"{NS}= must be a JSON object", pos)
    ns = dict(extra)
    over = ns.pop("meta", None)
    return ns, over if isinstance(over, dict) else None


def drop_last_line(body: str) -> str:
    """``body`` less its last line (the closing line ``close_fence`` says the writer added)."""
    cut = body.rfind("\n")
    return body[:cut] if cut >= 0 else ""


def input_cell(rec: Record, index: int, ctx: Context) -> dict:
    """The cell of an input (``%%``) record read; ``index``: the number of cells before it."""
    _out, level, title, ref, t, sub, link, _struct, attrs, _ns, body, pos = rec
    t = t or "markdown"
    if t not in INPUT_TYPES:
        raise ctx.error(f"unknown cell type [{t}] (expected one of "
                        f"{', '.join(sorted(INPUT_TYPES))})", pos, footnote=True)
    if TRANSIENT in attrs:  # a test first: a call to pop for every cell costs
        attrs.pop(TRANSIENT)
    if has_runner_cell_keys(attrs):  # a runner's, never kept (runner.py)
        for key in [k for k, v in attrs.items() if is_runner_cell_key(k, v)]:
            del attrs[key]
    ns: dict[str, Any] = {}
    over = ct = ec = attachments = None
    has_ec = False
    if not attrs.keys().isdisjoint(IN_STRUCT):
        ns, over = take_ns(attrs, ctx, pos)
        ct = attrs.pop("cell_type", None)
        has_ec = "execution_count" in attrs
        ec = attrs.pop("execution_count", None)
        attachments = attrs.pop("attachments", None)
        if attrs.pop("close_fence", False) is True:
            body = drop_last_line(body)
        if ct is not None and (not isinstance(ct, str) or not ct):
            raise ctx.error(f"cell_type must be a cell type's name, not {ct!r}", pos)
    cell_type = ct or CELL_TYPE_OF[t]
    fields = no_source = None
    if ns:
        fields = ns.pop("fields", None)
        if cell_type not in CELL_TYPES:
            no_source = ns.pop("no_source", None)
    if t != TYPE_OF_CELL.get(cell_type, "markdown"):
        ns["type"] = t
    source = _read_code(body, ns, ctx) if t == "code" and cell_type == "code" else body
    if sub is not None:
        ns["sub"] = sub
    if link is not None:
        ns["link"] = link
    if title:
        ns["title"] = title
    if level != ctx.level:
        ns["level"] = level
    if ref is None:
        cid = ctx.fresh(f"cell-{index}")
    elif NBFORMAT_ID.fullmatch(ref):
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
        put_fields(cell, fields, CELL_FIELDS.get(cell_type, CELL_KEYS))
    if no_source is True:
        del cell["source"]
    if cell_type == "code":
        if ec is not None and (not isinstance(ec, int) or isinstance(ec, bool)):
            raise ctx.error(f"execution_count must be an integer, not {ec!r}", pos)
        cell["execution_count"] = ec
        cell["outputs"] = []
    else:
        if has_ec:
            attrs["execution_count"] = ec
        if attachments is not None:
            cell["attachments"] = attachments
    return cell


def _read_code(body: str, ns: dict, ctx: Context) -> str:
    """A ``[code]`` cell's source: its first fenced block; the rest kept in ``ns``."""
    parts = split_fenced(body)
    if parts is None:
        return body
    pre, open_line, code, _close, post = parts
    opening = open_line.lstrip(" ")
    info = opening.lstrip(opening[0])
    fence = opening[: len(opening) - len(info)]
    info = info.strip()
    if info != ctx.lang:
        ns["lang"] = info
    if fence != fence_for(code):
        ns["fence"] = fence
    if pre:
        ns["pre"] = pre
    if post:
        ns["post"] = post
    return code


def cell_ref(cell: dict) -> str:
    """A cell read's footnote id (its ``cell.id``, or the one kept when that is not valid)."""
    ns = cell["metadata"].get(NS)
    return (ns and ns.get("id")) or cell["id"]
