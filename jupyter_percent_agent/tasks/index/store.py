"""The SOP index's file and how it is kept up to date: the schema (sealed, through
``trust.sealed_sqlite``), what is indexed of a document, rows checked in shape as they are
read, and :class:`Index` (opening, rebuilding, updating by content hash, embedding)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.ranking.embed import Embedder, EmbeddingError, shared_embedder
from jupyter_percent_agent.ranking.fusion import LEXICAL_WEIGHT
from jupyter_percent_agent.ranking.text import TERMS_TABLE, columns
from jupyter_percent_agent.tasks.index.rows import text_value
from jupyter_percent_agent.tasks.index.search import IndexSearch
from jupyter_percent_agent.tasks.index_docs import (
    DocError,
    DocProblem,
    IndexedDoc,
    content_hash,
    doc_paths,
    parse_doc,
)
from jupyter_percent_agent.trust.sealed_sqlite import UNSEALED, SealedSchema, is_damage

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

INDEX_NAME = ".sop-index.sqlite"
APPLICATION_ID = 0x54434549  # "TCEI", in the SQLite header: this program's index
SCHEMA_VERSION = 2
SEAL_PURPOSE = "sop-index"  # the user's key is derived for this one use
RACY_SECONDS = 2.0  # a file modified this recently may change again within its mtime tick

_SCHEMA = """
CREATE TABLE files(
    path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    text_hash TEXT NOT NULL, problem TEXT, line INTEGER NOT NULL DEFAULT 0);
CREATE TABLE docs(
    id INTEGER PRIMARY KEY, task_id TEXT NOT NULL UNIQUE, path TEXT NOT NULL UNIQUE,
    task_type TEXT NOT NULL, description TEXT NOT NULL, tool_ids TEXT NOT NULL,
    routes TEXT NOT NULL, text_hash TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE vectors(
    doc INTEGER NOT NULL, model TEXT NOT NULL, text_hash TEXT NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY(doc, model));
"""


class IndexWarning(UserWarning):
    """Something the index worked around: a failed embedding model, a rebuilt file."""


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()  # "the embedder the environment configures"


@dataclass
class UpdateReport:
    """What :meth:`Index.update` did."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    embedded: int = 0

    @property
    def touched(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.embedded)


# -- what is indexed of a document -------------------------------------------------------

def id_words(task_id: str) -> str:
    """``blog/generate_outline`` as words: ``blog generate outline``."""
    return " ".join(task_id.replace("/", " ").replace("_", " ").replace("-", " ").split())


def section_text(doc: IndexedDoc) -> str:
    """The body as one text: each section's name (``parameters.`` dropped) and its text."""
    parts = []
    for name, text in doc.sections.items():
        label = name.removeprefix("parameters.")
        parts.append(f"{label}: {text}" if label else text)
    return "\n".join(parts)


def embed_text(doc: IndexedDoc) -> str:
    """The text whose embedding stands for the document."""
    return f"{id_words(doc.task_id)}. {doc.description}\n{section_text(doc)}"


def lexical_columns(doc: IndexedDoc) -> tuple[str, str, str]:
    """The FTS5 columns ``head`` (id, description), ``body`` (sections), ``chars``."""
    return columns(f"{id_words(doc.task_id)} {doc.description}", section_text(doc))


# -- the SQLite file ------------------------------------------------------------------------

SEALED = SealedSchema((_SCHEMA, TERMS_TABLE), application_id=APPLICATION_ID,
                      version=SCHEMA_VERSION, purpose=SEAL_PURPOSE,
                      probes=("SELECT count(*) FROM terms",), what="an index")
seal = SEALED.seal
why_untrusted = SEALED.why_untrusted


# -- the index ------------------------------------------------------------------------------

class Index(IndexSearch):
    """The index of one SOP folder; use :meth:`open`. One thread at a time. Keeping it up
    to date is here; answering from it, :class:`.search.IndexSearch`."""

    def __init__(self, folder: Path, conn: sqlite3.Connection, path: Path | None,
                 embedder: Embedder | None, key: bytes | None = None) -> None:
        self.folder = folder
        # where the documents really are: each is read as lying there, following no link
        self.real_folder = os.path.realpath(folder)
        self._key = key  # None: kept in memory, nothing to seal
        self.path = path  # None: kept in memory (the folder is not writable)
        self.embedder = embedder
        self.problems: list[DocProblem] = []
        self.warnings: list[str] = []
        self._conn = conn
        self._matrix: np.ndarray | None = None
        self._matrix_ids: list[str] = []
        self._types: dict[str, str] | None = None
        self._embedder_failed = embedder is None
        self._version = self._data_version()
        self.lexical_weight = LEXICAL_WEIGHT

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, folder: str | os.PathLike[str], *, embedder: Embedder | None = DEFAULT,
             update: bool = True) -> Index:
        """Open (creating or rebuilding as needed) the index of ``folder``, brought up to
        date unless ``update`` is false. ``embedder``: by default the one the environment
        configures (:func:`.embed.shared_embedder`); ``None`` ranks by terms only."""
        folder = Path(folder)
        if not folder.is_dir():
            raise NotADirectoryError(f"{folder}: not a folder")
        if embedder is DEFAULT:
            embedder = shared_embedder()
        path = folder / INDEX_NAME
        try:
            key: bytes | None = SEALED.key()
        except OSError as exc:  # TrustError too: a key others could know proves nothing
            key, no_key = None, str(exc)
        conn, rebuilt = SEALED.open_file(path, key) if key is not None else (None, "")
        if conn is None:
            conn = SEALED.in_memory()
            index = cls(folder, conn, None, embedder)
            why = "folder not writable" if key is not None else f"no key to seal it ({no_key})"
            index._warn(f"{folder}: {why}, the index is kept in memory only")
        else:
            index = cls(folder, conn, path, embedder, key)
        if rebuilt:
            index._warn(f"{path}: {rebuilt}; rebuilt")
        if update:
            index.update()
        return index

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        warnings.warn(message, IndexWarning, stacklevel=3)

    # -- updating --------------------------------------------------------------------------

    def update(self) -> UpdateReport:
        """Bring the index up to date with the folder; returns what changed.

        Documents are parsed again only when their content hash changed, embedded again only
        when they changed or have no vector of the current model. Problems (documents left
        out) are in :attr:`problems` afterwards.
        """
        return self._retry(self._update, refill=False)

    def _reopen(self, reason: str, *, distrust: bool = False, memory: bool = False) -> bool:
        """After a damage error: use the file now in place if it is sound (another process
        may have rebuilt it), else (or with ``distrust``) rebuild it, or (with ``memory``)
        keep the index in memory; whether it was rebuilt (then it is empty)."""
        self._conn.close()
        conn, rebuilt = (None, "") if self.path is None or self._key is None or memory else (
            SEALED.open_file(self.path, self._key, distrust=distrust))
        if conn is None:
            conn = SEALED.in_memory()
            self.path = self._key = None
            rebuilt = rebuilt or reason
        self._conn = conn
        self._version = self._data_version()
        self._matrix = None
        self._types = None
        if rebuilt:
            self._warn(f"{self.folder / INDEX_NAME}: {reason}; rebuilt")
        return bool(rebuilt)

    def _retry(self, action: Callable[[], T], *, refill: bool = True) -> T:
        """``action()`` on rows this user sealed, once more on a sound file if the index
        turned out damaged, a third time on a rebuilt one, and a last time in memory (the
        file keeps being spoiled). With ``refill`` (a read), an index rebuilt (so empty) is
        filled from the documents before ``action`` answers."""
        run = (lambda: self._verified(action)) if refill else action
        empty = False
        for attempt in range(4):
            try:
                if empty:
                    self._update()
                    empty = False
                return run()
            except sqlite3.DatabaseError as exc:
                if not is_damage(exc) or attempt == 3:
                    raise
                rebuilt = self._reopen(f"unusable ({exc})", distrust=attempt == 1,
                                       memory=attempt == 2)
                empty = refill and (empty or rebuilt)
        raise AssertionError("unreachable")

    def _verified(self, action: Callable[[], T]) -> T:
        """``action()`` (a read) on rows sealed by this user: if another connection wrote
        the file since its seal was last checked, the seal is checked again first, and a
        write that lands while ``action`` reads makes it read again."""
        for _ in range(3):
            self._check_seal()
            result = action()
            if self._data_version() == self._version:
                return result
        # the file keeps changing: read once holding it still (writers wait)
        self._conn.execute("BEGIN")
        try:
            self._conn.execute("SELECT count(*) FROM seal").fetchone()  # take the snapshot
            self._check_seal()
            return action()
        finally:
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _seal(self) -> None:
        """Seal the file after a write (inside its transaction)."""
        if self._key is not None:
            SEALED.seal(self._conn, self._key)

    def _check_seal(self) -> None:
        """Check the seal again if another connection wrote the file since we last did (a
        damage error if it no longer checks: then the file is rebuilt); inside a write
        transaction, this proves the rows about to be sealed are all this user's."""
        version = self._data_version()
        if version != self._version and self._key is not None:
            if not SEALED.is_sealed(self._conn, self._key):
                raise sqlite3.DatabaseError(UNSEALED)
            self._version = version
            self._matrix = None  # another process of this user's changed the rows
            self._types = None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write transaction, sealed at its end, on a file no one else changed unsealed
        since we last checked it (checked under the write lock: nothing can slip in
        between the check and the seal, however long the caller took before)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._check_seal()
            yield
            self._seal()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _changes(self, current: dict[str, tuple[int, int]]
                 ) -> tuple[dict[str, tuple[Any, ...]], list[str], list[str]]:
        """``(seen, gone, stale)``: the indexed files, those gone, those whose stat changed."""
        seen = {row[0]: row[1:] for row in self._conn.execute(
            "SELECT path, mtime_ns, size, text_hash FROM files")}
        gone = [p for p in seen if p not in current]
        stale = [p for p, stat in current.items()
                 if p not in seen or seen[p][0] != stat[0] or seen[p][1] != stat[1]]
        return seen, gone, stale

    def _update(self) -> UpdateReport:
        report = UpdateReport()
        self._check_seal()
        conn = self._conn
        now = time.time_ns()
        current: dict[str, tuple[int, int]] = {}
        for rel in doc_paths(self.folder):
            try:
                st = (self.folder / rel).stat()
            except OSError:
                continue
            current[rel] = (st.st_mtime_ns, st.st_size)
        _, gone, stale = self._changes(current)
        if gone or stale:
            with self._writing():
                # again under the lock: another process may have done part of the work
                seen, gone, stale = self._changes(current)
                for rel in gone:
                    self._drop(rel, report.removed)
                for rel in stale:
                    self._refresh(rel, current[rel], seen.get(rel), now, report)
        self.problems = [DocProblem(p, msg, line) for p, msg, line in conn.execute(
            "SELECT path, problem, line FROM files WHERE problem IS NOT NULL ORDER BY path")]
        report.embedded = self._embed_missing()
        if report.touched:
            self._matrix = None
            self._types = None
        return report

    def _drop(self, rel: str, removed: list[str] | None) -> None:
        conn = self._conn
        row = conn.execute("SELECT id, task_id FROM docs WHERE path = ?", (rel,)).fetchone()
        if row is not None:
            conn.execute("DELETE FROM vectors WHERE doc = ?", (row[0],))
            conn.execute("DELETE FROM terms WHERE rowid = ?", (row[0],))
            conn.execute("DELETE FROM docs WHERE id = ?", (row[0],))
            if removed is not None:
                removed.append(row[1])
        conn.execute("DELETE FROM files WHERE path = ?", (rel,))

    def _refresh(self, rel: str, stat: tuple[int, int], before: tuple[Any, ...] | None,
                 now: int, report: UpdateReport) -> None:
        conn = self._conn
        try:  # as a message file is read: no link out of the folder, no FIFO or device
            data = fmt.read_bytes(os.path.join(self.real_folder, rel), inside=self.real_folder)
        except (OSError, fmt.FormatError) as exc:
            self._drop(rel, report.removed)
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            conn.execute("INSERT INTO files VALUES (?, 0, -1, '', ?, 0)",
                         (rel, f"cannot read: {why}"))
            return
        digest = content_hash(data)
        # a file modified within RACY_SECONDS may change again with the same mtime and size
        mtime = 0 if now - stat[0] < RACY_SECONDS * 1e9 else stat[0]
        if before is not None and before[2] == digest:
            conn.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?",
                         (mtime, stat[1], rel))
            return
        had_doc = conn.execute("SELECT 1 FROM docs WHERE path = ?", (rel,)).fetchone()
        self._drop(rel, None)
        try:
            doc = parse_doc(data, rel)
        except DocError as exc:
            conn.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
                         (rel, mtime, stat[1], digest, str(exc), exc.line))
            if had_doc:
                report.removed.append(rel.removesuffix(".md"))
            return
        conn.execute("INSERT INTO files VALUES (?, ?, ?, ?, NULL, 0)",
                     (rel, mtime, stat[1], digest))
        cur = conn.execute(
            "INSERT INTO docs(task_id, path, task_type, description, tool_ids, routes,"
            " text_hash, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (doc.task_id, doc.path, doc.task_type, doc.description,
             json.dumps(list(doc.tool_ids), ensure_ascii=False),
             json.dumps(list(doc.routes), ensure_ascii=False), doc.text_hash, embed_text(doc)))
        conn.execute("INSERT INTO terms(rowid, head, body, chars) VALUES (?, ?, ?, ?)",
                     (cur.lastrowid, *lexical_columns(doc)))
        (report.changed if had_doc else report.added).append(doc.task_id)

    def _embed_missing(self, batch: int = 256) -> int:
        """Embed the documents that have no vector of the current model; the count."""
        if self._embedder_failed or self.embedder is None:
            return 0
        model = self.embedder.model_id
        todo = self._conn.execute(
            "SELECT d.id, d.text_hash, d.text FROM docs d LEFT JOIN vectors v"
            " ON v.doc = d.id AND v.model = ? WHERE v.doc IS NULL ORDER BY d.id",
            (model,)).fetchall()
        done = 0
        for start in range(0, len(todo), batch):
            chunk = todo[start:start + batch]
            vectors = self._embed([text_value(text, "text") for _, _, text in chunk])
            if vectors is None:
                break
            # the model may take seconds: the file is checked again under the write lock
            with self._writing():
                self._conn.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                    [(doc, model, digest, vectors[i].tobytes())
                     for i, (doc, digest, _) in enumerate(chunk)])
            done += len(chunk)
        return done

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors of ``texts``, or ``None`` (said once) when the model fails."""
        if self._embedder_failed or self.embedder is None:
            return None
        try:
            return self.embedder.embed(texts)
        except EmbeddingError as exc:
            self._embedder_failed = True
            self._warn(f"embedding model failed, ranking by terms only: {exc}")
            return None
