"""Footnote metadata: parse and emit ``[TYPE:SUB](LINK) key=value ...``.

Values (docs/format.md, "Syntax"): ``"..."`` is a JSON string, ``'...'`` a literal string with no
escapes, ``[...]``/``{...}`` JSON, and a bare word is an integer, a float, ``true``, ``false``,
``null`` or else a string. Emitting is canonical: strings double-quoted (single-quoted literal
when that avoids escaping double quotes), numbers and booleans bare, arrays and objects as
compact JSON, keys in their given order.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from jupyter_percent_agent.errors import Kind, PercentAgentError

from .errors import FormatError

__all__ = ["AttrError", "emit_key", "emit_meta", "emit_value", "parse_meta"]


class AttrError(PercentAgentError, ValueError):
    """Bad metadata text; the caller adds the line."""

    error_kind = Kind.BAD_FILE


_DECODER: Final = json.JSONDecoder(strict=False)
_KEY: Final = re.compile(r"[A-Za-z_@][\w.\-/@+]*")
_PAIR_KEY: Final = re.compile(r"[ \t]*([A-Za-z_@][\w.\-/@+]*)[ \t]*=[ \t]*")
_DQ: Final = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_BARE: Final = re.compile(r"[^\s]+")
_INT: Final = re.compile(r"-?(?:0|[1-9]\d*)")
_FLOAT: Final = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_TYPE: Final = re.compile(
    r"\[([^\[\]\s:()^][^\[\]\s:()]*)(?::([^\[\]\s()]*))?\](?:\(([^()\s]*)\))?"
)
_OPTIONAL_PAIR: Final = re.compile(r"\[[ \t]*([A-Za-z_@][\w.\-/@+]*)=([^\]\s]*)[ \t]*\]")
# Characters that Python's str.splitlines (and YAML) break lines on, that json.dumps leaves raw.
_RAW_BREAKS: Final = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
_LITERAL_OK: Final = re.compile(r"[^'\x00-\x1f\x7f\x85\u2028\u2029]*")

Meta = tuple[str | None, str | None, str | None, dict[str, Any]]


def parse_value_bare(word: str) -> Any:
    """A bare word's value: JSON literal or number when it is one, else the word itself."""
    if word == "true":
        return True
    if word == "false":
        return False
    if word == "null":
        return None
    if word.isdigit() and word.isascii() and (word[0] != "0" or len(word) == 1):
        return int(word)
    c = word[0]
    if c == "-" or c.isdigit():
        if _INT.fullmatch(word):
            return int(word)
        if _FLOAT.fullmatch(word):
            return float(word)
    return word


def _parse_value(s: str, i: int) -> tuple[Any, int]:
    c = s[i] if i < len(s) else ""
    if c == '"':
        m = _DQ.match(s, i)
        if m is None:
            raise AttrError(f"unterminated or badly quoted string at column {i + 1}")
        body = m.group(1)
        if "\\" in body:
            try:
                return json.loads(m.group(0), strict=False), m.end()
            except ValueError as err:
                raise AttrError(f"bad escape in string at column {i + 1}: {err}") from None
        return body, m.end()
    if c == "'":
        j = s.find("'", i + 1)
        if j < 0:
            raise AttrError(f"unterminated '...' string at column {i + 1}")
        return s[i + 1 : j], j + 1
    if c in "[{":
        try:
            return _DECODER.raw_decode(s, i)
        except ValueError as err:
            raise AttrError(f"bad JSON value at column {i + 1}: {err}") from None
        except RecursionError:
            raise AttrError(f"the JSON value at column {i + 1} nests too deeply") from None
    m = _BARE.match(s, i)
    if m is None:
        raise AttrError(f"missing value at column {i + 1}")
    word = m.group(0)
    if '"' in word or "'" in word:
        raise AttrError(f"badly quoted value {word!r} at column {i + 1}")
    return parse_value_bare(word), m.end()


# One canonical ``key=value`` token: a plain "string" or 'literal' with no space in it, or a
# bare word.
_TOKEN: Final = re.compile(
    r"([A-Za-z_@][\w.\-/@+]*)=(?:\"([^\"\\\n ]*)\"|'([^'\n ]*)'|([^\s\"'\[{][^\s\"']*))"
)


class _NotCanonical(Exception):
    """A token the quick reader does not take; the general parser reads the line."""


class _TokenTable(dict):
    """``"key=value"`` -> ``(key, value)``, filled on first sight of a token.

    Looked up from C (``map(table.__getitem__, tokens)``), so a line of tokens seen before
    costs no Python code at all.
    """

    def __missing__(self, tok: str) -> tuple[str, Any]:
        key, eq, word = tok.partition("=")
        if eq and word.isdigit() and word.isascii() and key in _KEYS_SEEN and (
                word[0] != "0" or len(word) == 1):
            kv: tuple[str, Any] = (key, int(word))  # a count: the commonest bare value
        else:
            p = _TOKEN.fullmatch(tok)
            if p is None:
                raise _NotCanonical
            key, dq, sq, bare = p.groups()
            kv = (key, dq if dq is not None else sq if sq is not None else
                  parse_value_bare(bare))
            if len(_KEYS_SEEN) < 4096:
                _KEYS_SEEN.add(key)
        if len(self) > 16384:
            self.clear()
        self[tok] = kv
        return kv


_TOKENS: Final = _TokenTable()
_KEYS_SEEN: Final[set[str]] = set()
_HEADS: Final[dict[str, tuple[str | None, str | None, str | None]]] = {}
# whole lines: the attributes of messages repeat from cell to cell
_CACHE: Final[dict[str, Meta]] = {}


def parse_meta(s: str, *, need_type: bool = False) -> Meta:
    """Parse ``[TYPE:SUB](LINK) k=v ...`` into (type, subtype, link, attrs).

    The attrs dict returned is the caller's own to change.
    """
    hit = _CACHE.get(s)
    if hit is not None:
        return hit[0], hit[1], hit[2], hit[3].copy()
    # Canonical shape: a [TYPE] then single spaces between ``key=value`` tokens whose strings
    # hold no space. A string with a space in it splits into a token with an unterminated
    # quote, which is not canonical, and sends the whole line to the general parser.
    toks = s.split(" ")
    head = _HEADS.get(toks[0])
    if head is None:
        m = _TYPE.fullmatch(toks[0])
        if m is None:
            return _parse_meta(s, need_type)
        typ, sub, link = m.groups()
        head = (typ, sub, link)
        if len(_HEADS) < 1024:
            _HEADS[toks[0]] = head
    del toks[0]
    try:
        attrs: dict[str, Any] = dict(map(_TOKENS.__getitem__, toks))
    except _NotCanonical:
        return _parse_meta(s, need_type)
    if len(_CACHE) > 2048:
        _CACHE.clear()
    _CACHE[s] = (head[0], head[1], head[2], attrs)
    return head[0], head[1], head[2], attrs.copy()


def _parse_meta(s: str, need_type: bool) -> Meta:
    n = len(s)
    i = 0
    while i < n and s[i] in " \t":
        i += 1
    typ = sub = link = None
    if i < n and s[i] == "[" and not s.startswith("[^", i):
        m = _TYPE.match(s, i)
        if m is not None and (m.end() == n or s[m.end()] in " \t"):
            typ, sub, link = m.group(1), m.group(2), m.group(3)
            i = m.end()
        elif _OPTIONAL_PAIR.match(s, i) is None:
            raise AttrError(f"bad type {s[i:].split()[0]!r}")
    elif need_type:
        raise AttrError("no [TYPE]")
    attrs: dict[str, Any] = {}
    while True:
        while i < n and s[i] in " \t":
            i += 1
        if i >= n:
            break
        c = s[i]
        if c == '"':
            m = _DQ.match(s, i)
            if m is None:
                raise AttrError(f"badly quoted key at column {i + 1}")
            key = json.loads(m.group(0), strict=False)
            j = m.end()
            while j < n and s[j] in " \t":
                j += 1
            if j >= n or s[j] != "=":
                raise AttrError(f"expected = after key at column {j + 1}")
            i = j + 1
            while i < n and s[i] in " \t":
                i += 1
        elif c == "[":
            # seed 002 writes optional pairs as [reasoning=1]
            m = _OPTIONAL_PAIR.match(s, i)
            if m is None:
                raise AttrError(f"unexpected [ at column {i + 1}")
            attrs[m.group(1)] = parse_value_bare(m.group(2)) if m.group(2) else ""
            i = m.end()
            continue
        else:
            m = _PAIR_KEY.match(s, i)
            if m is None:
                word = s[i:].split()[0]
                raise AttrError(f"expected key=value, found {word!r} at column {i + 1}")
            key = m.group(1)
            i = m.end()
        if i >= n:
            raise AttrError(f"missing value for {key!r}")
        value, i = _parse_value(s, i)
        if i < n and s[i] not in " \t":
            raise AttrError(
                f"badly quoted value for {key!r}: unexpected {s[i]!r} at column {i + 1}"
            )
        attrs[key] = value
    return typ, sub, link, attrs


def json_text(value: Any, *, indent: int | None = None) -> str:
    """JSON that never holds a raw line separator, so it stays on the lines it was put on.

    A value nested too deeply for ``json`` (the recursion limit) is a :class:`FormatError`.
    """
    try:
        if indent is None:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        else:
            text = json.dumps(value, ensure_ascii=False, indent=indent)
    except RecursionError:
        raise FormatError("a metadata value nests too deeply to be written") from None
    return text.translate(_RAW_BREAKS)


_PLAIN: Final = re.compile(r'[^"\\\x00-\x1f\x85\u2028\u2029]*')
_KEYS: Final[dict[str, str]] = {}


def emit_value(value: Any) -> str:
    """One value in canonical form."""
    if type(value) is str:
        if _PLAIN.fullmatch(value):
            return '"' + value + '"'
        if '"' in value and _LITERAL_OK.fullmatch(value):
            return "'" + value + "'"
        return json_text(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if type(value) is int:
        return str(value)
    if isinstance(value, str):
        return emit_value(str(value))
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        text = repr(value)
        if _FLOAT.fullmatch(text):
            return text
        # inf/nan are not JSON: keep them as a string token that reads back as a float
        return json_text(value)
    return json_text(value)


def emit_key(key: str) -> str:
    """A key, bare when it can be, else as a JSON string."""
    out = _KEYS.get(key)
    if out is None:
        out = key if _KEY.fullmatch(key) else json_text(key)
        if len(_KEYS) < 4096:
            _KEYS[key] = out
    return out


def pair_text(key: str, value: Any) -> str:
    """``key=value`` in canonical form."""
    return (_KEYS.get(key) or emit_key(key)) + "=" + emit_value(value)


class _PairTable(dict):
    """``(key, value)`` -> ``"key=value"`` text, filled on first sight of a pair.

    Looked up from C (``map(table.__getitem__, attrs.items())``), so attributes seen before
    cost no Python code. Only pairs whose value no other type can equal are kept (as dict keys
    ``True == 1 == 1.0``, and each is written differently): strings, None, and finite floats
    with a fractional part. Other values are written afresh each time.
    """

    def __missing__(self, item: tuple[str, Any]) -> str:
        key, value = item
        tv = type(value)
        if tv is int:  # token counts and the like: written, not kept
            return (_KEYS.get(key) or emit_key(key)) + "=" + str(value)
        tok = (_KEYS.get(key) or emit_key(key)) + "=" + emit_value(value)
        if tv is str or value is None or (
                tv is float and not value.is_integer() and value - value == 0.0):
            if len(self) > 8192:
                self.clear()
            self[item] = tok
        return tok


_PAIRS: Final = _PairTable()


def emit_meta(
    typ: str | None, sub: str | None, link: str | None, attrs: dict[str, Any]
) -> str:
    """``[TYPE:SUB](LINK) k=v ...`` in canonical form."""
    if typ is None:
        head = ""
    elif sub is None and link is None:
        head = "[" + typ + "]"
    else:
        head = "[" + typ + (":" + sub if sub is not None else "") + "]"
        if link is not None:
            head += "(" + link + ")"
    if not attrs:
        return head
    try:
        pairs = " ".join(map(_PAIRS.__getitem__, attrs.items()))
    except TypeError:  # an unhashable value (a list or a dict)
        pairs = " ".join([pair_text(k, v) for k, v in attrs.items()])
    return head + " " + pairs if head else pairs
