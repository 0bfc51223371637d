"""Paths a file names (``[async](FILE)``, ``include:``) stay inside the file's own folder, and
the user's private runtime folder is really private.

A path written in a message file is resolved against the file's folder and refused when it
is absolute, climbs out with ``..``, leaves through a symlink, or names anything but a
regular file (a FIFO would hang the reader, ``/proc`` and devices leak).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from jupyter_percent_agent.trust.errors import TrustError


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_inside(folder: str | os.PathLike[str], link: str, *, what: str = "path",
                   directory: bool = False) -> Path:
    """``link`` (written in a file in ``folder``) as a real path inside ``folder``.

    The path need not exist (a file or folder to be written); if it exists it must be a
    regular file (a folder with ``directory=True``). Raises :class:`TrustError` (kind
    ``"path"``) otherwise.
    """
    text = str(link)
    if not text or "\0" in text:
        raise TrustError(f"{what} {text!r} is not a usable path", kind="path")
    if os.path.isabs(text) or text.startswith("~"):
        raise TrustError(f"{what} {text!r} is absolute; a file may only name files in its "
                         "own folder", "write it relative to the file", kind="path")
    root = os.path.realpath(os.fspath(folder))
    real = os.path.realpath(os.path.join(root, text))
    if not _inside(real, root):
        raise TrustError(f"{what} {text!r} leads out of the file's folder {root}",
                         "a file may only name files in its own folder", kind="path")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return Path(real)
    if directory and not stat.S_ISDIR(st.st_mode):
        raise TrustError(f"{what} {text!r} is not a folder", kind="path")
    if not directory and not stat.S_ISREG(st.st_mode):
        raise TrustError(f"{what} {text!r} is not a regular file", kind="path")
    return Path(real)


def private_dir() -> Path:
    """This user's folder for sockets and locks: ``$XDG_RUNTIME_DIR/percent-agent`` or
    ``$TMPDIR/percent-agent-UID``, created 0700. A folder there that someone else owns, or
    that others may write, is refused: it would let them read or swap our sockets and locks.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        folder = Path(runtime) / "percent-agent"
    else:
        folder = Path(tempfile.gettempdir()) / f"percent-agent-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    require_private(os.lstat(folder), folder, "folder",
                    "remove it, or set TMPDIR to a folder of your own")
    return folder


def require_private(st: os.stat_result, path: Path, what: str, remedy: str) -> None:
    """Refuse (:class:`TrustError`) a ``what`` ("file", "folder") that is not this user's
    alone: another owner, or any access for others, or not of that kind."""
    kind_ok = stat.S_ISDIR(st.st_mode) if what == "folder" else stat.S_ISREG(st.st_mode)
    if not kind_ok or st.st_uid != os.getuid() or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise TrustError(f"{path} is not a private {what} of this user (owner uid "
                         f"{st.st_uid}, mode {stat.filemode(st.st_mode)})", remedy, kind="path")
