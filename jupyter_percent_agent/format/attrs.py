"""Footnote metadata: parse and emit ``[TYPE:SUB](LINK) key=value ...``.

Values (docs/format.md, "Syntax"): ``"..."`` is a JSON string, ``'...'`` a literal string with no
escapes, ``[...]``/``{...}`` JSON, and a bare word is an integer, a float, ``true``, ``false``,
``null`` or else a string. Emitting is canonical: strings double-quoted (single-quoted literal
when that avoids escaping double quotes), numbers and booleans bare, arrays and objects as
compact JSON, and the keys in one order whatever order the dict holds them in
(:data:`KEY_ORDER`, then the rest sorted, then :data:`NS`): the same attributes are the same
bytes from every front end.

Both directions keep small bounded caches keyed by what they have seen (whole footnote lines,
``key=value`` tokens, ``(key, value)`` pairs), filled by the one general rule on first sight.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from jupyter_percent_agent.errors import Kind, PercentAgentError

from .errors import FormatError

__all__ = ["KEY_ORDER", "NS", "AttrError", "emit_key", "emit_meta", "emit_value",
           "is_type_head", "json_text", "key_order", "parse_meta"]


class AttrError(PercentAgentError, ValueError):
    """Bad metadata text; the caller adds the line."""

    error_kind = Kind.BAD_FILE


_DECODER: Final = json.JSONDecoder(strict=False)
_KEY: Final = re.compile(r"[A-Za-z_@][\w.\-/@+]*")
_PAIR_KEY: Final = re.compile(r"[ \t]*([A-Za-z_@][\w.\-/@+]*)[ \t]*=[ \t]*")
# Unrolled and possessive: a repeated alternation would keep a backtracking entry per
# character (150 bytes of memory per byte of a long value).
_DQ: Final = re.compile(r'"([^"\\\n]*+(?:\\.[^"\\\n]*+)*+)"')
_BARE: Final = re.compile(r"[^\s]+")
_WORD: Final = re.compile(r"\s*+(\S++)")
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


def _word(s: str, i: int) -> str:
    """The word at ``i`` in ``s``, for an error (the rest of ``s`` not copied: that would be
    quadratic where a line is tried at many places)."""
    m = _WORD.match(s, i)
    return m.group(1) if m is not None else ""


def parse_value_bare(word: str) -> Any:
    """A bare word's value: JSON literal or number when it is one, else the word itself."""
    if word == "true":
        return True
    if word == "false":
        return False
    if word == "null":
        return None
    try:
        if word.isdigit() and word.isascii() and (word[0] != "0" or len(word) == 1):
            return int(word)
        c = word[0]
        if c == "-" or c.isdigit():
            if _INT.fullmatch(word):
                return int(word)
            if _FLOAT.fullmatch(word):
                return float(word)
    except ValueError:  # more digits than Python converts (4300): kept as the word it is
        return word
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


# The longest text a cache keeps: the caches are for what repeats (short tokens and lines);
# a long one kept would hold its text in memory after the read, up to a cache's size of them.
_CACHED_SIZE: Final = 512
# A footnote line longer than this is read by the general parser at once: split at blanks
# first, a long value with many blanks in it would cost an object per word.
_SPLIT_SIZE: Final = 4096


class _NotCanonical(Exception):
    """A token the token table does not take; the general parser reads the whole line."""


class _TokenTable(dict):
    """``"key=value"`` -> ``(key, value)``, filled on first sight of a token.

    Looked up from C (``map(table.__getitem__, tokens)``), so a line of tokens seen before
    costs no Python code at all. A new token is read by the general rule (:func:`_pairs`); a
    token that is not exactly one pair (a value with a space in it, split in two) sends the
    line to the general parser.
    """

    def __missing__(self, tok: str) -> tuple[str, Any]:
        try:
            pairs = _pairs(tok, 0)
        except AttrError:
            raise _NotCanonical from None
        if len(pairs) != 1:
            raise _NotCanonical
        [kv] = pairs.items()
        if len(tok) <= _CACHED_SIZE:
            if len(self) > 16384:
                self.clear()
            self[tok] = kv
        return kv


_TOKENS: Final = _TokenTable()
_TOKEN: Final = _TOKENS.__getitem__  # bound once: a line's tokens are looked up from C
_HEADS: Final[dict[str, tuple[str | None, str | None, str | None]]] = {}
# whole lines: the attributes of messages repeat from cell to cell
_CACHE: Final[dict[str, Meta]] = {}


def parse_meta(s: str, *, need_type: bool = False, start: int = 0) -> Meta:
    """Parse ``[TYPE:SUB](LINK) k=v ...`` (``s`` from ``start`` on) into (type, subtype,
    link, attrs).

    The attrs dict returned is the caller's own to change.
    """
    if start:
        return _parse_meta(s, need_type, start)
    hit = _CACHE.get(s)
    if hit is not None:
        return hit[0], hit[1], hit[2], hit[3].copy()
    if len(s) > _SPLIT_SIZE:
        return _parse_meta(s, need_type)
    # Tokens between single spaces, each read once and then looked up: a [TYPE] first, then
    # ``key=value`` pairs.
    toks = s.split(" ")
    head = _HEADS.get(toks[0])
    if head is None:
        m = _TYPE.fullmatch(toks[0])
        if m is None:
            return _parse_meta(s, need_type)
        typ, sub, link = m.groups()
        head = (typ, sub, link)
        if len(_HEADS) < 1024 and len(toks[0]) <= _CACHED_SIZE:
            _HEADS[toks[0]] = head
    del toks[0]
    try:
        attrs: dict[str, Any] = dict(map(_TOKEN, toks))
    except _NotCanonical:
        return _parse_meta(s, need_type)
    if len(s) > _CACHED_SIZE:
        return head[0], head[1], head[2], attrs
    if len(_CACHE) > 2048:
        _CACHE.clear()
    _CACHE[s] = (head[0], head[1], head[2], attrs)
    return head[0], head[1], head[2], attrs.copy()


def _parse_meta(s: str, need_type: bool, start: int = 0) -> Meta:
    n = len(s)
    i = start
    while i < n and s[i] in " \t":
        i += 1
    typ = sub = link = None
    if i < n and s[i] == "[" and not s.startswith("[^", i):
        m = _TYPE.match(s, i)
        if m is not None and (m.end() == n or s[m.end()] in " \t"):
            typ, sub, link = m.group(1), m.group(2), m.group(3)
            i = m.end()
        elif _OPTIONAL_PAIR.match(s, i) is None:
            raise AttrError(f"bad type {_word(s, i)!r}")
    elif need_type:
        raise AttrError("no [TYPE]")
    return typ, sub, link, _pairs(s, i)


def _pairs(s: str, i: int) -> dict[str, Any]:
    """The ``key=value`` pairs of ``s`` from ``i`` on (the general rule)."""
    n = len(s)
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
                word = _word(s, i)
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
    return attrs


def json_text(value: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """JSON that never holds a raw line separator, so it stays on the lines it was put on.

    A value nested too deeply for ``json`` (the recursion limit) is a :class:`FormatError`.
    """
    try:
        if indent is None:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                              sort_keys=sort_keys)
        else:
            text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
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


#: The namespaced metadata key: the structure that has no attribute of its own, written last,
#: its JSON keys sorted (it is the writer's own: one text whatever order it was built in).
NS: Final = "percent_agent"

#: The attributes the format knows, in the order they are written (docs/format.md, "Canonical
#: form"); every other key follows them, sorted.
KEY_ORDER: Final = (
    # what a cell is
    "definition", "name", "description", "task_id", "task_type", "attempt", "step", "sop",
    "runs", "max_steps", "task_state", "steps", "history", "summary", "tool", "tools", "args",
    "params", "timeout", "id", "file", "language", "agent",
    # what a run recorded
    "time", "reasoning", "model", "models", "tokens_in", "tokens_out", "cost", "status",
    "error_type", "error", "target", "then", "duration", "interrupted", "incomplete",
    "task_status", "transcript",
)
_RANK: Final = {key: (0, n, "") for n, key in enumerate(KEY_ORDER)}
# keys as a dict holds them -> (the keys to write, in the written order (NS left out);
# whether those are the first keys as the dict holds them, so its values can be zipped to them)
_ORDERS: Final[dict[tuple[str, ...], tuple[tuple[str, ...], bool]]] = {}


def key_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """``keys`` in the written order: :data:`KEY_ORDER`, then the rest sorted; without
    :data:`NS` (the namespaced entry is written from what the writer makes of it)."""
    return _order(keys)[0]


def _order(keys: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    found = _ORDERS.get(keys)
    if found is None:
        order = tuple(sorted((k for k in keys if k != NS),
                             key=lambda k: _RANK.get(k) or (1, 0, k)))
        if len(_ORDERS) > 4096:
            _ORDERS.clear()
        _ORDERS[keys] = found = order, order == keys[: len(order)]
    return found


class _PairTable(dict):
    """``(key, type of value, value)`` -> ``"key=value"`` text, filled on first sight.

    Looked up from C, so attributes seen before cost no Python code. The type is part of the
    key because as dict keys ``True == 1 == 1.0``, and each is written differently.
    """

    def __missing__(self, item: tuple[str, type, Any]) -> str:
        key, _type, value = item
        tok = (_KEYS.get(key) or emit_key(key)) + "=" + emit_value(value)
        if len(tok) <= _CACHED_SIZE:
            if len(self) > 8192:
                self.clear()
            self[item] = tok
        return tok


_PAIRS: Final = _PairTable()
_PAIR: Final = _PAIRS.__getitem__  # bound once: pairs seen before are looked up from C


def _joined(keys: Any, values: Any) -> str:
    """``key=value key=value ...`` of keys and their values. ``values`` may run on past the
    last key (the namespaced entry, last in a dict, is left out so): zip stops at the keys'."""
    # (zip with no keyword: a keyword argument costs its parsing on every call)
    try:
        return " ".join(map(_PAIR, zip(keys, map(type, values), values)))  # noqa: B905
    except TypeError:  # an unhashable value (a list or a dict)
        return " ".join([(_KEYS.get(k) or emit_key(k)) + "=" + emit_value(v)
                         for k, v in zip(keys, values)])  # noqa: B905


def is_type_head(typ: object, sub: object = None, link: object = None) -> bool:
    """Whether ``[TYPE:SUB](LINK)`` (SUB, LINK: None when absent), as :func:`emit_meta` writes
    it, reads back as the same three values: strings the reader's rule (``_TYPE``) takes."""
    if type(typ) is not str or not (sub is None or type(sub) is str) \
            or not (link is None or type(link) is str):
        return False
    head = "[" + typ + (":" + sub if sub is not None else "") + "]"
    m = _TYPE.fullmatch(head + ("(" + link + ")" if link is not None else ""))
    return m is not None and m.groups() == (typ, sub, link)


def emit_meta(typ: str | None, sub: str | None, link: str | None, struct: dict | None,
              attrs: Mapping[str, Any], ns: dict | None = None) -> str:
    """``[TYPE:SUB](LINK) k=v ...`` in canonical form: ``struct`` (what the writer adds for
    the notebook's own fields) as it is ordered, then ``attrs`` in the written order
    (:func:`key_order`), then ``ns`` as the namespaced entry."""
    parts = []
    if typ is not None:
        if sub is None and link is None:
            parts.append("[" + typ + "]")
        else:
            text = "[" + typ + (":" + sub if sub is not None else "") + "]"
            parts.append(text + "(" + link + ")" if link is not None else text)
    if struct:
        parts.append(_joined(struct.keys(), struct.values()))
    if attrs:
        keys = tuple(attrs)
        order, first = _ORDERS.get(keys) or _order(keys)
        if first:  # zip stops at the end of ``order``: NS, if it is the last key, is left out
            if order:
                parts.append(_joined(order, attrs.values()))
        else:
            parts.append(_joined(order, tuple(map(attrs.__getitem__, order))))
    if ns:
        parts.append(NS + "=" + json_text(ns, sort_keys=True))
    return " ".join(parts)
