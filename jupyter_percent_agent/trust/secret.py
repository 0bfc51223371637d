"""This user's secret key: how a file this user's own process wrote is told from any other.

A file kept inside a shared folder (the SOP index, one SQLite file in the folder) may have
come with the folder through git, or been edited by anyone. A process that writes such a
file seals it with an HMAC under this key; a file whose seal does not check was not written
by this user's process and is rebuilt, never trusted.

The key is 32 random bytes in the user's config directory (``secret.key``, created 0600 on
first use, in a folder created 0700). A key file that is not this user's, that others may
read or write, or that is not exactly 32 bytes is refused (:class:`TrustError`): a seal
made with a key someone else knows proves nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import threading
from pathlib import Path

from jupyter_percent_agent.trust.config import config_dir
from jupyter_percent_agent.trust.errors import TrustError
from jupyter_percent_agent.trust.paths import require_private

SECRET_NAME = "secret.key"
SECRET_BYTES = 32

_cache: dict[Path, bytes] = {}


def secret_path() -> Path:
    """Where this user's key lives (it need not exist yet)."""
    return config_dir() / SECRET_NAME


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        require_private(os.fstat(fd), path, "file", "remove it: a new key is made on next use")
        data = os.read(fd, SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != SECRET_BYTES:
        raise TrustError(f"{path} is not a key of {SECRET_BYTES} bytes",
                         "remove it: a new key is made on next use", kind="path")
    return data


def _create(path: Path) -> None:
    """Write a new key, atomically: a reader never sees a part of one, and of two processes
    creating it at once one wins and both use its key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, os.urandom(SECRET_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # only if still missing
    except FileExistsError:
        pass
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def user_secret() -> bytes:
    """This user's key (made on first use). ``OSError`` when the config directory cannot
    hold it, :class:`TrustError` when the file there is not a private key."""
    path = secret_path()
    key = _cache.get(path)
    if key is None:
        try:
            key = _read(path)
        except FileNotFoundError:
            _create(path)
            key = _read(path)
        _cache[path] = key
    return key


def purpose_key(purpose: str) -> bytes:
    """A key for one use only (``"sop-index"``), derived from :func:`user_secret`, so a seal
    made for one kind of file is never valid for another."""
    return hmac.new(user_secret(), purpose.encode(), hashlib.sha256).digest()


def seal(purpose: str, data: bytes) -> str:
    """The seal of ``data`` for ``purpose``: hex HMAC-SHA256 under :func:`purpose_key`."""
    return hmac.new(purpose_key(purpose), data, hashlib.sha256).hexdigest()


def sealed_by_user(purpose: str, data: bytes, found: object) -> bool:
    """Whether ``found`` is the seal this user's process made of ``data`` for ``purpose``
    (anything else, a missing seal included, is not)."""
    return isinstance(found, str) and hmac.compare_digest(found, seal(purpose, data))
