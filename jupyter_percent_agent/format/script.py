"""Script message files (``NAME.msg.py``, ``NAME.msg.R``, ...): the ``.msg.md`` grammar with a
comment prefix (docs/format.md, "Script message files").

A script message file is the text of its ``.msg.md`` twin with every line behind the
language's comment marker, except three kinds of line: a cell heading, whose first ``#`` *is*
the marker (``# %%``, ``## %%%`` in Python: the Markdown heading is already a comment; ``// %%``
in JavaScript); a blank line; and the code of a ``[code]`` cell, which is plain code with no
fence, so that the file stays a script its interpreter runs. The marker of a language comes
from jupytext's own table (``jupytext/languages.py``), read from its file without importing the
jupytext package (which costs a second).

Reading (:func:`to_markdown`) takes the prefix off, turns the code of a ``[code]`` cell back
into the fenced block of its twin and leaves the rest to the one reader (the preamble,
before the first cell, is kept as it is, as in ``.msg.md``: the script's head); writing
(:func:`to_script`) puts the prefix on the records the one writer made. A commented line
whose text begins with ``%%`` (which behind the marker would read as a heading) is written
with one backslash after the prefix and read back with it removed; a ``[code]`` cell whose
code cannot be written plain and read back the same (a code line that reads as a heading, a
code that begins or ends with a blank line, ...) is written as its twin writes it, commented,
so that no code, string or comment can forge a cell.
"""

from __future__ import annotations

import importlib.util
import os
import re
from bisect import bisect_right
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Final, NamedTuple

from .errors import FormatError
from .lines import CLOSED_BLOCK, OPEN_FENCE, fence_for, fence_opens, split_fenced

__all__ = ["Script", "is_script_path", "script_for", "script_line", "to_markdown", "to_script"]


class Script(NamedTuple):
    """A script language as jupytext knows it: its comment marker and its name."""

    comment: str
    language: str


@lru_cache(maxsize=1)
def _jupytext_table() -> dict:
    """jupytext's table of script extensions (``_SCRIPT_EXTENSIONS``): ``.py`` -> comment
    marker and language. Read from ``jupytext/languages.py`` (it imports only ``re``)."""
    spec = importlib.util.find_spec("jupytext")
    if spec is None or not spec.submodule_search_locations:
        return {}
    where = os.path.join(next(iter(spec.submodule_search_locations)), "languages.py")
    loader = importlib.util.spec_from_file_location("_percent_agent_jupytext_languages", where)
    if loader is None or loader.loader is None:
        return {}
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return dict(module._SCRIPT_EXTENSIONS)


def script_for(path: str | os.PathLike[str] | None) -> Script | None:
    """The script language of ``NAME.msg.EXT`` when EXT is a script extension jupytext knows
    (``.py``, ``.R``, ``.jl``, ``.sh``, ...) whose comments run to the end of the line, else
    None (``.msg.md`` included)."""
    if path is None:
        return None
    name = os.path.basename(os.fspath(path))
    stem, ext = os.path.splitext(name)
    if not stem.lower().endswith(".msg") or not ext or ext.lower() == ".md":
        return None
    table = _jupytext_table()
    entry = table.get(ext) or table.get(ext.lower())
    # a comment that needs an end ('/* ... */' in SAS, '(* ... *)' in OCaml) comments a line
    # only up to the first end in its text: a marker at the start of each line keeps nothing
    # behind it, so such a language is no script message file
    if entry is None or entry.get("comment_suffix"):
        return None
    return Script(entry["comment"], entry["language"])


def is_script_path(path: str | os.PathLike[str] | None) -> bool:
    """True for a script message file, ``NAME.msg.py`` and the like: all messages."""
    return script_for(path) is not None


# ------------------------------------------------------------------------------- patterns

# Characters besides LF that some reader ends a line at: Python's tokenizer a lone CR (a
# comment ends there and code begins), JavaScript CR, U+2028 and U+2029, str.splitlines (editors,
# other tools) all of these. Behind the marker each takes the marker (and a space) after it, so
# that the text after it is a comment too; the reader takes that marker off again.
_BREAK_CHARS: Final = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_BREAKS: Final = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]|\r(?!\n)")

# What follows a heading's first '#': more '#', a space, %% or %%%, then a blank, '[' or EOL.
_HEAD_REST: Final = r"#{0,4} %%%?(?=[ \t\[]|$|\n)"
# A commented line's text that behind the marker would read as a heading: it takes (and
# loses again) one more backslash.
_PCT_LINE: Final = r"\\*%%%?(?=[ \t\[]|\n|$)"


class _Rules(NamedTuple):
    comment: str
    head: re.Pattern[str]  # a heading line, after the newline before it
    first: re.Pattern[str]  # the first heading outside the preamble's fenced blocks
    plain: re.Pattern[str]  # a line that is neither a comment nor blank
    strip: re.Pattern[str]  # the prefix of a commented line (and a py-escape backslash)
    level_one: re.Pattern[str]  # a level-1 heading that lost its '#' with the prefix
    unescape: re.Pattern[str]  # the backslash a '%%' line took behind the marker
    slow: re.Pattern[str]  # a line _strip_fast does not take
    head_fix: re.Pattern[str] | None  # a heading's marker, when it is not '#'
    footnote: re.Pattern[str]  # the footnote and its continuation lines under a heading
    code_type: re.Pattern[str]  # a [code] footnote
    prefix: re.Pattern[str]  # the start of a non-blank md line, to comment
    escape: re.Pattern[str]  # a md line that would read as a heading behind the marker
    front: re.Pattern[str]  # a commented front matter at the top of the text
    breaks: re.Pattern[str]  # a line break other than LF in commented text (takes the marker)
    unbreak: re.Pattern[str]  # such a break and the marker the writer put after it


@lru_cache(maxsize=16)
def _rules(comment: str) -> _Rules:
    c = re.escape(comment)
    head = re.compile(rf"\n{c}(?={_HEAD_REST})")
    # a line that is not a comment: (?!MARKER), needed only when the marker starts with '%'
    # or a backslash (a lookahead at every line costs)
    not_c = f"(?!{c})" if comment[0] in "%\\" else ""
    return _Rules(
        comment=comment,
        head=head,
        first=re.compile(
            rf"\n(?:(?P<cell>{c}(?={_HEAD_REST}))|(?P<block>{CLOSED_BLOCK})|(?P<open>{OPEN_FENCE}))"
        ),
        plain=re.compile(rf"\n(?!{c})(?=[ \t]*[^\s])"),
        strip=re.compile(rf"\n(?!{c}{_HEAD_REST}){c}(?: (?:\\(?={_PCT_LINE}))?|(?=\n|$))"),
        level_one=re.compile(r"\n%%(?=%?(?:[ \t\[]|\n|$))"),
        unescape=re.compile(rf"\n\\(?={_PCT_LINE})"),
        slow=re.compile(rf"\n(?:{not_c}[%\\]|{c}(?=\n|$| \\))"),
        head_fix=None if comment == "#" else head,
        footnote=re.compile(
            rf"\n(?:{c}[ \t]*\n)?{c} ?\[\^[^\]\s]+\]:[^\n]*(?:\n{c} ?(?:  |\t)[^\n]*\S[^\n]*)*"
        ),
        code_type=re.compile(rf"\n{c} ?\[\^[^\]\s]+\]:[ \t]?\[code\]"),
        prefix=re.compile(r"\n(?=[^\n\x00])"),  # a line neither blank nor a heading
        escape=re.compile(rf"\n(?={_PCT_LINE})"),
        front=re.compile(rf"\n{c} ---[ \t]*\n(?:[^\n]*\n)*?{c} (?:---|\.\.\.)[ \t]*(?=\n|$)"),
        breaks=_BREAKS,
        unbreak=re.compile(rf"([{_BREAK_CHARS}]){c} "),
    )


# --------------------------------------------------------------------------------- reading


def to_markdown(text: str, script: Script) -> tuple[str, Callable[[], list[int]]]:
    """The ``.msg.md`` text a script message file means, and a function that tells the lines
    of it that are not in the script (the fences put around the code of ``[code]`` cells:
    1-based, ascending) so that an error's line can be given in the script's numbering
    (:func:`script_line`); it counts lines, so it is called only when there is an error."""
    rules = _rules(script.comment)
    src = "\n" + text
    first = _first_heading(src, rules)
    if first is None:  # no cell: the front matter, then the preamble as it is
        return _head(src, len(src), rules)[1:], list
    at = first.start()
    head = _head(src, at, rules)
    spans, slow = _code_spans(src, at, rules)
    # no line starts with '%' or '\\' or is the marker alone (a canonical file): str.replace
    # does the prefix rule, else the rule's regular expression
    strip = _strip if slow else _strip_fast
    pieces: list[str] = [head]
    for start, end in spans:
        pieces.append(strip(src[at:start], rules))
        code = src[start + 1 : end]
        fence = fence_for(code)
        pieces.append(f"\n{fence}{script.language}\n{code}\n{fence}")
        at = end
    pieces.append(strip(src[at:], rules))
    # not the newline before the first line (copied off the first piece, not the whole)
    first = 0 if head else 1
    pieces[first] = pieces[first][1:]
    return "".join(pieces), partial(_fence_lines, src, spans)


def _fence_lines(src: str, spans: list[tuple[int, int]]) -> list[int]:
    """The markdown's lines of the fences put around the code ``spans`` of ``src``."""
    added: list[int] = []
    line = 0  # newlines of src before ``at``
    at = 0
    for start, end in spans:
        line += src.count("\n", at, start)
        opening = line + len(added) + 1
        added += [opening, opening + src.count("\n", start, end) + 1]
        at = start
    return added


def _first_heading(src: str, rules: _Rules) -> re.Match[str] | None:
    """The first cell heading: the preamble is kept as it is, so a heading-like line inside a
    fenced block of it is text, as in ``.msg.md``."""
    for m in rules.first.finditer(src):
        if m.lastgroup == "cell":
            return m
        if m.lastgroup == "open" and fence_opens(m):
            return None  # a fence nothing closes: the rest is inside it
    return None


def _head(src: str, end: int, rules: _Rules) -> str:
    """``src[:end]``, the text before the first cell: the front matter (a commented block at
    the top, ``C ---`` to ``C ---``) without its prefix, the preamble after it as it is."""
    fm = rules.front.match(src, 0, end)
    return _strip(src[: fm.end()], rules) + src[fm.end() : end] if fm else src[:end]


def _strip(chunk: str, rules: _Rules) -> str:
    """``chunk`` (starting at a newline) with the prefix off its commented lines. A line that
    is not a comment is text as it is: one that would read as seed 000's bare heading
    (``%%% [type]``) takes a backslash, as the writer of ``.msg.md`` escapes it."""
    if "\n%" in chunk or "\n\\" in chunk:
        chunk = _BARE.sub("\n\\\\", chunk)
    out = rules.strip.sub("\n", chunk)
    if rules.head_fix is not None:
        out = rules.head_fix.sub("\n#", out)
    return rules.unbreak.sub(r"\1", out) if _has_break(out) else out


def _strip_fast(chunk: str, rules: _Rules) -> str:
    """:func:`_strip` when no line of ``chunk`` starts with ``%`` or a backslash (behind the
    marker or not) or is the marker alone (``_Rules.slow``): the prefix comes off every line,
    and a level-1 heading, whose ``#`` is the marker, gets its ``#`` back."""
    c = rules.comment
    out = chunk.replace("\n" + c + " ", "\n")
    out = rules.level_one.sub("\n# %%", out)
    if rules.head_fix is not None:
        out = rules.head_fix.sub("\n#", out)
    return rules.unbreak.sub(r"\1", out) if _has_break(out) else out


def _code_spans(src: str, at: int, rules: _Rules) -> tuple[list[tuple[int, int]], bool]:
    """The code of every ``[code]`` input cell after ``at`` (see :func:`_code_span`), and
    whether a line asks for the prefix rule's regular expression (``_Rules.slow``): a line
    that is not a comment and starts with ``%`` or a backslash, or a comment line that is the
    marker alone or holds a backslash after it. A ``[code]`` cell is found by its footnote
    (``_Rules.code_type``) on the line under its heading, or under the one blank line there."""
    spans: list[tuple[int, int]] = []
    slow = rules.slow.search(src, at) is not None
    i = src.find("[code]", at)
    while i >= 0:
        q = src.rfind("\n", at, i)  # the newline before the line holding [code]
        # the next [code] on a later line: a line that repeats it is looked at once (looking
        # back to its start from each would be quadratic)
        eol = src.find("\n", i + 6)
        i = src.find("[code]", eol) if eol >= 0 else -1
        if q < 0 or rules.code_type.match(src, q) is None:
            continue
        head_end = q
        start = src.rfind("\n", 0, head_end)
        if start < at or not rules.head.match(src, start):
            if src[q - 1] != "\n":  # not one blank line between: no heading above it
                continue
            head_end = q - 1
            start = src.rfind("\n", 0, head_end)
            if start < at or not rules.head.match(src, start):
                continue
        if src.startswith("%%%", src.find("%", start, head_end)):
            continue  # an output's footnote
        nxt = rules.head.search(src, q)
        span = _code_span(src, head_end, nxt.start() if nxt is not None else len(src), rules)
        if span is not None:
            spans.append(span)
    return spans, slow


def _code_span(src: str, head_end: int, end: int, rules: _Rules) -> tuple[int, int] | None:
    """The code of the ``[code]`` cell whose heading ends at ``head_end`` and whose text ends
    at ``end``: from the newline before its first line to the end of its last. It is every
    line from the first plain line to the last, and the comment lines right above and below
    them with no blank line between."""
    fn = rules.footnote.match(src, head_end)
    body = fn.end() if fn is not None else head_end
    plains = [m.start() for m in rules.plain.finditer(src, body, end)]
    if not plains:
        return None
    first = plains[0]
    while first > body:  # comment lines right above belong to the code
        prev = src.rfind("\n", body, first)
        if prev < body or first - prev <= 1 or not src[prev + 1 : first].strip():
            break
        first = prev
    last_end = src.find("\n", plains[-1] + 1, end)
    last_end = end if last_end < 0 else last_end
    while last_end < end:  # and the comment lines right below
        nxt = src.find("\n", last_end + 1, end)
        nxt = end if nxt < 0 else nxt
        if not src[last_end + 1 : nxt].strip():
            break
        last_end = nxt
    return first, last_end


def script_line(line: int | None, added: list[int]) -> int | None:
    """The script's line for ``line`` of the markdown :func:`to_markdown` made."""
    if line is None or not added:
        return line
    return line - bisect_right(added, line)


# --------------------------------------------------------------------------------- writing


def to_script(head: str, records: list[str], script: Script, front_end: int) -> str:
    """The script text of what the writer made (``writer.write_parts``): ``head`` (the front
    matter, ``head[:front_end]``, then the preamble and the blank line before the first
    record) and the cell and output ``records``."""
    rules = _rules(script.comment)
    parts = [
        _commented(head[:front_end], rules, script.comment) if front_end else "",
        head[front_end:],  # the preamble, as it is
    ]
    batch: list[str] = []
    texts: list[str] = []
    for rec in records:
        if rec.find("]: [code]", 0, 400) < 0 or _CODE_RECORD.match(rec) is None:
            batch.append(rec)
            continue
        if batch:
            texts.append(_comment_records(batch, rules, script.comment))
            batch = []
        texts.append(_code_record(rec, rules, script))
    if batch:
        texts.append(_comment_records(batch, rules, script.comment))
    parts.append("\n".join(texts))
    text = "".join(parts)
    if script.language == "python":
        _check_declaration(text)
    return text


# Python's first two lines as its tokenizer ends lines (a lone CR too), and the encoding
# declaration PEP 263 looks for in a comment there (CPython's own rule: '#', then anything,
# then 'coding' with ':' or '=', then the name).
_TWO_LINES: Final = re.compile(r"([^\r\n]*)(?:\r\n?|\n)?([^\r\n]*)")
_DECLARATION: Final = re.compile(r"[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _check_declaration(text: str) -> None:
    """Refuse a Python script whose line 1 or 2 (a title, the front matter, the preamble)
    declares an encoding other than UTF-8: Python would read the whole file in it, and text
    that is a comment in UTF-8 (a reply's ``+AAo-`` in UTF-7) could be code. No escape can
    keep such a line and read back the same: the words are the title's or the user's."""
    import codecs

    for n, line in enumerate(_TWO_LINES.match(text).groups(), start=1):  # type: ignore[union-attr]
        m = _DECLARATION.match(line)
        if m is None:
            continue
        try:
            utf8 = codecs.lookup(m.group(1)).name in ("utf-8", "utf-8-sig")
        except LookupError:
            utf8 = False
        if not utf8:
            raise FormatError(
                f"{m.group(0).strip()!r} is a Python encoding declaration (PEP 263): python "
                f"would read the whole script as {m.group(1)!r}, where a comment can be "
                "code; reword it (line 1 or 2: the first title, front matter or preamble)",
                line=n,
            )


# A line that is not a comment and would read as seed 000's bare heading in the markdown.
_BARE: Final = re.compile(r"\n(?=\\*%%%?(?= \[))")
# A proposed=... attribute in a [code] cell's footnote (its first line or a continuation).
_PROPOSED: Final = re.compile(r"\n(?:\[\^[^\]\s]+\]:|  |\t)[^\n]*[ \t]proposed=")
# A [code] input cell's record as the writer makes it.
_CODE_RECORD: Final = re.compile(r"#{1,5} %%(?!%)[^\n]*\n\[\^[^\]\s]+\]: \[code\]")


def _commented(text: str, rules: _Rules, comment: str) -> str:
    """Every line of ``text`` but a blank one behind the marker."""
    src = "\n" + text
    if "%%" in src:
        src = rules.escape.sub("\n\\\\", src)
    return _marked_breaks(rules.prefix.sub("\n" + comment + " ", src)[1:], comment)


def _comment_records(records: list[str], rules: _Rules, comment: str) -> str:
    """Records with no plain code: every line behind the marker but the headings (whose first
    ``#`` is the marker) and the blank lines between records. A NUL before each record marks
    its heading; a record holding a NUL of its own is done on its own."""
    joined = "\n\x00".join(records)
    if joined.count("\x00") != len(records) - 1:
        return "\n".join(_comment_record(r, comment) for r in records)
    src = "\n\x00" + joined
    if rules.escape.search(src) is not None:
        src = rules.escape.sub("\n\\\\", src)
    # one pass puts the prefix on every line but a blank one and a heading (after a NUL)
    src = rules.prefix.sub("\n" + comment + " ", src)
    src = src.replace("\x00", "") if comment == "#" else src.replace("\x00#", comment)
    return _marked_breaks(src[1:], comment)


def _comment_record(rec: str, comment: str) -> str:
    """One record behind the marker (the slower way, for a record that holds a NUL)."""
    nl = rec.find("\n")
    lines = rec[nl + 1 :].split("\n")
    out = [comment + rec[1:nl]]
    for line in lines:
        out.append(
            comment + " " + ("\\" + line if re.match(_PCT_LINE, line) else line) if line else ""
        )
    return _marked_breaks("\n".join(out), comment)


def _code_record(rec: str, rules: _Rules, script: Script) -> str:
    """A ``[code]`` cell's record with its code plain, when that reads back as ``rec``
    (:func:`_plain_code`); else commented as any other record."""
    start = rec.find("\n\n")
    # code a reply proposed is not the user's yet: it stays behind the marker until they run it
    proposed = _PROPOSED.search(rec, 0, start) is not None
    parts = split_fenced(rec[start + 2 : -1]) if start > 0 and not proposed else None
    c = script.comment
    if parts is not None:
        pre, open_line, code, close_line, post = parts
        if (
            close_line
            and (not pre or pre.endswith("\n\n"))
            and (not post or post.startswith("\n\n"))
            and open_line == fence_for(code) + script.language
            and _plain_code(code, rules)
        ):
            nl = rec.find("\n")
            return (
                _marked_breaks(c + rec[1 : nl + 1] + c + " " + rec[nl + 1 : start + 1], c)
                + "\n"
                + _prose(pre[:-1], c, before=True)
                + code
                + "\n"
                + _prose(post[1:], c, before=False)
            )
    return _comment_records([rec], rules, c)


def _plain_code(code: str, rules: _Rules) -> bool:
    """Whether ``code``, written plain, reads back as itself (:func:`_code_span`): no line of
    it is a heading, it has a line that is not a comment, and the lines before the first such
    line and after the last are not blank (a blank line ends the code)."""
    src = "\n" + code
    if rules.head.search(src) is not None:
        return False
    plains = [m.start() for m in rules.plain.finditer(src)]
    if not plains:
        return False
    parts = []
    if plains[0] > 0:  # lines before the first plain one
        parts.append(src[1 : plains[0]])
    tail_at = src.find("\n", plains[-1] + 1)
    if tail_at >= 0:  # lines after the last
        parts.append(src[tail_at + 1 :])
    return all(line.strip() for part in parts for line in part.split("\n"))


def _prose(text: str, comment: str, before: bool) -> str:
    """The text before (``before``) or after a cell's code, commented (a blank line stays
    blank, and ends the code), each line ending with a newline."""
    if not text:
        return ""
    return _marked_breaks(
        "\n".join(
            comment + " " + ("\\" + line if re.match(_PCT_LINE, line) else line) if line else ""
            for line in text.split("\n")
        )
        + "\n",
        comment,
    )


def _marked_breaks(text: str, comment: str) -> str:
    """Commented ``text`` with the marker after each line break other than LF (``_BREAKS``):
    the text after a lone CR is a comment too."""
    if not _has_break(text):
        return text
    return _BREAKS.sub(lambda m: m.group() + comment + " ", text)


def _has_break(text: str) -> bool:
    """Whether ``text`` holds a ``_BREAK_CHARS`` character (one memchr-like scan each: far
    cheaper than a regular expression's scan over text that holds none, as text mostly does)."""
    return any(c in text for c in _BREAK_CHARS)
