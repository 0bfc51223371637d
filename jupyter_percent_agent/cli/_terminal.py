"""What ``tce`` writes to a terminal shows text, never drives the terminal.

Replies, tool results, a code cell's prints and a file's titles are written by others (a
prompt-injected model, a cloned file). Control characters in them would, as they are, set the
clipboard (OSC 52), hide text (SGR 8), erase or rewrite the lines above (CSI, ``\\r``,
backspace) or change the window title; bidirectional overrides and isolates would show text in
an order other than the one it has (``Trojan Source``: code that reads as harmless and is not).
On a terminal every control character but newline and tab is shown as its Unicode control
picture (ESC as ``␛``, C1 controls as ``�``) and each bidirectional control by its code
(``<U+202E>``), so the text stays readable and nothing is lost from view; ``\\r\\n`` stays a
line end. A pipe or a file gets
the text exactly (it is data there, as ``ls`` does).

Standard library only: ``tce list`` must start fast.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import Any

# a "\r" right before "\n" is a line end, kept; every other C0 but tab and newline, DEL, C1,
# and the bidirectional embeddings, overrides and isolates
_CONTROL = re.compile(r"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _picture(match: re.Match[str]) -> str:
    char = match.group(0)
    if char == "\r\n":
        return char
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ .. ␟
    if code > 0x9F:
        return f"<U+{code:04X}>"  # a bidirectional control: no picture either
    return "\u2421" if code == 0x7F else "\ufffd"  # ␡, and C1 has no pictures


def visible(text: str) -> str:
    """``text`` with every control character but newline, tab and a CRLF's CR, and every
    bidirectional control, made visible."""
    return _CONTROL.sub(_picture, text)


class TerminalStream:
    """A text stream to a terminal that shows control characters instead of obeying them."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if isinstance(text, str):
            self.stream.write(visible(text))
        else:  # bytes, for a binary writer
            self.stream.write(text)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def confirm_text(text: str) -> str:
    """``text`` for a yes/no prompt, made ``visible``: a prompt reaches a terminal through
    ``input()``, which writes to the terminal's descriptor, past the guarded ``sys.stdout``."""
    return visible(text)


def guard_terminal() -> None:
    """From now on, ``sys.stdout`` and ``sys.stderr`` show control characters when they are
    a terminal."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, TerminalStream):
            continue
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            continue
        if tty:
            setattr(sys, name, TerminalStream(stream))


def drawing_stream(stream: Any) -> Any:
    """The stream under ``stream`` that obeys control characters: for what ``tce`` itself
    draws (a progress bar's ``\\r``), never for text others wrote."""
    return stream.stream if isinstance(stream, TerminalStream) else stream
