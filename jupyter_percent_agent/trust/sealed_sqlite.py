"""A SQLite file that a folder holds but only this user's process may have written: its shape
checked, its rows sealed.

The folder is untrusted (shared through git, copied, edited by anyone), so a file is used only
when it is exactly what this program makes (its application id, schema version, and every
table, index, view and trigger as a fresh file has them; triggers and views are not run while
checking, ``PRAGMA trusted_schema = OFF``), is not corrupt, and carries a seal: an
HMAC-SHA256, under this user's secret key for one purpose (:mod:`.secret`), over every row of
every table (FTS5's shadow tables included), kept in the table ``seal``. Anything else is
replaced atomically by a fresh, sealed file. The SOP index (``tasks.index``) is one such file;
another is one :class:`SealedSchema` more.

Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import sqlite3
import stat
import threading
from collections.abc import Sequence
from pathlib import Path

from jupyter_percent_agent.trust.secret import purpose_key

UNSEALED = "not sealed by this user"
SEAL_TABLE = "CREATE TABLE seal(mac BLOB NOT NULL)"


def connect(path: str, *, uri: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) that runs no trigger or
    view of the file's while reading its schema."""
    conn = sqlite3.connect(path, uri=uri, timeout=10.0, isolation_level=None,
                           check_same_thread=False)
    conn.execute("PRAGMA trusted_schema = OFF")
    return conn


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    """An error that means the file is unusable (not a busy lock, not a broken constraint
    that a concurrent writer caused)."""
    if isinstance(exc, sqlite3.IntegrityError):
        return False
    text = str(exc).lower()
    return not (isinstance(exc, sqlite3.OperationalError)
                and ("locked" in text or "busy" in text))


def remove(path: Path) -> None:
    """Delete a database file and its journals, whichever exist."""
    for p in (path, path.with_name(path.name + "-journal"), path.with_name(path.name + "-wal"),
              path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()


def _kind(name: str, dfd: int) -> str:
    """What ``name`` in the folder open as ``dfd`` is, not following a link: "missing",
    "link", "file" (a regular file) or "other"."""
    try:
        mode = os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return "missing"
    return "link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "other"


def _remove_in(dfd: int, name: str) -> None:
    """Delete a database file and its journals in the folder open as ``dfd``."""
    for p in (name, name + "-journal", name + "-wal", name + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(p, dir_fd=dfd)


class SealedSchema:
    """One kind of sealed file: the statements that make a fresh one (the ``seal`` table is
    added), its application id and version, the purpose its key is derived for, queries that
    must run on a usable file (``probes``: e.g. an FTS5 table's), and what it is called in
    messages (``what``: "an index")."""

    def __init__(self, statements: Sequence[str], *, application_id: int, version: int,
                 purpose: str, probes: Sequence[str] = (), what: str = "a file") -> None:
        self.statements = (*statements, SEAL_TABLE)
        self.what = what
        self.application_id = application_id
        self.version = version
        self.purpose = purpose
        self.probes = tuple(probes)
        self._schema: frozenset[tuple[str, str, str, str]] | None = None
        self._reads: tuple[tuple[bytes, str], ...] | None = None

    def key(self) -> bytes:
        """This user's key for the purpose (``OSError``, ``TrustError`` when there is none)."""
        return purpose_key(self.purpose)

    def create(self, conn: sqlite3.Connection) -> None:
        """Make the tables of a fresh file in ``conn``."""
        for statement in self.statements:
            conn.executescript(statement)
        conn.execute(f"PRAGMA application_id = {self.application_id}")
        conn.execute(f"PRAGMA user_version = {self.version}")

    def expected_schema(self) -> frozenset[tuple[str, str, str, str]]:
        """Every table and index (FTS5's shadow tables included) that a fresh file has."""
        if self._schema is None:
            conn = sqlite3.connect(":memory:")
            self.create(conn)
            self._schema = _schema_of(conn)
            conn.close()
        return self._schema

    def sealed_reads(self) -> tuple[tuple[bytes, str], ...]:
        """``(table name, query)`` reading every row of every table but the seal (FTS5's
        shadow tables included), each in primary-key order."""
        if self._reads is None:
            conn = sqlite3.connect(":memory:")
            self.create(conn)
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
            self._reads = tuple(reads)
        return self._reads

    def seal_of(self, conn: sqlite3.Connection, key: bytes) -> bytes:
        """The HMAC-SHA256 under ``key`` of every row: each table under its name, each value
        as its type, its length and its bytes (one text per state, no two states alike)."""
        mac = hmac.new(key, digestmod=hashlib.sha256)
        update = mac.update
        for name, query in self.sealed_reads():
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

    def seal(self, conn: sqlite3.Connection, key: bytes | None = None) -> None:
        """Seal the file as it now stands, inside the caller's write transaction (``key``:
        by default this user's, for the purpose)."""
        # FTS5 keeps new terms in memory and writes them (and its averages record) to its
        # tables only when a savepoint or the transaction ends: end one first, so that what
        # is sealed is what the commit leaves.
        conn.execute("SAVEPOINT seal")
        conn.execute("RELEASE seal")
        mac = self.seal_of(conn, key if key is not None else self.key())
        conn.execute("DELETE FROM seal")
        conn.execute("INSERT INTO seal VALUES (?)", (mac,))

    def is_sealed(self, conn: sqlite3.Connection, key: bytes) -> bool:
        """Whether the file holds exactly one seal, and it is ``key``'s over its rows now."""
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")  # one snapshot for the seal and the rows
        try:
            stored = conn.execute("SELECT mac FROM seal").fetchall()
            return (len(stored) == 1 and isinstance(stored[0][0], bytes)
                    and hmac.compare_digest(stored[0][0], self.seal_of(conn, key)))
        finally:
            if own:
                conn.execute("COMMIT")

    def why_untrusted(self, conn: sqlite3.Connection, key: bytes) -> str:
        """Why an opened file is not usable ("" when it is); ``key``: this user's, which must
        have sealed it."""
        try:
            if conn.execute("PRAGMA application_id").fetchone()[0] != self.application_id:
                return f"not {self.what} of this program"
            if conn.execute("PRAGMA user_version").fetchone()[0] != self.version:
                return f"{self.what} of another version"
            if _schema_of(conn) != self.expected_schema():
                return "unexpected tables, views or triggers"
            if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                return "corrupt"
            for probe in self.probes:
                conn.execute(probe).fetchone()
            if not self.is_sealed(conn, key):
                return UNSEALED
        except sqlite3.DatabaseError as exc:
            return f"unreadable ({exc})"
        return ""

    def open_file(self, path: Path, key: bytes, *, distrust: bool = False
                  ) -> tuple[sqlite3.Connection | None, str]:
        """A connection to the file at ``path`` sealed under ``key``, and why it was rebuilt
        ("" if it was not); ``None`` if the folder cannot hold one. A missing file is
        created, an untrusted one (or any, with ``distrust``) replaced, each atomically:
        processes that open the same file at once end up sharing one. A symbolic link is
        replaced too, never opened: it could lead to a sealed file elsewhere (another folder's
        index), which this would then write.

        The folder is opened first, following no link (``format.opening.open_real``), and the
        file is checked, created, replaced and connected to through that descriptor
        (``/proc/self/fd/N/NAME``), so a folder swapped for a link after the check leads
        SQLite nowhere else; the file is checked again once connected."""
        from jupyter_percent_agent.format.opening import open_real

        real = Path(os.path.realpath(path.parent))
        try:
            dfd = open_real(real, directory=True)
        except (OSError, ValueError) as exc:
            return None, f"the folder cannot be opened ({exc})"
        try:
            return self._open_in(dfd, real, path.name, key, distrust)
        finally:
            os.close(dfd)

    def _open_in(self, dfd: int, real: Path, name: str, key: bytes, distrust: bool
                 ) -> tuple[sqlite3.Connection | None, str]:
        """:meth:`open_file` in the folder open as ``dfd`` (its real path ``real``)."""
        from jupyter_percent_agent.format.opening import about_to_open

        through = f"/proc/self/fd/{dfd}"
        at = Path(through) if os.path.isdir(through) else real  # no /proc: by its real path
        for _ in range(3):
            reason = "damaged" if distrust else ""
            kind = _kind(name, dfd)
            if kind == "link":  # never written through: the link is replaced by a file
                reason = "a link, not a file of the folder's own"
            elif not distrust and kind == "file":
                about_to_open(at / name)
                try:
                    conn = connect(f"file:{at / name}?mode=rw", uri=True)
                except sqlite3.DatabaseError as exc:
                    reason = f"unreadable ({exc})"
                else:
                    reason = self.why_untrusted(conn, key)
                    if not reason and _kind(name, dfd) != "file":  # swapped meanwhile
                        reason = "a link, not a file of the folder's own"
                    if not reason:
                        return conn, ""
                    conn.close()
            tmp = f"{name}.tmp-{os.getpid()}-{threading.get_ident()}"
            try:
                _remove_in(dfd, tmp)
                conn = connect(str(at / tmp))
                self.create(conn)
                self.seal(conn, key)
                conn.close()
                if reason:
                    os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                else:
                    try:  # only if still missing
                        os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    except FileExistsError:
                        _remove_in(dfd, tmp)
                        continue  # another process made it first: use theirs
                    except OSError:  # a file system without hard links
                        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                    _remove_in(dfd, tmp)
                return connect(f"file:{at / name}?mode=rw", uri=True), reason
            except (OSError, sqlite3.DatabaseError):
                _remove_in(dfd, tmp)
                return None, reason
        return None, "another process keeps replacing it"

    def in_memory(self) -> sqlite3.Connection:
        """A fresh database in memory (nothing to seal: no one else can write it)."""
        conn = connect(":memory:")
        self.create(conn)
        return conn


def _schema_of(conn: sqlite3.Connection) -> frozenset[tuple[str, str, str, str]]:
    rows = conn.execute("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master")
    return frozenset(tuple(r) for r in rows)
