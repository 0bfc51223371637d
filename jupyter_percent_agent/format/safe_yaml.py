"""The one place the project reads YAML: safe loading, with what safe loading still allows refused.

``yaml.safe_load`` builds no objects of arbitrary classes, but it still honours anchors and
aliases (``&a`` / ``*a``): nine lines can name 10^9 strings, and whatever walks the result
(JSON for JupyterLab, the writer, a copy) runs out of memory. A file's YAML is untrusted
(docs/format.md, TRUST), so :func:`load_yaml` refuses any anchor or alias, nesting deeper than
:data:`MAX_DEPTH`, and texts longer than :data:`MAX_CHARS`, each with a one-line
:class:`FormatError` naming the line. Everything else is PyYAML's safe loading (libyaml's
parser when it is there).

PyYAML is imported on the first call only.
"""

from __future__ import annotations

from typing import Any, Final

from .errors import FormatError

__all__ = ["MAX_CHARS", "MAX_DEPTH", "load_yaml", "load_yaml_with_lines"]

#: Longest YAML text read (characters); a front matter or an agent definition is a few KB.
MAX_CHARS: Final = 1 << 20
#: Deepest nesting of sequences and mappings read.
MAX_DEPTH: Final = 64

_LOADER: Any = None
_WHY_ALIASES: Final = " (anchors and aliases are refused: write the value out)"


class _Refused(Exception):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def _loader_class() -> Any:
    """A safe loader that composes in Python (to see every node) over libyaml's parser."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml
    from yaml.composer import Composer
    from yaml.events import AliasEvent

    base = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

    class Loader(Composer, base):  # type: ignore[misc, valid-type]
        # Composer first: libyaml's CParser composes in C, where no node can be refused.
        def __init__(self, stream: str) -> None:
            base.__init__(self, stream)
            Composer.__init__(self)
            self.depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            line = event.start_mark.line
            if isinstance(event, AliasEvent):
                raise _Refused(f"uses the YAML alias *{event.anchor}{_WHY_ALIASES}", line)
            if event.anchor is not None:
                raise _Refused(f"defines the YAML anchor &{event.anchor}{_WHY_ALIASES}", line)
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _Refused(f"nests deeper than {MAX_DEPTH} levels", line)
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                value = super().construct_object(node, deep)
                if type(value) is int and value.bit_length() > 14_000:
                    str(value)  # 0x/0o/0b reach any size; past Python's digit limit: ValueError
                return value
            except (ValueError, TypeError, OverflowError) as err:
                # SafeConstructor's own limits: date(2024, 13, 45), int("9" * 5000), ...
                reason = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise _Refused(f"is not valid YAML: {reason}", node.start_mark.line) from None

    _LOADER = Loader
    return Loader


def load_yaml(text: str, *, line: int = 1, what: str = "the text",
              path: str | None = None) -> Any:
    """The value of YAML ``text``, safely; :class:`FormatError` for anything refused.

    ``line`` is the line number of the text's first line in its file, so that errors name the
    file's line; ``what`` names the text in messages ("the front matter"). Refused, each with
    a one-line message: YAML that does not parse, any anchor or alias, nesting deeper than
    ``MAX_DEPTH``, more than ``MAX_CHARS`` characters, a value PyYAML cannot build (an
    impossible date, an integer of more digits than Python converts).
    """
    return _load(text, line, what, path, lines=None)


def load_yaml_with_lines(text: str, *, line: int = 1, what: str = "the text",
                         path: str | None = None) -> tuple[Any, dict[tuple[Any, ...], int]]:
    """:func:`load_yaml`, and the line of every mapping key and list item in the value, by
    where it is (``("tool", "parameters", 0)``), so that a checker can name a field's line.
    A key given twice in one mapping (YAML keeps the last, silently) is refused too."""
    lines: dict[tuple[Any, ...], int] = {}
    return _load(text, line, what, path, lines=lines), lines


def _load(text: str, line: int, what: str, path: str | None,
          lines: dict[tuple[Any, ...], int] | None) -> Any:
    if len(text) > MAX_CHARS:
        raise FormatError(f"{what} is {len(text):,} characters long; YAML of more than "
                          f"{MAX_CHARS:,} characters is not read", line=line, path=path)
    import yaml

    loader = _loader_class()(text)
    try:
        if lines is None:
            return loader.get_single_data()
        node = loader.get_single_node()
        if node is None:
            return None
        _walk(node, (), lines, line)
        return loader.construct_document(node)
    except _Refused as err:
        raise FormatError(f"{what} {err.message}", line=line + err.line, path=path) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        deep = _too_deep_at(text)
        if deep is not None:  # libyaml stopped it first, in words of its own
            raise FormatError(f"{what} nests deeper than {MAX_DEPTH} levels",
                              line=line + deep, path=path) from None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        # libyaml puts an error at the end of a text with no final newline one line past it
        at = min(mark.line, text.count("\n")) if mark else 0
        raise FormatError(f"{what} is not valid YAML: {problem}", line=line + at,
                          path=path) from None
    finally:
        loader.dispose()


def _too_deep_at(text: str) -> int | None:
    """The line (from 0) where a flow collection of ``text`` opens its level
    ``MAX_DEPTH + 1``, or None.

    libyaml scans a whole flow collection (``[[[...]]]``) before the composer sees its first
    node, and newer releases stop a deep one with a message of their own; this finds the
    depth the composer never got to count, so that the refusal is ours whatever PyYAML and
    libyaml say. Only a document that already failed to parse is scanned."""
    depth = 0
    line = 0
    quote = ""
    prev = "\n"  # the last character that is not a space outside quotes
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                if quote == "'" and text.startswith("''", i):
                    i += 1
                else:
                    quote = ""
            i += 1
            continue
        if c in "\"'" and (depth or prev in "\n:-,?[{"):
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n"):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c in "[{" and (depth or prev in "\n:-,?"):
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif c in "]}" and depth:
            depth -= 1
        if c not in " \t":
            prev = c
        i += 1
    return None


def _walk(node: Any, where: tuple[Any, ...], lines: dict[tuple[Any, ...], int],
          first: int) -> None:
    from yaml import MappingNode, ScalarNode, SequenceNode

    if isinstance(node, MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else repr(key_node)
            if key in seen:
                raise _Refused(f"gives the key {key!r} twice", key_node.start_mark.line)
            seen.add(key)
            lines[(*where, key)] = first + key_node.start_mark.line
            _walk(value_node, (*where, key), lines, first)
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*where, i)] = first + item.start_mark.line
            _walk(item, (*where, i), lines, first)
