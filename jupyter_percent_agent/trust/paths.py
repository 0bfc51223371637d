"""Paths a file names (``[async](FILE)``, ``include:``, pairings, a ``[task]`` cell's folders)
stay inside the file's own folder, out of the folders other tools read, and the user's private
runtime folder is really private.

A path written in a message file is resolved against the file's folder and refused when it
is absolute, climbs out with ``..``, leaves through a symlink, names anything but a regular
file (a FIFO would hang the reader, ``/proc`` and devices leak), or lies in a version-control
folder (``.git``: its hooks and config run code), a hidden file or folder (tools' own state:
``.venv``, ``.env``, ``.jupytext.py``...) or ``toolbox/`` (imported once the folder is trusted).
A clone can ship any other file of its folder itself, so writing there adds nothing it could
not do; these are the places a clone cannot fill, or that something later runs.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from jupyter_percent_agent.trust.errors import TrustError

TOOLBOX = "toolbox"
"""The folder of Python tool modules beside a file: imported only when its folder is trusted."""

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", ".jj", ".pijul", "_darcs", "cvs", "rcs",
                      "sccs", "_fossil_", ".fslckout"})
"""Version-control folders (and Fossil's checkout files), case-folded: what they hold runs
(hooks, ``core.fsmonitor``) and never comes with a clone."""

PATH_RULE = ("a file may only name files of its own folder, outside version-control, hidden "
             "and toolbox/ folders")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_inside(folder: str | os.PathLike[str], link: str, *, what: str = "path",
                   directory: bool = False, suffix: str | None = None,
                   one_link: bool = False) -> Path:
    """``link`` (written in a file in ``folder``) as a real path inside ``folder``.

    The path need not exist (a file or folder to be written); if it exists it must be a
    regular file (a folder with ``directory=True``); ``one_link=True``: with no other hard
    link (a name elsewhere, which this check cannot see). ``suffix`` (``".md"``): the only
    kind of file it may name. Raises :class:`TrustError` (kind ``"path"``) otherwise, in one
    line naming the path and the rule.

    This is the check; open what it returns with ``real=True`` (``format.read_text``,
    ``format.write_text``, ``format.opening.open_real``), which follows no link along it, so a
    folder swapped for a link after this check is refused rather than followed out.
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
    where = _tool_place(os.path.relpath(real, root))
    if where is not None:
        raise TrustError(f"{what} {text!r} names {where}", PATH_RULE, kind="path")
    if suffix is not None and not directory and not real.lower().endswith(suffix):
        raise TrustError(f"{what} {text!r} is not a {suffix} file",
                         f"{what} names only {suffix} files", kind="path")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return Path(real)
    if directory and not stat.S_ISDIR(st.st_mode):
        raise TrustError(f"{what} {text!r} is not a folder", kind="path")
    if not directory and not stat.S_ISREG(st.st_mode):
        raise TrustError(f"{what} {text!r} is not a regular file", kind="path")
    if one_link and not directory and st.st_nlink > 1:
        raise TrustError(f"{what} {text!r} has {st.st_nlink} hard links (another name may "
                         "lie outside the folder)", "to allow it: copy the file here instead",
                         kind="path")
    return Path(real)


def _tool_place(rel: str) -> str | None:
    """What makes a path relative to a file's folder one a file may not name, or None."""
    for part in rel.split(os.sep):
        if part.casefold() in VCS_DIRS:  # case-insensitive file systems: .GIT is .git
            return f"{part}, a version-control folder"
        if part.casefold() == TOOLBOX:
            return "toolbox/, whose modules are imported once the folder is trusted"
        if part.startswith(".") and part not in (".", ".."):
            return f"{part}, a hidden file or folder"
    return None


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
