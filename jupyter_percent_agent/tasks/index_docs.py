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

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.errors import Kind, PercentAgentError


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


class DocError(PercentAgentError, ValueError):
    """A document that cannot be indexed; ``line`` is 1-based, 0 when unknown."""

    error_kind = Kind.BAD_FILE

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line








def content_hash(data: bytes) -> str:
    """The hash that decides whether a document changed."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()










def parse_doc(data: bytes, rel_path: str) -> IndexedDoc:
    """The record of one document from its bytes, read by the task document model
    (``tasks.documents``); :class:`DocError` if it cannot be indexed: no front matter, YAML
    the format core refuses, a ``task_id`` that is not its path, an unknown ``task_type``."""
    from jupyter_percent_agent.tasks.documents import TASK_TYPES, parse_document

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocError(f"not UTF-8 (byte {exc.start})") from None
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    doc, problems = parse_document(text, rel_path)
    fatal = [p for p in problems if p.field in ("front matter", "task_id", "task_type")]
    if doc is None or fatal or doc.task_type not in TASK_TYPES:
        first = (fatal or problems or [None])[0]
        raise DocError(f"{first.field}: {first.message}" if first else "not a task document",
                       (first.line or 0) if first else 0)
    routes = [*doc.plan_steps, *doc.on_failure.routes.values()]
    return IndexedDoc(
        task_id=doc.task_id,
        path=rel_path,
        task_type=doc.task_type,
        description=unicodedata.normalize("NFC", doc.description.strip()),
        sections={unicodedata.normalize("NFC", k): unicodedata.normalize("NFC", v)
                  for k, v in doc.sections.items()},
        tool_ids=(doc.tool_id,) if doc.tool_id else (),
        routes=tuple(dict.fromkeys(routes)),
        text_hash=content_hash(data),
    )


def doc_paths(folder: Path) -> Iterator[str]:
    """Relative paths (``/``-separated, sorted) of the documents of a folder, by the task
    document model's one rule (``documents.document_files``)."""
    from jupyter_percent_agent.tasks.documents import document_files

    yield from sorted(p.relative_to(folder).as_posix() for p in document_files(folder))


def read_folder(folder: Path) -> tuple[list[IndexedDoc], list[DocProblem]]:
    """Every document of a SOP folder: ``(docs, problems)``."""
    docs: list[IndexedDoc] = []
    problems: list[DocProblem] = []
    real = os.path.realpath(folder)  # each document is read as lying there, no link followed
    for rel in doc_paths(Path(real)):
        try:  # as a message file is read: no link out of the folder, no FIFO or device
            docs.append(parse_doc(fmt.read_bytes(os.path.join(real, rel), inside=real), rel))
        except OSError as exc:
            problems.append(DocProblem(rel, f"cannot read: {exc.strerror or exc}"))
        except fmt.FormatError as exc:
            problems.append(DocProblem(rel, f"cannot read: {exc}"))
        except DocError as exc:
            problems.append(DocProblem(rel, str(exc), exc.line))
    return docs, problems
