"""Which texts are message files, and where their messages are: the front matter rule.

One detector (:func:`message_section`) decides where a plain ``.md`` file's messages are,
and the reader, the writer, jupytext's format detection (:func:`is_message_text`) and ``tce``
all ask it (docs/format.md, "Files").
"""

from __future__ import annotations

import re
from typing import Final

from .rules import structure

__all__ = ["front_matter_end", "is_message_path", "is_message_text", "message_section",
           "messages_setting", "where"]

_FM_END: Final = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.M)
# A top-level ``message_section:`` or ``messages:`` key of the front matter and its value.
_SETTING: Final = re.compile(
    r"^(message_section|messages)[ \t]*:(?:[ \t]+([^\r\n]*?))?[ \t]*\r?$", re.M)
# YAML 1.1 booleans as PyYAML resolves them (y/n are strings there too).
_YAML_TRUE: Final = frozenset({"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})
_YAML_FALSE: Final = frozenset({"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})
_YAML_NULL: Final = frozenset({"", "~", "null", "Null", "NULL"})
# unrolled and possessive: no backtracking entry per character of a long value
_SQ: Final = re.compile(r"'([^']*+(?:''[^']*+)*)'")
_DQ_VALUE: Final = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"')


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
    return where(*messages_setting(text))


def where(section: str | None, messages: bool | None) -> str | None:
    """The section the front matter's settings name (:func:`messages_setting`), if any."""
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
    if where(section, messages) is not None:
        return True
    if "%%" not in text:
        return False
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    found = structure(text, front_matter_end(text))[0]
    return any(kind == "cell" for kind, _pos in found)
