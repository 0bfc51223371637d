"""Model replies: parse ATTP TOML into typed results, and write them back as TOML."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Any

import tomlkit
from tomlkit.exceptions import ParseError

from jupyter_percent_agent.errors import Kind, PercentAgentError

from ._prompt import ANSWER_TEMPLATE, FAIL_TEMPLATE, SUCCESS_TEMPLATE


@dataclass(frozen=True)
class ToolCall:
    """``status = "success"``: run ``code`` in the sandbox."""

    thought: str
    target: str
    code: str


@dataclass(frozen=True)
class Refusal:
    """``status = "fail"``: the model says why it cannot, and what to do instead."""

    thought: str
    message: str


@dataclass(frozen=True)
class ProposedCode:
    """``[proposed_code]`` beside an answer: code for the user to read and run in their
    notebook (a new ``[code]`` cell marked ``proposed=true``); never run by itself."""

    code: str
    language: str = "python"


@dataclass(frozen=True)
class FinalAnswer:
    """``answer = \"\"\"markdown\"\"\"`` with no ``[tool_call]``: the reply to the user, and
    the code it proposes, if any."""

    thought: str
    answer: str
    proposed: ProposedCode | None = None


Reply = ToolCall | Refusal | FinalAnswer


class ATTPError(PercentAgentError, ValueError):
    """A reply that is not valid ATTP; ``line`` and ``column`` are 1-based in the reply text."""

    error_kind = Kind.MODEL

    def __init__(self, problem: str, *, line: int = 1, column: int = 1, reply: str = "") -> None:
        self.problem = problem
        self.line = line
        self.column = column
        self.reply = reply
        super().__init__(f"{problem} (line {line}, column {column})")

    def repair_prompt(self) -> str:
        """A message for the model: what is wrong, where, and the templates to answer with."""
        excerpt = _excerpt(self.reply, self.line, self.column)
        shown = f"\n\n```\n{excerpt}\n```" if excerpt else ""
        return (
            f"Your previous reply is not valid ATTP: {self.problem} "
            f"(line {self.line}, column {self.column}).{shown}\n\n"
            "Reply again with exactly one TOML document and nothing else, in one of these "
            "forms.\n\n"
            f"To call tools:\n```toml\n{SUCCESS_TEMPLATE}\n```\n\n"
            f"When the request cannot be done with the available tools:\n"
            f"```toml\n{FAIL_TEMPLATE}\n```\n\n"
            f"To answer the user:\n```toml\n{ANSWER_TEMPLATE}\n```\n\n"
            "Use ''' (literal) for the code so that backslashes and quotes in it need no "
            'escaping, and """ for multi-line text.'
        )


_FENCE_OPEN = re.compile(r"^[ \t]*(```|~~~)[ \t]*(?P<lang>[\w+-]*)[ \t]*$")
_TRIPLE_QUOTE = re.compile(r"\\\"|'''|\"\"\"")  # an escaped quote, or a multi-line delimiter
_TOML_START = re.compile(r"^(thought|answer)\s*=|^\[\s*tool_call\s*\]", re.MULTILINE)


def parse_reply(text: str) -> Reply:
    """Parse a model reply: :class:`ToolCall`, :class:`Refusal` or :class:`FinalAnswer`.

    Accepts a bare TOML document, a TOML document in a Markdown fence (```` ```toml ````) with
    prose around it, and a TOML document after a line of prose. Raises :class:`ATTPError` with
    line and column (in ``text``) for anything else.
    """
    if not text.strip():
        raise ATTPError("the reply is empty", reply=text)
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    doc, offset = _load(text)
    try:
        return _interpret(doc)
    except _Problem as problem:
        line = _key_line(text, offset, problem.key)
        raise ATTPError(str(problem), line=line, column=1, reply=text) from None


def format_reply(reply: Reply) -> str:
    """The TOML text of a reply, as the model is asked to write it (parses back equal)."""
    out = f"thought = {_multiline(reply.thought, literal=False)}\n"
    if isinstance(reply, FinalAnswer):
        out += f"\nanswer = {_multiline(reply.answer, literal=False)}\n"
        if reply.proposed is not None:
            out += (f"\n[proposed_code]\nlanguage = {_string(reply.proposed.language)}\n"
                    f"code = {_multiline(reply.proposed.code, literal=True)}\n")
        return out
    out += "\n[tool_call]\n"
    if isinstance(reply, Refusal):
        return out + f'status = "fail"\nmessage = {_string(reply.message)}\n'
    return (
        out
        + f'status = "success"\ntarget = {_string(reply.target)}\n'
        + f"code = {_multiline(reply.code, literal=True)}\n"
    )


class _Problem(Exception):
    """A well-formed TOML document that is not a valid reply; ``key`` locates it."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def _shown(value: Any) -> str:
    """A value of the reply as a message shows it: short, and never an error of its own
    (Python will not write an integer of more than 4300 digits, which TOML's 0x reaches)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _load(text: str) -> tuple[dict[str, Any], int]:
    """The TOML document in ``text`` and the number of lines before it."""
    first_error: tuple[ParseError, int, str] | None = None
    for candidate, offset in _candidates(text):
        try:
            return tomlkit.parse(candidate).unwrap(), offset
        except ParseError as exc:
            if first_error is None:
                first_error = (exc, offset, candidate)
    assert first_error is not None
    exc, offset, candidate_text = first_error
    if not _TOML_START.search(text):
        problem = "the reply is not a TOML document (no thought, [tool_call] or answer found)"
        raise ATTPError(problem, line=1, column=1, reply=text) from None
    # tomlkit counts columns from 0.
    line, column = exc.line, exc.col + 1
    problem = _describe_parse_error(exc)
    duplicate = re.match(r'Key "(.+)" already exists', str(exc))
    unclosed = _unclosed_string(candidate_text) if "end of file" in str(exc) else None
    if duplicate:
        line = _nth_key_line(candidate_text, duplicate.group(1), 2) or line
        column = 1
    elif unclosed:
        line, column = unclosed
        problem = "TOML syntax error: this multi-line string is never closed"
    elif "in string" in str(exc) and _char_before(candidate_text, line, column) == "\\":
        problem = (
            "TOML syntax error: invalid escape sequence in a basic string; write code in a "
            "''' literal string, where backslashes need no escaping"
        )
    raise ATTPError(problem, line=line + offset, column=column, reply=text) from None


def _unclosed_string(text: str) -> tuple[int, int] | None:
    """Where a multi-line string that never closes opens (line, column), if one does."""
    opened: tuple[str, int] | None = None
    for match in _TRIPLE_QUOTE.finditer(text):
        token = match.group()
        if token == '\\"':
            continue  # an escaped quote inside a basic string
        if opened is None:
            opened = (token, match.start())
        elif opened[0] == token:
            opened = None
    if opened is None:
        return None
    start = opened[1]
    line = text.count("\n", 0, start) + 1
    return line, start - (text.rfind("\n", 0, start) + 1) + 1


def _nth_key_line(text: str, key: str, n: int) -> int | None:
    """The line (1-based) of the ``n``-th assignment of ``key`` or opening of table ``key``."""
    pattern = re.compile(rf"^\s*(\[\[?\s*{re.escape(key)}\s*\]|{re.escape(key)}\s*=)")
    seen = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            seen += 1
            if seen == n:
                return number
    return None


def _candidates(text: str) -> list[tuple[str, int]]:
    """Places the TOML may be, most likely first: fenced blocks, the whole text, after prose."""
    lines = text.splitlines()
    fenced: list[tuple[str, int]] = []
    i = 0
    while i < len(lines):
        match = _FENCE_OPEN.match(lines[i])
        if not match:
            i += 1
            continue
        lang = match.group("lang").lower()
        closes = [j for j in range(i + 1, len(lines)) if lines[j].strip() == match.group(1)]
        first_body = "\n".join(lines[i + 1 : closes[0] if closes else len(lines)])
        if lang == "toml" or (lang == "" and _TOML_START.search(first_body)):
            # The answer may itself hold fenced code: try each closing fence, nearest first;
            # an unclosed fence runs to the end.
            ends = closes or [len(lines)]
            fenced.extend(("\n".join(lines[i + 1 : j]), i + 1) for j in ends)
            if closes:
                fenced.append(("\n".join(lines[i + 1 :]), i + 1))
            break
        if not closes:
            break
        i = closes[0] + 1  # skip a block of other code
    whole = [(text, 0)]
    start_match = _TOML_START.search(text)
    after_prose = []
    if start_match and start_match.start() > 0:
        offset = text.count("\n", 0, start_match.start())
        after_prose.append((text[start_match.start() :], offset))
    if fenced:
        return [*fenced, *whole, *after_prose]
    return [*whole, *after_prose]


def _describe_parse_error(exc: ParseError) -> str:
    message = str(exc)
    # tomlkit appends " at line L col C"; the caller reports the position separately.
    message = re.sub(r"\s+at line \d+ col \d+$", "", message)
    if message.startswith("Unexpected end of file"):
        message += " (a string, array or table left open?)"
    return f"TOML syntax error: {message}"


def _interpret(doc: dict[str, Any]) -> Reply:
    thought = _text(doc, "thought", required=False)
    call = doc.get("tool_call")
    if isinstance(call, list):
        if len(call) != 1:
            raise _Problem("write one [tool_call] per reply, not several", "tool_call")
        call = call[0]
    if call is None and "answer" not in doc and ("code" in doc or "status" in doc):
        call = doc  # the [tool_call] header was left out; the keys say what was meant
    if call is not None:
        if not isinstance(call, dict):
            raise _Problem(
                "tool_call must be a table: write [tool_call] on its own line", "tool_call"
            )
        if "answer" in doc:
            raise _Problem("a reply has either a [tool_call] or an answer, not both", "answer")
        return _tool_call(thought, call)
    if "answer" in doc:
        return FinalAnswer(thought=thought, answer=_text(doc, "answer"),
                           proposed=_proposed(doc.get("proposed_code")))
    raise _Problem("the reply has neither a [tool_call] table nor an answer")


def _proposed(table: Any) -> ProposedCode | None:
    """The ``[proposed_code]`` table of an answer (``code``, ``language`` default python)."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise _Problem("proposed_code must be a table: write [proposed_code] on its own line",
                       "proposed_code")
    code = table.get("code")
    if not isinstance(code, str) or not code.strip():
        raise _Problem("[proposed_code] needs the code, as a string", "proposed_code")
    language = table.get("language", "python")
    if not isinstance(language, str) or not re.fullmatch(r"[A-Za-z][\w+#.-]{0,31}", language):
        raise _Problem(f"language must be a language name, not {_shown(language)}", "language")
    return ProposedCode(code=_clean_code(code), language=language.lower())


def _tool_call(thought: str, call: dict[str, Any]) -> ToolCall | Refusal:
    status = call.get("status")
    if status is None:
        if "code" in call and "message" not in call:
            status = "success"
        elif "message" in call and "code" not in call:
            status = "fail"
        else:
            raise _Problem('[tool_call] needs status = "success" or status = "fail"', "tool_call")
    if not isinstance(status, str) or status.strip().lower() not in ("success", "fail"):
        raise _Problem(f'status must be "success" or "fail", not {_shown(status)}', "status")
    if status.strip().lower() == "fail":
        return Refusal(thought=thought, message=_text(call, "message", where="tool_call"))
    code = call.get("code")
    if code is None:
        raise _Problem("code is missing", "tool_call")
    if not isinstance(code, str):
        raise _Problem(f"code must be a string, not {type(code).__name__}", "code")
    if not code.strip():
        raise _Problem("code is empty", "code")
    return ToolCall(
        thought=thought, target=_text(call, "target", required=False), code=_clean_code(code)
    )


def _text(
    table: dict[str, Any], key: str, *, required: bool = True, where: str | None = None
) -> str:
    """A string field, stripped; ``where`` locates the error when the field is missing."""
    value = table.get(key)
    if value is None:
        if required:
            raise _Problem(f"{key} is missing", where)
        return ""
    if not isinstance(value, str):
        raise _Problem(f"{key} must be a string, not {type(value).__name__}", key)
    return value.strip()


def _clean_code(code: str) -> str:
    return textwrap.dedent(code).strip("\n") + "\n"


def _key_line(text: str, offset: int, key: str | None) -> int:
    """The line (1-based, in ``text``) where ``key`` is set or opened, else the document's first."""
    if key is None:
        return offset + 1
    pattern = re.compile(rf"^\s*(\[\[?\s*{re.escape(key)}\s*\]|{re.escape(key)}\s*=)")
    for number, line in enumerate(text.splitlines()[offset:], start=offset + 1):
        if pattern.match(line):
            return number
    return offset + 1


def _excerpt(text: str, line: int, column: int, context: int = 2) -> str:
    """The lines around ``line`` with a caret under ``column``."""
    lines = text.splitlines()
    if not lines or not 1 <= line <= len(lines):
        return ""
    first = max(1, line - context)
    out = []
    for number in range(first, min(len(lines), line + context) + 1):
        out.append(f"{number:>4} | {lines[number - 1]}")
        if number == line:
            out.append("     | " + " " * max(0, column - 1) + "^")
    return "\n".join(out)


def _string(value: str) -> str:
    return tomlkit.string(value).as_string()


def _multiline(value: str, *, literal: bool) -> str:
    """A multi-line string: literal ''' when the text allows it, else escaped basic \"\"\"."""
    body = value if value.endswith("\n") else value + "\n"
    # a carriage return is no TOML newline on its own, and parsers may turn CRLF into LF
    plain = all(c in "\t\n" or 0x20 <= ord(c) != 0x7F for c in body)
    if literal and plain and "'''" not in body:
        return f"'''\n{body}'''"
    escaped = body.replace("\\", "\\\\").replace('"""', '""\\"')
    escaped = "".join(
        c if c in "\n\t" or (ord(c) >= 0x20 and ord(c) != 0x7F) else f"\\u{ord(c):04x}"
        for c in escaped
    )
    return f'"""\n{escaped}"""'


def _char_before(text: str, line: int, column: int) -> str:
    lines = text.splitlines()
    if not 1 <= line <= len(lines) or column < 2:
        return ""
    return lines[line - 1][column - 2 : column - 1]
