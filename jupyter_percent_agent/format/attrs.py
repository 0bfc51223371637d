"""Footnote metadata: parse and emit ``[TYPE:SUB](LINK) key=value ...``.

Values (FORMAT.md section 2): ``"..."`` is a JSON string, ``'...'`` a literal string with no
escapes, ``[...]``/``{...}`` JSON, and a bare word is an integer, a float, ``true``, ``false``,
``null`` or else a string. Emitting is canonical: strings double-quoted (single-quoted literal
when that avoids escaping double quotes), numbers and booleans bare, arrays and objects as
compact JSON, keys in their given order.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["AttrError", "emit_key", "emit_meta", "emit_value", "parse_meta"]


class AttrError(ValueError):
    """Bad metadata text; the caller adds the line."""


_DECODER = json.JSONDecoder(strict=False)
_KEY = re.compile(r"[A-Za-z_@][\w.\-/@+]*")
_PAIR_KEY = re.compile(r"[ \t]*([A-Za-z_@][\w.\-/@+]*)[ \t]*=[ \t]*")
_DQ = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_BARE = re.compile(r"[^\s]+")
_INT = re.compile(r"-?(?:0|[1-9]\d*)")
_FLOAT = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_TYPE = re.compile(r"\[([^\[\]\s:()^][^\[\]\s:()]*)(?::([^\[\]\s()]*))?\](?:\(([^()\s]*)\))?")
_OPTIONAL_PAIR = re.compile(r"\[[ \t]*([A-Za-z_@][\w.\-/@+]*)=([^\]\s]*)[ \t]*\]")
# Characters that Python's str.splitlines (and YAML) break lines on, that json.dumps leaves raw.
_RAW_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
_LITERAL_OK = re.compile(r"[^'\x00-\x1f\x7f\x85\u2028\u2029]*")

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
    m = _BARE.match(s, i)
    if m is None:
        raise AttrError(f"missing value at column {i + 1}")
    word = m.group(0)
    if '"' in word or "'" in word:
        raise AttrError(f"badly quoted value {word!r} at column {i + 1}")
    return parse_value_bare(word), m.end()


_TYPE_HEAD = re.compile(
    r"\[([^\[\]\s:()^][^\[\]\s:()]*)(?::([^\[\]\s()]*))?\](?:\(([^()\s]*)\))?"
)
# one ' key=value' with a plain "string", a 'literal' or a bare word; must be followed by a
# space or the end, so that consecutive matches cover the text exactly
_FAST_PAIR = re.compile(
    r" ([A-Za-z_@][\w.\-/@+]*)=(?:\"([^\"\\\n]*)\"|'([^'\n]*)'|([^\s\"'\[{][^\s\"']*))(?= |$)"
)
_CACHE: dict[str, Meta] = {}
_BARE_CACHE: dict[str, Any] = {}
_MISSING = object()


_TOKEN = re.compile(
    r"([A-Za-z_@][\w.\-/@+]*)=(?:\"([^\"\\\n]*)\"|'([^'\n]*)'|([^\s\"'\[{][^\s\"']*))"
)
_TOKENS: dict[str, tuple[str, Any]] = {}
_HEADS: dict[str, tuple[str | None, str | None, str | None]] = {}


def _token(tok: str) -> tuple[str, Any] | None:
    """``(key, value)`` of one canonical ``key=value`` token (cached), None if it is not one."""
    kv = _TOKENS.get(tok)
    if kv is None:
        p = _TOKEN.fullmatch(tok)
        if p is None:
            return None
        key, dq, sq, bare = p.groups()
        if bare is not None:
            kv = (key, parse_value_bare(bare))
        else:
            kv = (key, dq if dq is not None else sq)
        if len(_TOKENS) > 8192:
            _TOKENS.clear()
        _TOKENS[tok] = kv
    return kv


def parse_meta(s: str, *, need_type: bool = False) -> Meta:
    """Parse ``[TYPE:SUB](LINK) k=v ...`` into (type, subtype, link, attrs).

    The attrs dict returned is the caller's own to change.
    """
    hit = _CACHE.get(s)
    if hit is not None:
        return hit[0], hit[1], hit[2], hit[3].copy()
    # Canonical shape: single spaces between ``key=value`` tokens whose strings hold no space.
    # Each token must match on its own: a string with a space in it splits into a token with
    # an unterminated quote, which does not, and sends the whole line to the full parser.
    toks = s.split(" ")
    head = _HEADS.get(toks[0])
    if head is None:
        m = _TYPE_HEAD.fullmatch(toks[0])
        if m is None:
            return _parse_meta(s, need_type)
        head = m.groups()
        if len(_HEADS) < 1024:
            _HEADS[toks[0]] = head
    try:
        # every token seen before: the dict is built in C from the cached (key, value) pairs
        attrs: dict[str, Any] = dict(map(_TOKENS.__getitem__, toks[1:]))
    except KeyError:
        attrs = {}
        for tok in toks[1:]:
            kv = _token(tok)
            if kv is None:
                return _parse_meta(s, need_type)
            attrs[kv[0]] = kv[1]
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
    """JSON that never holds a raw line separator, so it stays on the lines it was put on."""
    if indent is None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    else:
        text = json.dumps(value, ensure_ascii=False, indent=indent)
    return text.translate(_RAW_BREAKS)


_PLAIN = re.compile(r'[^"\\\x00-\x1f\x85\u2028\u2029]*')
_KEYS: dict[str, str] = {}
# "key=value" texts of pairs with a string value. Only those are stored, so a pair with any
# other value never hits one (1 == 1.0 == True as dict keys, but none of them equals a string).
_STR_TOKENS: dict[tuple[str, Any], str] = {}
# floats apart: (key, float value) -> "key=value" text
_FLOAT_TOKENS: dict[tuple[str, float], str] = {}


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
    """``key=value`` in canonical form (cached for strings and floats)."""
    tv = type(value)
    if tv is str:
        tok = emit_key(key) + "=" + emit_value(value)
        if len(_STR_TOKENS) > 8192:
            _STR_TOKENS.clear()
        _STR_TOKENS[(key, value)] = tok
        return tok
    if tv is int:
        return (_KEYS.get(key) or emit_key(key)) + "=" + str(value)
    if tv is float and value:  # not 0.0: -0.0 == 0.0 as a dict key
        tok = _FLOAT_TOKENS.get((key, value))
        if tok is None:
            tok = emit_key(key) + "=" + emit_value(value)
            if len(_FLOAT_TOKENS) > 4096:
                _FLOAT_TOKENS.clear()
            _FLOAT_TOKENS[(key, value)] = tok
        return tok
    return emit_key(key) + "=" + emit_value(value)


def emit_meta(
    typ: str | None, sub: str | None, link: str | None, attrs: dict[str, Any] | list
) -> str:
    """``[TYPE:SUB](LINK) k=v ...`` in canonical form."""
    parts = []
    if typ is not None:
        head = "[" + typ + (":" + sub if sub is not None else "") + "]"
        if link is not None:
            head += "(" + link + ")"
        parts.append(head)
    get = _STR_TOKENS.get
    append = parts.append
    for item in attrs.items() if isinstance(attrs, dict) else attrs:
        try:
            tok = get(item)  # the (key, value) pair itself is the key: no tuple to build
        except TypeError:  # an unhashable value (a list or a dict)
            tok = None
        append(tok if tok is not None else pair_text(item[0], item[1]))
    return " ".join(parts)
