"""Sensitive values never leave the process: one masking step for every boundary.

The value of every key the runtime knows is replaced by ``[masked NAME]`` wherever text leaves
the process: the message files and transcripts the format core writes, the requests sent to
models, the terminal and the kernel's outputs. A trusted tool that returns the user's key, a
code cell that prints a token, an error that quotes one: all go through the same step, not a
filter per feature.

What is sensitive:

* every environment variable named ``*_KEY``, ``*_TOKEN``, ``*_SECRET`` or ``*_PASSWORD``
  (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ``DB_PASSWORD``...) whose value has at least
  ``MIN_LENGTH`` characters (shorter values, ``1`` or ``true``, would mask ordinary words);
* what the parts above register with :func:`add_source`: the user's stored keys and the
  variables an allowed endpoint takes its key from (``trust`` registers them), and a call's
  own keys (:func:`mask` takes ``extra``).

A value is masked as it is and, from ``ENCODED_FROM`` characters on (as keys are), in the forms
a key takes on its way through a header, a URL or a dump (:func:`encoded_forms`): the base64
of the whole value (standard and URL-safe, with or without padding), its hex (lower or upper
case) and its URL encoding. Masking is one scan of the text for all forms at once, linear in
the text's size.

Standard library only, at the bottom of the package: the format core's writer asks it on every
write. The set of values is rebuilt only when the environment or a source's answer changes.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

MIN_LENGTH: Final = 8
"""The shortest value that is masked."""

ENCODED_FROM: Final = 16
"""The shortest value whose encoded forms are masked too (shorter ones would make a few
characters of base64 or hex count as a secret)."""

HELD_FROM: Final = 1
"""The shortest start of a sensitive value that a stream keeps back (``streamed``): one
character, since a start shown is a value whose rest no later scan recognises."""

SUFFIXES: Final = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
"""Environment variable names ending so hold a secret (case-insensitive)."""

Source = Callable[[], Mapping[str, str]]
"""A function naming more sensitive values: ``{NAME: value}``; it must be cheap and never
raise (a source that raises is skipped)."""

_sources: list[Source] = []
_lock = threading.Lock()
_Compiled = tuple[re.Pattern[str] | None, dict[str, str], tuple[str, ...]]
_cache: tuple[tuple[tuple[str, str], ...], _Compiled] = ((), (None, {}, ()))


def add_source(source: Source) -> None:
    """Register ``source`` (once): its values are masked from now on."""
    with _lock:
        if source not in _sources:
            _sources.append(source)


def sensitive_name(name: str) -> bool:
    """Whether an environment variable called ``name`` holds a secret by its name."""
    return name.upper().endswith(SUFFIXES)


def label(name: str) -> str:
    """What a value of ``name`` is replaced by."""
    return f"[masked {name}]"


def sensitive_values(
    env: Mapping[str, str] | None = None, extra: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    """Every value to mask, mapped to the name it is masked as (the first name that has it)."""
    env = os.environ if env is None else env
    found: dict[str, str] = {}

    def take(name: str, value: object) -> None:
        if isinstance(value, str) and len(value) >= MIN_LENGTH and value not in found:
            found[value] = name

    for name, value in (extra or {}).items():
        take(name, value)
    for name in sorted(env):
        if sensitive_name(name):
            take(name, env[name])
    for source in list(_sources):
        try:
            for name, value in source().items():
                take(name, value)
        except Exception:  # a source that cannot answer now (a keys file being rewritten)
            continue
    return found


def encoded_forms(value: str) -> list[str]:
    """The forms of ``value`` masked beside it (none below ``ENCODED_FROM`` characters): the
    base64 of its UTF-8 bytes, standard and URL-safe, with and without ``=`` padding; their
    hex, lower and upper case; and its URL encoding (``%2F``, and ``+`` for a space)."""
    if len(value) < ENCODED_FROM:
        return []
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no file or request can carry anyway
        return []
    from urllib.parse import quote, quote_plus

    standard = base64.b64encode(raw).decode("ascii")
    url_safe = base64.urlsafe_b64encode(raw).decode("ascii")
    forms = [standard, standard.rstrip("="), url_safe, url_safe.rstrip("="),
             raw.hex(), raw.hex().upper(), quote(value, safe=""), quote_plus(value, safe="")]
    return list(dict.fromkeys(f for f in forms if f != value))


def masked_forms(values: dict[str, str]) -> dict[str, str]:
    """Every form to mask (the values and their :func:`encoded_forms`), mapped to the name it
    is masked as."""
    return _compiled(values)[1]


def _compiled(values: dict[str, str]) -> _Compiled:
    """The one pattern of every form (longest first), the forms' names, and the probes: the
    forms no shorter form starts (a text holding a padded base64 holds it unpadded too)."""
    global _cache
    key = tuple(sorted(values.items()))
    cached = _cache
    if cached[0] == key:
        return cached[1]
    forms = dict(values)
    for value, name in values.items():
        for form in encoded_forms(value):
            forms.setdefault(form, name)
    # the longest first: a form that holds another (the padded base64) is masked whole
    pattern = (
        re.compile("|".join(re.escape(v) for v in sorted(forms, key=len, reverse=True)))
        if forms
        else None
    )
    probes = tuple(f for f in forms if not any(g != f and f.startswith(g) for g in forms))
    _cache = (key, (pattern, forms, probes))
    return _cache[1]


def masker(extra: Mapping[str, str | None] | None = None) -> Callable[[str], str]:
    """A function masking a text with the values known now (for many texts at once)."""
    pattern, forms, probes = _compiled(sensitive_values(extra=extra))
    if pattern is None:
        return lambda text: text

    def mask_one(text: str) -> str:
        # a few substring searches (C, memchr-fast) before the regular expression: most texts
        # hold no secret, and then cost a tenth of what the expression's scan would
        if not text or not any(probe in text for probe in probes):
            return text
        return pattern.sub(lambda m: label(forms[m.group(0)]), text)

    return mask_one


def mask(text: str, extra: Mapping[str, str | None] | None = None) -> str:
    """``text`` with every sensitive value replaced by ``[masked NAME]``."""
    return masker(extra)(text)


def mask_data(
    data: Any,
    extra: Mapping[str, str | None] | None = None,
    *,
    using: Callable[[str], str] | None = None,
) -> Any:
    """A copy of JSON-like ``data`` (dicts, lists, strings) with every string masked; keys of
    dicts are kept as they are. ``data`` itself is unchanged."""
    fn = using or masker(extra)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return fn(value)
        if isinstance(value, Mapping):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        return value

    return walk(data)


def streamed(text: str, extra: Mapping[str, str | None] | None = None) -> tuple[str, str]:
    """``(shown, held)`` for text that arrives piece by piece (a streaming reply): ``shown``
    is ``text`` masked, less a tail that could be the start of a sensitive value (``held``,
    unmasked: shown when more text says what it is). A key split across two pieces is
    masked whole, and no piece of it is shown before, in any of its masked forms."""
    hold = 0
    for form in masked_forms(sensitive_values(extra=extra)):
        # the longest end of ``text`` that starts ``form``: only where its first character is
        window = text[len(text) - min(len(form) - 1, len(text)):]
        start = window.find(form[:1])
        while start != -1 and len(window) - start > max(hold, HELD_FROM - 1):
            if form.startswith(window[start:]):
                hold = len(window) - start
                break
            start = window.find(form[:1], start + 1)
    head, tail = (text[:-hold], text[-hold:]) if hold else (text, "")
    return mask(head, extra), tail


def any_sensitive(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` holds a sensitive value (a test's and a check's question)."""
    fn = masker()
    return any(fn(t) != t for t in texts)


class MaskedStream:
    """A text stream (``sys.stdout``, ``sys.stderr``) that masks what is written to it: the
    terminal's one masking step. A write that ends with what could be the start of a
    sensitive value keeps that tail back until the next write says what it is (a streamed
    reply comes a few characters at a time); what is kept back at exit is written then.
    Everything else is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.held = ""

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # bytes, for a binary writer
            self.stream.write(text)
            return len(text)
        shown, self.held = streamed(self.held + text)
        if shown:
            self.stream.write(shown)
        return len(text)

    def release(self) -> None:
        """Write what was kept back (it was not a sensitive value after all)."""
        held, self.held = self.held, ""
        if held:
            self.stream.write(held)
            self.stream.flush()

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def mask_terminal() -> None:
    """Mask everything this process writes to ``sys.stdout`` and ``sys.stderr`` from now on."""
    import atexit
    import sys

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, MaskedStream):
            masked = MaskedStream(stream)
            setattr(sys, name, masked)
            atexit.register(masked.release)
