"""Text -> records: the reader, as a few small rules over one scan of the text.

The text is scanned once (``lines.scan``) for the lines that carry structure: cell headings,
escaped headings, fences. Then each cell's span is read by three rules in turn:

* ``read_heading``: ``#{1,5} %%[%] Title[^ID]`` (also the liberal forms with metadata on the
  heading itself, seed-000 and jupytext-percent style);
* ``read_footnote``: ``[^ID]: [TYPE](LINK) key=value`` with continuation lines;
* ``read_body``: everything up to the next heading, one separating blank line removed and
  escaped heading-like lines restored.

No I/O and no knowledge of notebooks here: ``notebook.py`` turns records into cells.
"""

from __future__ import annotations

import re
from typing import Any, Final

from .attrs import AttrError, parse_meta
from .errors import FormatError
from .lines import line_number, scan_all

__all__ = ["INPUT_TYPES", "Document", "Record", "is_message_path", "is_message_text",
           "message_section", "messages_setting", "parse"]

INPUT_TYPES: Final = frozenset(
    {"markdown", "code", "raw", "tool", "tool_call", "toolchain", "async", "task"}
)
_FM_END: Final = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.M)
# The heading and its footnote as the writer puts them, or with an empty line between them
# (as people write them, seed 002): both read by one match instead of the general rules.
_CANONICAL_HEAD: Final = re.compile(
    r"(#{1,5}) (%%%?)(?: ([^\n]*?))?\[\^([^\]\s]+)\]\n\n?\[\^\4\]:(?: ([^\n]*))?\n"
)
_FOOT: Final = re.compile(r"\[\^([^\]\s]+)\]:[ \t]?")
_REF_AT_END: Final = re.compile(r"\[\^([^\]\s]+)\]$")
_INLINE: Final = re.compile(r"(?:^|(?<=[ \t]))\[(?!\^)")
# A top-level ``message_section:`` or ``messages:`` key of the front matter and its value.
_SETTING: Final = re.compile(
    r"^(message_section|messages)[ \t]*:(?:[ \t]+([^\r\n]*?))?[ \t]*\r?$", re.M)
# YAML 1.1 booleans as PyYAML resolves them (y/n are strings there too).
_YAML_TRUE: Final = frozenset({"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
_YAML_FALSE: Final = frozenset({"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
_YAML_NULL: Final = frozenset({"", "~", "null", "Null", "NULL"})
_SQ: Final = re.compile(r"'((?:[^']|'')*)'")
_DQ_VALUE: Final = re.compile(r'"(?:[^"\\]|\\.)*"')
_STRAY_FOOT: Final = re.compile(
    r"^\[\^[^\]\s]+\]:[ \t]*\[(?:markdown|code|raw|tool|tool_call|toolchain|async|task"
    r"|output|error|tool_result)[\]:(]",
    re.M,
)


class Record:
    """One cell of the text: a heading, its footnote metadata and its body."""

    __slots__ = ("attrs", "body", "level", "link", "out", "pos", "ref", "sub", "title", "type")

    def __init__(self, out: bool, level: int, title: str, ref: str | None, typ: str | None,
                 sub: str | None, link: str | None, attrs: dict[str, Any], body: str,
                 pos: int = 0):
        self.out = out
        self.level = level
        self.title = title
        self.ref = ref
        self.type = typ
        self.sub = sub
        self.link = link
        self.attrs = attrs
        self.body = body
        self.pos = pos

    def __repr__(self) -> str:
        marker = "%%%" if self.out else "%%"
        return (f"Record({marker} {self.title!r} ref={self.ref!r} [{self.type}:{self.sub}]"
                f"({self.link}) {self.attrs!r} body={self.body!r})")


class Document:
    """A parsed text: front matter block, preamble, records, and how the text was laid out."""

    __slots__ = ("crlf", "front_matter", "preamble", "records", "section", "text")

    def __init__(self, front_matter: str | None = None, preamble: str | None = None,
                 records: list[Record] | None = None, section: str | None = None,
                 crlf: bool = False, text: str = ""):
        self.front_matter = front_matter
        self.preamble = preamble
        self.records = records if records is not None else []
        self.section = section
        self.crlf = crlf
        self.text = text

    def line(self, pos: int) -> int:
        return line_number(self.text, pos)


def front_matter_end(text: str) -> int:
    """Where the front matter at the top of ``text`` ends (after its closing line's newline),
    0 when there is none: ``---`` alone on the first line, closed by ``---`` or ``...``."""
    if not (text.startswith("---\n") or text.startswith("---\r\n")):
        return 0
    m = _FM_END.search(text, 4)
    if m is None:
        return 0
    return m.end() + 1 if m.end() < len(text) else m.end()


def _scalar(raw: str | None) -> tuple[str, bool]:
    """(text, quoted) of a one-line YAML scalar; a plain one loses its ``# comment``."""
    raw = raw or ""
    if raw[:1] == "'":
        m = _SQ.match(raw)
        if m is not None:
            return m.group(1).replace("''", "'"), True
    elif raw[:1] == '"':
        m = _DQ_VALUE.match(raw)
        if m is not None:
            import json

            try:
                return json.loads(m.group(0)), True
            except ValueError:
                pass
    if raw[:1] == "#":
        return "", False
    cut = raw.find(" #")
    if cut < 0:
        cut = raw.find("\t#")
    return (raw if cut < 0 else raw[:cut]).rstrip(" \t"), False


def messages_setting(text: str) -> tuple[str | None, bool | None]:
    """What the front matter at the top of ``text`` (a whole file, or the front matter alone)
    says of messages: (``message_section`` title or None, ``messages`` as a bool or None).

    Top-level keys only, the last of each winning (as in YAML); ``message_section:`` with no
    value (or null) is ``Discussion``; ``messages`` counts only as a YAML boolean.
    """
    end = front_matter_end(text)
    if not end:
        return None, None
    section: str | None = None
    messages: bool | None = None
    for m in _SETTING.finditer(text, 4, end):
        value, quoted = _scalar(m.group(2))
        if m.group(1) == "messages":
            messages = (None if quoted else True if value in _YAML_TRUE else
                        False if value in _YAML_FALSE else None)
        else:
            section = "Discussion" if not quoted and value in _YAML_NULL else value
    return section, messages


def message_section(text: str) -> str | None:
    """The title of the section that holds the messages of a plain ``.md`` file, from the
    front matter at the top of ``text`` (the file's text, or its front matter alone).

    ``message_section: TITLE``, or ``messages: true`` meaning ``Discussion``; ``None`` when
    the front matter names no section, when there is none, and whenever it says
    ``messages: false`` (no messages in this file, whatever else it says). This is the one
    detector of where a ``.md`` file's messages are (a ``NAME.msg.md`` is all messages).
    """
    return _where(*messages_setting(text))


def _where(section: str | None, messages: bool | None) -> str | None:
    if messages is False:
        return None
    if section is not None:
        return section
    return "Discussion" if messages else None


def is_message_path(path: str | None) -> bool:
    """True for ``NAME.msg.md``: the whole file is messages, whatever its content."""
    return path is not None and str(path).lower().endswith(".msg.md")


def is_message_text(text: str) -> bool:
    """Whether a Markdown text is a message file by its content alone (for a ``.md`` that is
    not named ``NAME.msg.md``): its front matter names a message section
    (:func:`message_section`), or, unless it says ``messages: false``, a cell heading starts a
    line outside every fenced block (the reader's own scan, so a jupytext Markdown notebook's
    ``# %%`` comments inside its code blocks do not count).
    """
    section, messages = messages_setting(text)
    if messages is False:
        return False
    if _where(section, messages) is not None:
        return True
    if "%%" not in text:
        return False
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    heads = scan_all(text, front_matter_end(text))[0]
    return bool(heads)


def parse(text: str, path: str | None = None) -> Document:
    """Read ``text`` into a :class:`Document`. Raises :class:`FormatError`."""
    crlf = False
    nl = text.find("\n")
    if nl > 0 and text[nl - 1] == "\r":
        crlf = True
        text = text.replace("\r\n", "\n")
    doc = Document(crlf=crlf, text=text)
    pos = front_matter_end(text)
    if pos:
        doc.front_matter = text[:pos]
        if not is_message_path(path):
            section, messages = messages_setting(doc.front_matter)
            if messages is False:  # no messages here: the whole document is its preamble
                doc.preamble = text[pos:]
                return doc
            doc.section = _where(section, messages)

    heads, escapes, sections, fence_at = scan_all(text, pos, doc.section)
    if fence_at >= 0:
        _check_unclosed(doc, fence_at)
    if doc.section is not None:
        if not sections:
            # messages: true but no section yet: a document with no messages so far
            doc.preamble = text[pos:]
            return doc
        section_at = sections[-1]
        heads = [h for h in heads if h > section_at]
        escapes = [e for e in escapes if e > section_at]
    first = heads[0] if heads else len(text)
    preamble = text[pos:first]
    if doc.section is not None or preamble.strip():
        if doc.section is None:
            m = _STRAY_FOOT.search(preamble)
            if m is not None:
                raise FormatError("cell metadata footnote with no cell heading above it",
                                  line=doc.line(pos + m.start()), path=path)
        doc.preamble = preamble
    ends = [*heads[1:], len(text)] if heads else []
    ei = 0
    n_esc = len(escapes)
    seen: dict[str, int] = {}
    records = doc.records
    size = len(text)
    none: list[int] = []
    for start, end in zip(heads, ends, strict=True):
        mine = none
        if ei < n_esc:
            while ei < n_esc and escapes[ei] < start:
                ei += 1
            mine = []
            while ei < n_esc and escapes[ei] < end:
                mine.append(escapes[ei])
                ei += 1
        rec = read_cell(doc, start, end, mine, path, end == size)
        ref = rec.ref
        if ref is not None:
            if ref in seen:
                raise FormatError(f"duplicate id [^{ref}] (first used on line "
                                  f"{doc.line(seen[ref])})", line=doc.line(start),
                                  path=path)
            seen[ref] = start
        records.append(rec)
    return doc


def _check_unclosed(doc: Document, fence_at: int) -> None:
    text = doc.text
    m = re.compile(r"^(?:#{1,5} %%%?(?=[ \t\[]|$))", re.M).search(text, fence_at)
    if m is not None:
        raise FormatError(
            f"unclosed fence: it hides the cell heading on line {doc.line(m.start())}",
            line=doc.line(fence_at),
        )


def read_cell(doc: Document, start: int, end: int, escapes: list[int], path: str | None,
              at_eof: bool) -> Record:
    """Apply the heading, footnote and body rules to the span ``[start, end)``."""
    text = doc.text
    m = _CANONICAL_HEAD.match(text, start, end)
    if m is not None:
        hashes, marker, title, ref, meta = m.groups()
        pos = m.end()
    if m is not None and (pos >= end or text[pos] not in " \t"):
        # fast path for the canonical heading + footnote pair (same id in both)
        if title is None:
            title = ""
        elif title[-1:] in (" ", "\t"):
            title = title.rstrip()
        try:
            typ, sub, link, attrs = parse_meta(meta or "")
        except AttrError as err:
            raise FormatError(f"bad metadata for [^{ref}]: {err}",
                              line=doc.line(m.start(5)), path=path) from None
        rec = Record(len(marker) == 3, len(hashes), title, ref, typ, sub, link, attrs, "",
                     start)
        if pos < end and text[pos] == "\n":
            pos += 1
        if escapes or pos >= end:
            rec.body = read_body(text, pos, end, escapes, at_eof)
        else:
            # read_body, inlined for the common case
            if at_eof:
                cut = end - 1 if text[end - 1] == "\n" else end
            elif text[end - 2] == "\n" and end - 2 >= pos:
                cut = end - 2
            else:
                cut = end - 1
            rec.body = text[pos:cut]
        return rec
    eol = text.find("\n", start, end)
    if eol < 0:
        eol = end
    rec = read_heading(text[start:eol], doc, start, path)
    pos = read_footnote(doc, rec, min(eol + 1, end), end, path)
    rec.body = read_body(text, pos, end, escapes, at_eof)
    return rec


def read_heading(line: str, doc: Document, pos: int, path: str | None) -> Record:
    """Heading rule: level, input/output marker, title, footnote reference."""
    level = len(line) - len(line.lstrip("#"))
    rest = line[level:]
    if level:
        rest = rest[1:]
    out = rest.startswith("%%%")
    rest = rest[3:] if out else rest[2:]
    rest = rest.strip()
    rec = Record(out, level or 1, rest, None, None, None, None, {}, "", pos)
    m = _REF_AT_END.search(rest) if rest.endswith("]") else None
    if m is not None:
        rec.ref = m.group(1)
        rec.title = rest[: m.start()].rstrip()
        return rec
    if "[" in rest:
        for c in _INLINE.finditer(rest):
            try:
                typ, sub, link, attrs = parse_meta(rest[c.start():], need_type=True)
            except AttrError:
                continue
            if not out and typ not in INPUT_TYPES:
                continue
            rec.title = rest[: c.start()].rstrip()
            rec.type, rec.sub, rec.link, rec.attrs = typ, sub, link, attrs
            break
    return rec


def read_footnote(doc: Document, rec: Record, pos: int, end: int, path: str | None) -> int:
    """Footnote rule: the metadata definition under the heading. Returns where the body starts."""
    text = doc.text
    cand = pos
    for _ in range(2):
        if cand >= end:
            return pos
        eol = text.find("\n", cand, end)
        if eol < 0:
            eol = end
        line = text[cand:eol]
        if line.strip():
            break
        cand = eol + 1
    else:
        return _skip_blank(text, pos, end)
    if not line.startswith("[^") or rec.type is not None:
        return _skip_blank(text, pos, end)
    m = _FOOT.match(line)
    if m is None:
        return _skip_blank(text, pos, end)
    ref = m.group(1)
    meta = line[m.end():]
    nxt = eol + 1
    while nxt < end:
        e2 = text.find("\n", nxt, end)
        if e2 < 0:
            e2 = end
        cont = text[nxt:e2]
        if not (cont.startswith(("  ", "\t")) and cont.strip()):
            break
        meta += " " + cont.strip()
        nxt = e2 + 1
    if rec.ref is None:
        try:
            rec.type, rec.sub, rec.link, rec.attrs = parse_meta(meta)
        except AttrError:
            # a heading with no reference and an ordinary footnote under it: that is body
            return _skip_blank(text, pos, end)
        rec.ref = ref
    else:
        if ref != rec.ref:
            raise FormatError(f"footnote [^{ref}] does not match the heading's [^{rec.ref}]",
                              line=doc.line(cand), path=path)
        try:
            rec.type, rec.sub, rec.link, rec.attrs = parse_meta(meta)
        except AttrError as err:
            raise FormatError(f"bad metadata for [^{ref}]: {err}", line=doc.line(cand),
                              path=path) from None
    return _skip_blank(text, min(nxt, end), end)


def _skip_blank(text: str, pos: int, end: int) -> int:
    """Skip the one blank line that separates metadata from body."""
    if pos >= end:
        return end
    eol = text.find("\n", pos, end)
    if eol < 0:
        return pos
    if not text[pos:eol].strip():
        return eol + 1
    return pos


def read_body(text: str, pos: int, end: int, escapes: list[int], at_eof: bool) -> str:
    """Body rule: the text to the next heading, less the blank separator, unescaped."""
    if pos >= end:
        return ""
    if escapes:
        parts = []
        last = pos
        for e in escapes:
            if e < pos:
                continue
            parts.append(text[last:e])
            last = e + 1
        parts.append(text[last:end])
        body = "".join(parts)
    else:
        body = text[pos:end]
    if at_eof:
        if body.endswith("\n"):
            body = body[:-1]
    elif body.endswith("\n\n"):
        body = body[:-2]
    elif body.endswith("\n"):
        body = body[:-1]
    return body
