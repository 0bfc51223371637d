"""YAML for task documents: ``safe_load`` with anchors and aliases refused, and where each key is.

The one place task documents turn YAML into data (TRUST.md: "safe_load with anchors and aliases
refused"), so it can be switched to the format core's loader in one place. A document is
composed once: the data comes back with the line of every key, so a problem can name its line.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

Key = tuple[Hashable, ...]
"""Where a value is: the keys and list indices from the top, e.g. ``("tool", "parameters", 0)``."""


class YamlError(ValueError):
    """YAML that does not parse, or that uses an anchor or an alias. ``line`` is 1-based."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class _Loader(yaml.SafeLoader):
    """A safe loader that refuses anchors and aliases (a "billion laughs" needs them)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise YamlError("anchors and aliases (&name, *name) are not allowed",
                            event.start_mark.line + 1)
        return super().compose_node(parent, index)


def load_yaml(text: str) -> Any:
    """The data of ``text`` (``yaml.safe_load``), refusing anchors and aliases."""
    return load_with_lines(text)[0]


def load_with_lines(text: str) -> tuple[Any, dict[Key, int]]:
    """The data of ``text`` and the 1-based line of every mapping key and list item in it.

    Raises :class:`YamlError` naming the line for YAML that does not parse, an anchor or
    alias, or a key given twice in one mapping (YAML keeps the last silently).
    """
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines: dict[Key, int] = {}
        _walk(node, (), lines)
        return loader.construct_document(node), lines
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(f"YAML does not parse: {problem}",
                        mark.line + 1 if mark is not None else None) from None
    finally:
        loader.dispose()


def _walk(node: yaml.Node, where: Key, lines: dict[Key, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else repr(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise YamlError(f"key {key!r} is given twice", line)
            seen[key] = line
            lines[(*where, key)] = line
            _walk(value_node, (*where, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[(*where, i)] = item.start_mark.line + 1
            _walk(item, (*where, i), lines)
