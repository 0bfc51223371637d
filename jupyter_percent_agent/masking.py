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

Standard library only, at the bottom of the package: the format core's writer asks it on every
write. The set of values is rebuilt only when the environment or a source's answer changes.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

MIN_LENGTH: Final = 8
"""The shortest value that is masked."""

HELD_FROM: Final = 3
"""The shortest start of a sensitive value that a stream keeps back (``streamed``)."""

SUFFIXES: Final = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
"""Environment variable names ending so hold a secret (case-insensitive)."""

Source = Callable[[], Mapping[str, str]]
"""A function naming more sensitive values: ``{NAME: value}``; it must be cheap and never
raise (a source that raises is skipped)."""

_sources: list[Source] = []
_lock = threading.Lock()
_cache: tuple[tuple[tuple[str, str], ...], re.Pattern[str] | None, dict[str, str]] = ((), None, {})


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


def _pattern(values: dict[str, str]) -> re.Pattern[str] | None:
    global _cache
    key = tuple(sorted(values.items()))
    cached = _cache
    if cached[0] == key:
        return cached[1]
    # the longest first: a value that holds another is masked whole
    pattern = (
        re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))
        if values
        else None
    )
    _cache = (key, pattern, values)
    return pattern


def masker(extra: Mapping[str, str | None] | None = None) -> Callable[[str], str]:
    """A function masking a text with the values known now (for many texts at once)."""
    values = sensitive_values(extra=extra)
    pattern = _pattern(values)
    if pattern is None:
        return lambda text: text

    def mask_one(text: str) -> str:
        # a few substring searches (C, memchr-fast) before the regular expression: most texts
        # hold no secret, and then cost a tenth of what the expression's scan would
        if not text or not any(value in text for value in values):
            return text
        return pattern.sub(lambda m: label(values[m.group(0)]), text)

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
    masked whole, and no piece of it is shown before."""
    values = sensitive_values(extra=extra)
    hold = 0
    for value in values:
        # HELD_FROM characters at least: "s" or "sk" at the end of a line give nothing away
        for k in range(min(len(value) - 1, len(text)), max(hold, HELD_FROM - 1), -1):
            if text.endswith(value[:k]):
                hold = k
                break
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
