"""The index of a SOP folder: exact (by task_id, tool, route) and semantic (by meaning).

One SQLite file in the folder (:data:`INDEX_NAME`) holds every document's record (task_id,
path, type, tool ids, routes, content hash), its lexical terms in an FTS5 table, and its
embedding under the embedding model's id (vectors of different models are never compared).
:meth:`Index.open` brings it up to date before it answers: only documents whose content
changed are parsed and embedded again (a file whose size and modification time are unchanged
is not even read).

The file is the folder's, and the folder is untrusted (shared through git, copied, edited by
anyone): a file that is not exactly this program's index (another application's database,
another schema version, an extra table, view or trigger, a corrupt page) is deleted and
rebuilt, never used. Triggers and views are not run while the schema is checked (``PRAGMA
trusted_schema = OFF``). Nor is a well-formed file trusted unless this user's own process
wrote it: every write seals the file with an HMAC-SHA256, under this user's secret key
(:mod:`jupyter_percent_agent.trust.secret`), over every row of every table the index answers
from (vectors and FTS5's own tables included), and a file whose seal does not check (no seal,
rows edited, another user's or a shipped index) is rebuilt like a corrupt one. Rows are also
checked in shape as they are read, so a damaged one never reaches a caller.

Search fuses a BM25 ranking over the lexical terms with a cosine ranking over embeddings
(see :mod:`.index_rank`); when the embedding model fails the index says so once and ranks by
terms alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_percent_agent.ranking.embed import Embedder, EmbeddingError, shared_embedder
from jupyter_percent_agent.ranking.fusion import LEXICAL_WEIGHT, combine
from jupyter_percent_agent.ranking.text import TERMS_TABLE, bm25_scores, columns
from jupyter_percent_agent.trust.secret import purpose_key

from .documents import TASK_TYPES
from .index_docs import DocError, DocProblem, IndexedDoc, content_hash, doc_paths, parse_doc

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

INDEX_NAME = ".sop-index.sqlite"
APPLICATION_ID = 0x54434549  # "TCEI", in the SQLite header: this program's index
SCHEMA_VERSION = 2
SEAL_PURPOSE = "sop-index"  # the user's key is derived for this one use
UNSEALED = "not sealed by this user"
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
CREATE TABLE seal(mac BLOB NOT NULL);
"""


class IndexWarning(UserWarning):
    """Something the index worked around: a failed embedding model, a rebuilt file."""


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()  # "the embedder the environment configures"


@dataclass(frozen=True)
class Hit:
    """One search result. ``score`` is in [0, 1] (1: first by terms and by meaning)."""

    task_id: str
    score: float
    description: str
    task_type: str
    path: str

    def to_json(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "score": round(self.score, 4),
                "description": self.description}


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

_expected_schema: frozenset[tuple[str, str, str, str]] | None = None


def _create(conn: sqlite3.Connection) -> None:
    conn.executescript(_SCHEMA)
    conn.execute(TERMS_TABLE)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _schema_of(conn: sqlite3.Connection) -> frozenset[tuple[str, str, str, str]]:
    rows = conn.execute("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master")
    return frozenset(tuple(r) for r in rows)


def expected_schema() -> frozenset[tuple[str, str, str, str]]:
    """Every table and index (FTS5's shadow tables included) that a fresh index has."""
    global _expected_schema
    if _expected_schema is None:
        conn = sqlite3.connect(":memory:")
        _create(conn)
        _expected_schema = _schema_of(conn)
        conn.close()
    return _expected_schema


_sealed_reads: tuple[tuple[bytes, str], ...] | None = None


def sealed_reads() -> tuple[tuple[bytes, str], ...]:
    """``(table name, query)`` reading every row of every table the index answers from
    (FTS5's shadow tables included: BM25 reads them), each in primary-key order."""
    global _sealed_reads
    if _sealed_reads is None:
        conn = sqlite3.connect(":memory:")
        _create(conn)
        reads = []
        for name, sql in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            if name == "seal" or sql.upper().startswith("CREATE VIRTUAL"):
                continue
            keys = sorted((pk, col) for _, col, _, _, _, pk in
                          conn.execute(f"PRAGMA table_info({name})") if pk)
            order = ", ".join(f'"{col}"' for _, col in keys) or "rowid"
            reads.append((name.encode(), f'SELECT * FROM "{name}" ORDER BY {order}'))
        conn.close()
        _sealed_reads = tuple(reads)
    return _sealed_reads


def seal_of(conn: sqlite3.Connection, key: bytes) -> bytes:
    """The HMAC-SHA256 under ``key`` of everything the index answers from: each table under
    its name, each value as its type, its length and its bytes (one text per state, no two
    states alike)."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    update = mac.update
    for name, query in sealed_reads():
        update(b"\0table %d:%s\0" % (len(name), name))
        for row in conn.execute(query):
            for value in row:
                if isinstance(value, bytes):
                    update(b"B%d:" % len(value))
                    update(value)
                elif isinstance(value, str):
                    data = value.encode("utf-8", "surrogatepass")
                    update(b"T%d:" % len(data))
                    update(data)
                else:  # int, float, None
                    update(b"%r;" % (value,))
            update(b"\n")
    return mac.digest()


def seal(conn: sqlite3.Connection, key: bytes | None = None) -> None:
    """Seal the index as it now stands, inside the caller's write transaction (``key``: by
    default this user's, for :data:`SEAL_PURPOSE`)."""
    # FTS5 keeps new terms in memory and writes them (and its averages record) to its
    # tables only when a savepoint or the transaction ends: end one first, so that what is
    # sealed is what the commit leaves.
    conn.execute("SAVEPOINT seal")
    conn.execute("RELEASE seal")
    mac = seal_of(conn, key if key is not None else purpose_key(SEAL_PURPOSE))
    conn.execute("DELETE FROM seal")
    conn.execute("INSERT INTO seal VALUES (?)", (mac,))


def is_sealed(conn: sqlite3.Connection, key: bytes) -> bool:
    """Whether the index holds exactly one seal, and it is ``key``'s over its rows now."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")  # one snapshot for the seal and the rows
    try:
        stored = conn.execute("SELECT mac FROM seal").fetchall()
        return (len(stored) == 1 and isinstance(stored[0][0], bytes)
                and hmac.compare_digest(stored[0][0], seal_of(conn, key)))
    finally:
        if own:
            conn.execute("COMMIT")


def _connect(path: str, *, uri: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(path, uri=uri, timeout=10.0, isolation_level=None,
                           check_same_thread=False)
    conn.execute("PRAGMA trusted_schema = OFF")
    return conn


def why_untrusted(conn: sqlite3.Connection, key: bytes) -> str:
    """Why an opened file is not a usable index ("" when it is); ``key``: this user's,
    which must have sealed it."""
    try:
        if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
            return "not an index of this program"
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            return "an index of another version"
        if _schema_of(conn) != expected_schema():
            return "unexpected tables, views or triggers"
        if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            return "corrupt"
        conn.execute("SELECT count(*) FROM terms").fetchone()
        if not is_sealed(conn, key):
            return UNSEALED
    except sqlite3.DatabaseError as exc:
        return f"unreadable ({exc})"
    return ""


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """An error that means the file is unusable (not a busy lock, not a broken constraint
    that a concurrent writer caused)."""
    if isinstance(exc, sqlite3.IntegrityError):
        return False
    text = str(exc).lower()
    return not (isinstance(exc, sqlite3.OperationalError)
                and ("locked" in text or "busy" in text))


# -- rows, checked in shape as they are read ---------------------------------------------------

def _damaged(what: str) -> sqlite3.DatabaseError:
    return sqlite3.DatabaseError(f"damaged row: {what}")


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _damaged(f"{what} is not text")
    return value


def _task_type(value: object) -> str:
    if value not in TASK_TYPES:
        raise _damaged("unknown task_type")
    return str(value)


def _names(value: object, what: str) -> list[str]:
    """A stored JSON list of strings (tool ids, routes)."""
    try:
        names = json.loads(_text(value, what))
    except ValueError:
        raise _damaged(f"{what} is not JSON") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _damaged(f"{what} is not a list of names")
    return names


def _remove(path: Path) -> None:
    for p in (path, path.with_name(path.name + "-journal"), path.with_name(path.name + "-wal"),
              path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


# -- the index ------------------------------------------------------------------------------

class Index:
    """The index of one SOP folder; use :meth:`open`. One thread at a time."""

    def __init__(self, folder: Path, conn: sqlite3.Connection, path: Path | None,
                 embedder: Embedder | None, key: bytes | None = None) -> None:
        self.folder = folder
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
            key: bytes | None = purpose_key(SEAL_PURPOSE)
        except OSError as exc:  # TrustError too: a key others could know proves nothing
            key, no_key = None, str(exc)
        conn, rebuilt = cls._open_file(path, key) if key is not None else (None, "")
        if conn is None:
            conn = _connect(":memory:")
            _create(conn)
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

    @staticmethod
    def _open_file(path: Path, key: bytes, *, distrust: bool = False
                   ) -> tuple[sqlite3.Connection | None, str]:
        """A trusted connection to the index file (sealed under ``key``), and why it was
        rebuilt ("" if it was not); ``None`` if the folder cannot hold one. A missing file is
        created, an untrusted one (or any, with ``distrust``) replaced, each atomically:
        processes that open the same folder at once end up sharing one file."""
        for _ in range(3):
            reason = "damaged" if distrust else ""
            if not distrust and path.exists():
                try:
                    conn = _connect(f"file:{path}?mode=rw", uri=True)
                except sqlite3.DatabaseError as exc:
                    reason = f"unreadable ({exc})"
                else:
                    reason = why_untrusted(conn, key)
                    if not reason:
                        return conn, ""
                    conn.close()
            tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
            try:
                _remove(tmp)
                conn = _connect(str(tmp))
                _create(conn)
                seal(conn, key)
                conn.close()
                if reason:
                    os.replace(tmp, path)
                else:
                    try:
                        os.link(tmp, path)  # only if still missing
                    except FileExistsError:
                        _remove(tmp)
                        continue  # another process made it first: use theirs
                    except OSError:  # a file system without hard links
                        os.replace(tmp, path)
                    _remove(tmp)
                return _connect(f"file:{path}?mode=rw", uri=True), reason
            except (OSError, sqlite3.DatabaseError):
                _remove(tmp)
                return None, reason
        return None, "another process keeps replacing it"

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
            self._open_file(self.path, self._key, distrust=distrust))
        if conn is None:
            conn = _connect(":memory:")
            _create(conn)
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
            seal(self._conn, self._key)

    def _check_seal(self) -> None:
        """Check the seal again if another connection wrote the file since we last did (a
        damage error if it no longer checks: then the file is rebuilt); inside a write
        transaction, this proves the rows about to be sealed are all this user's."""
        version = self._data_version()
        if version != self._version and self._key is not None:
            if not is_sealed(self._conn, self._key):
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
        try:
            data = (self.folder / rel).read_bytes()
        except OSError as exc:
            self._drop(rel, report.removed)
            conn.execute("INSERT INTO files VALUES (?, 0, -1, '', ?, 0)",
                         (rel, f"cannot read: {exc.strerror or exc}"))
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
            vectors = self._embed([_text(text, "text") for _, _, text in chunk])
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

    # -- the exact index -------------------------------------------------------------------

    def task_ids(self) -> list[str]:
        """Every indexed document's task_id, sorted."""
        return self._retry(lambda: [_text(r[0], "task_id") for r in self._conn.execute(
            "SELECT task_id FROM docs ORDER BY task_id")])

    def get(self, task_id: str) -> dict[str, Any] | None:
        """The exact record of ``task_id``: path, task_type, description, tool_ids, routes."""
        return self._retry(lambda: self._get(task_id))

    def _get(self, task_id: str) -> dict[str, Any] | None:
        row = self._conn.execute(
            "SELECT task_id, path, task_type, description, tool_ids, routes, text_hash"
            " FROM docs WHERE task_id = ?", (task_id,)).fetchone()
        if row is None:
            return None
        return {"task_id": _text(row[0], "task_id"), "path": _text(row[1], "path"),
                "task_type": _task_type(row[2]), "description": _text(row[3], "description"),
                "tool_ids": _names(row[4], "tool_ids"), "routes": _names(row[5], "routes"),
                "text_hash": _text(row[6], "text_hash")}

    def using_tool(self, tool_id: str) -> list[str]:
        """The documents whose ``tool.tool_id`` is ``tool_id``."""
        return self._retry(lambda: self._naming("tool_ids", tool_id))

    def routing_to(self, task_id: str) -> list[str]:
        """The documents that name ``task_id`` as a plan step or an error route."""
        return self._retry(lambda: self._naming("routes", task_id))

    def _naming(self, column: str, name: str) -> list[str]:
        """The documents whose list ``column`` holds ``name``, sorted."""
        return [_text(task_id, "task_id") for task_id, names in self._conn.execute(
            f"SELECT task_id, {column} FROM docs ORDER BY task_id")
            if name in _names(names, column)]

    # -- searching -------------------------------------------------------------------------

    def search(self, query: str, k: int = 5, *,
               task_types: Iterable[str] | None = None) -> list[Hit]:
        """The ``k`` documents that best match ``query`` by meaning and by terms.

        ``task_types`` keeps only documents of those types. An empty query is a
        ``ValueError``.
        """
        if not query or not query.strip():
            raise ValueError("empty query")
        return self._retry(lambda: self._search(query, k, task_types))

    def _search(self, query: str, k: int, task_types: Iterable[str] | None) -> list[Hit]:
        fused = combine(self.lexical_scores(query), self.vector_scores(query),
                        self.lexical_weight)
        if not fused:
            return []
        if task_types is not None:
            wanted = set(task_types)
            if self._types is None:
                self._types = {_text(t, "task_id"): _task_type(k) for t, k in
                               self._conn.execute("SELECT task_id, task_type FROM docs")}
            fused = [(t, s) for t, s in fused if self._types.get(t) in wanted]
        head = fused[:k]
        if not head:
            return []
        rows = {r[0]: r[1:] for r in self._conn.execute(
            "SELECT task_id, description, task_type, path FROM docs"
            f" WHERE task_id IN ({','.join('?' * len(head))})", [t for t, _ in head])}
        return [Hit(task_id=task_id, score=score, description=_text(row[0], "description"),
                    task_type=_task_type(row[1]), path=_text(row[2], "path"))
                for task_id, score in head if (row := rows.get(task_id))]

    def lexical_scores(self, query: str) -> dict[str, float]:
        """BM25 scores (higher is better) of the documents sharing terms with ``query``."""
        scores = bm25_scores(self._conn, query)
        if not scores:
            return {}
        names = dict(self._conn.execute(
            f"SELECT id, task_id FROM docs WHERE id IN ({','.join('?' * len(scores))})",
            list(scores)))
        return {_text(names[i], "task_id"): s for i, s in scores.items() if i in names}

    def vector_scores(self, query: str) -> dict[str, float]:
        """Cosine similarity to ``query`` of every document with a vector ({} without a
        working embedding model)."""
        if self._embedder_failed or self.embedder is None:
            return {}
        matrix, ids = self._vectors()
        if not ids:
            return {}
        q = self._embed([query])
        if q is None or q.shape[1] != matrix.shape[1]:
            return {}
        return dict(zip(ids, (matrix @ q[0]).tolist(), strict=True))

    def _vectors(self) -> tuple[np.ndarray, list[str]]:
        if self._matrix is None:
            import numpy as np

            assert self.embedder is not None
            rows = self._conn.execute(
                "SELECT d.task_id, v.vec FROM vectors v JOIN docs d ON d.id = v.doc"
                " AND d.text_hash = v.text_hash WHERE v.model = ? ORDER BY v.doc",
                (self.embedder.model_id,)).fetchall()
            dims = {len(vec) for _, vec in rows}
            if len(dims) > 1 or (dims and dims.pop() % 4):
                raise sqlite3.DatabaseError("vectors of mixed sizes")
            self._matrix_ids = [_text(doc, "task_id") for doc, _ in rows]
            self._matrix = (np.frombuffer(b"".join(vec for _, vec in rows), dtype=np.float32)
                            .reshape(len(rows), -1) if rows else np.zeros((0, 0), np.float32))
        return self._matrix, self._matrix_ids


# -- what the runner and the CLI call -------------------------------------------------------

CLOSE_MARGIN = 0.5  # fused-score gap (standard deviations) under which two plans are "close"


@dataclass(frozen=True)
class Choice:
    """The plan picked for a request in words, and how sure the pick is.

    ``close`` is true when the runner-up scores within :data:`CLOSE_MARGIN` of the best: the
    caller should ask before running (``tce run --yes`` accepts the best).
    """

    best: Hit | None
    runner_up: Hit | None
    close: bool

    @property
    def score(self) -> float:
        return self.best.score if self.best else 0.0

    def explain(self) -> str:
        """One line: which plan, its score, and the runner-up's."""
        if self.best is None:
            return "no plan matches"
        line = f"{self.best.task_id} ({self.best.description}): score {self.best.score:.2f}"
        if self.runner_up is not None:
            line += (f"; runner-up {self.runner_up.task_id} "
                     f"{self.runner_up.score:.2f}")
        return line + ("; close: please confirm" if self.close else "")


def _as_index(folder: str | os.PathLike[str] | Index) -> tuple[Index, bool]:
    if isinstance(folder, Index):
        return folder, False
    return Index.open(folder), True


def pick_plan(folder: str | os.PathLike[str] | Index, words: str) -> Choice:
    """The plan document of ``folder`` that best matches a request in ``words``
    (``tce run "写一篇关于城市交通的博客"``). ``folder`` may be an open :class:`Index`.
    An empty request is a ``ValueError``."""
    index, owned = _as_index(folder)
    try:
        hits = index.search(words, 2, task_types=("plan",))
    finally:
        if owned:
            index.close()
    best = hits[0] if hits else None
    runner_up = hits[1] if len(hits) > 1 else None
    close = (best is not None and runner_up is not None
             and best.score - runner_up.score < CLOSE_MARGIN)
    return Choice(best, runner_up, close)


def candidates(folder: str | os.PathLike[str] | Index, text: str, k: int = 5, *,
               exclude: Iterable[str] = ()) -> list[Hit]:
    """The ``k`` documents of ``folder`` that best fit ``text`` (a failure to recover from:
    the validator's error type and message), for a planner asked to replan; ``exclude``
    leaves out task_ids (the failing step itself)."""
    skip = set(exclude)
    index, owned = _as_index(folder)
    try:
        hits = index.search(text, k + len(skip))
    finally:
        if owned:
            index.close()
    return [h for h in hits if h.task_id not in skip][:k]
