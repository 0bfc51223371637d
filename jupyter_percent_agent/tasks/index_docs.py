"""What the index knows of one task document, read from a SOP folder.

The index works over :class:`IndexedDoc`, a small record that :func:`parse_doc` makes of one
Markdown file of a SOP folder (YAML front matter between ``---`` lines, ``## `` sections in
the body); :func:`doc_paths` says which files are documents. These two are the one place the
index reads documents: when the task document model is available, ``parse_doc`` can build
the record from it instead.

A document that cannot be read (no front matter, YAML that does not parse or uses anchors,
a ``task_id`` that is not its path) is a :class:`DocProblem`, never a reason to skip the rest.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TASK_TYPES = ("plan", "execute", "validate", "error_handler")


@dataclass(frozen=True)
class IndexedDoc:
    """One task document as the index sees it."""

    task_id: str
    path: str  # relative to the folder, with ``/``
    task_type: str
    description: str
    sections: dict[str, str] = field(default_factory=dict)
    tool_ids: tuple[str, ...] = ()
    routes: tuple[str, ...] = ()  # task_ids it refers to: plan steps, then error routes
    text_hash: str = ""


@dataclass(frozen=True)
class DocProblem:
    """A document left out of the index, and why (``line`` is 1-based, 0 when unknown)."""

    path: str
    message: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else (
            f"{self.path}: {self.message}")


class DocError(ValueError):
    """A document that cannot be indexed; ``line`` is 1-based, 0 when unknown."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


_loader: Any = None


def _no_alias_loader() -> Any:
    """``yaml.SafeLoader`` that refuses anchors and aliases (billion laughs, shared nodes).
    Made on first use: an index that finds nothing changed never imports yaml."""
    global _loader
    if _loader is None:
        import yaml

        class NoAliasLoader(yaml.SafeLoader):
            def compose_node(self, parent: Any, index: Any) -> Any:
                event = self.peek_event()
                if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                    raise yaml.MarkedYAMLError(problem="anchors and aliases are not allowed",
                                               problem_mark=event.start_mark)
                return super().compose_node(parent, index)

        _loader = NoAliasLoader
    return _loader


def load_yaml(text: str) -> Any:
    """Parse YAML safely, refusing anchors and aliases; :class:`DocError` says where."""
    import yaml

    try:
        return yaml.load(text, Loader=_no_alias_loader())  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise DocError(f"YAML: {problem}", mark.line + 1 if mark else 0) from None


def content_hash(data: bytes) -> str:
    """The hash that decides whether a document changed."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def split_front_matter(text: str) -> tuple[str, str, int]:
    """``(yaml, body, body_line)`` of a document; :class:`DocError` without front matter."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise DocError("no YAML front matter (the file must start with a '---' line)", 1)
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1:]), i + 2
    raise DocError("front matter is not closed by a '---' line", 1)


def field_line(front: str, key: str) -> int:
    """The file line of a top-level front matter field (2 if it is not found)."""
    for i, line in enumerate(front.split("\n")):
        if line.startswith(f"{key}:") or line.startswith(f'"{key}":'):
            return i + 2
    return 2


def split_sections(body: str) -> dict[str, str]:
    """``## NAME`` sections of a body (text before the first heading under ``""``)."""
    sections: dict[str, list[str]] = {}
    name = ""
    for line in body.split("\n"):
        if line.startswith("## "):
            name = line[3:].strip()
            sections.setdefault(name, [])
        else:
            sections.setdefault(name, []).append(line)
    out = {k: "\n".join(v).strip() for k, v in sections.items()}
    return {k: v for k, v in out.items() if v or k}


def _routes(meta: dict[str, Any]) -> tuple[str, ...]:
    routes: list[str] = []
    for step in meta.get("plan_steps") or []:
        if isinstance(step, dict) and isinstance(step.get("task_id"), str):
            routes.append(step["task_id"])
    handling = meta.get("error_handling")
    on_failure = handling.get("on_failure") if isinstance(handling, dict) else None
    routing = on_failure.get("error_routing") if isinstance(on_failure, dict) else None
    if isinstance(routing, dict):
        routes.extend(v for v in routing.values() if isinstance(v, str))
    return tuple(dict.fromkeys(routes))


def parse_doc(data: bytes, rel_path: str) -> IndexedDoc:
    """The record of one document from its bytes; :class:`DocError` if it cannot be indexed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocError(f"not UTF-8 (byte {exc.start})") from None
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    front, body, _ = split_front_matter(text)
    try:
        meta = load_yaml(front)
    except DocError as exc:  # its line counts from the front matter's first line
        raise DocError(str(exc), exc.line + 1 if exc.line else 0) from None
    if not isinstance(meta, dict):
        raise DocError("front matter is not a mapping of fields", 2)
    expected = rel_path.removesuffix(".md")
    task_id = meta.get("task_id")
    if task_id is None:
        raise DocError(f"no task_id (it should be {expected!r})", 2)
    if task_id != expected:
        raise DocError(f"task_id {task_id!r} is not the file's path ({expected!r})",
                       field_line(front, "task_id"))
    task_type = meta.get("task_type")
    if task_type not in TASK_TYPES:
        raise DocError(f"task_type {task_type!r} is not one of {', '.join(TASK_TYPES)}",
                       field_line(front, "task_type"))
    description = meta.get("description") or ""
    if not isinstance(description, str):
        raise DocError("description is not text", field_line(front, "description"))
    tool = meta.get("tool")
    tool_ids = (str(tool["tool_id"]),) if isinstance(tool, dict) and tool.get("tool_id") else ()
    return IndexedDoc(
        task_id=expected,
        path=rel_path,
        task_type=task_type,
        description=unicodedata.normalize("NFC", description.strip()),
        sections=split_sections(unicodedata.normalize("NFC", body)),
        tool_ids=tool_ids,
        routes=_routes(meta),
        text_hash=content_hash(data),
    )


def doc_paths(folder: Path) -> Iterator[str]:
    """Relative paths (``/``-separated, sorted) of the documents of a folder: ``*.md`` files,
    not ``_*`` files, not message files (``*.msg.md``), not under hidden or ``_`` folders."""
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        rel_root = Path(root).relative_to(folder)
        for name in files:
            if (name.endswith(".md") and not name.endswith(".msg.md")
                    and not name.startswith(("_", "."))):
                found.append((rel_root / name).as_posix())
    yield from sorted(found)


def read_folder(folder: Path) -> tuple[list[IndexedDoc], list[DocProblem]]:
    """Every document of a SOP folder: ``(docs, problems)``."""
    docs: list[IndexedDoc] = []
    problems: list[DocProblem] = []
    for rel in doc_paths(folder):
        try:
            docs.append(parse_doc((folder / rel).read_bytes(), rel))
        except OSError as exc:
            problems.append(DocProblem(rel, f"cannot read: {exc.strerror or exc}"))
        except DocError as exc:
            problems.append(DocProblem(rel, str(exc), exc.line))
    return docs, problems
