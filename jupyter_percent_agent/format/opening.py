"""Opening a path as it was checked: component by component, following no link.

A path a file names is checked (``trust.resolve_inside``, ``files.safe_path``: where it
really leads), then opened. Between the two a folder along it can be swapped for a link (a
shared folder, a sync tool), and an open that follows links would read or write outside.
:func:`open_real` opens the real path the check left one component at a time from ``/``
with ``O_NOFOLLOW`` (``O_DIRECTORY`` for folders), so such a swap is refused, never followed;
the file or folder is then checked again on the opened descriptor. ``between_check_and_open``
is the test hook that injects a swap at exactly that point.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import Final

from .errors import RefusedFile

__all__ = ["about_to_open", "between_check_and_open", "check_regular", "open_real"]

_PSEUDO_ROOTS: Final = ("/proc", "/proc/sys", "/sys", "/sys/fs/cgroup", "/sys/kernel/debug")
_pseudo_devices: set[int] | None = None


def _pseudo(st: os.stat_result) -> bool:
    """A file of a kernel pseudo-filesystem: sizes lie, reads have effects, contents leak."""
    global _pseudo_devices
    if _pseudo_devices is None:
        found = set()
        for root in _PSEUDO_ROOTS:
            try:
                found.add(os.stat(root).st_dev)
            except OSError:
                pass
        _pseudo_devices = found
    return st.st_dev in _pseudo_devices


def check_regular(st: os.stat_result, path: str) -> None:
    """Refuse (:class:`RefusedFile`) what is not a regular file, or lives on /proc or /sys."""
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else
                "a FIFO" if stat.S_ISFIFO(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
        raise RefusedFile(f"refused: not a regular file ({kind})", path=path)
    if _pseudo(st):
        raise RefusedFile("refused: a file of /proc or /sys, not a message file", path=path)


between_check_and_open: Callable[[str], None] | None = None
"""A test hook: called with the path :func:`open_real` is about to open, after its caller
checked it, so a test can swap a folder along it for a link at exactly that point."""

_O_NOCTTY: Final = getattr(os, "O_NOCTTY", 0)
# a folder along the way is only walked through: O_PATH needs no read permission on it
_WALK: Final = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW \
    | os.O_CLOEXEC
_FOLDER: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO must not block the open; O_NOFOLLOW: nor a link be followed
_FILE: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC | _O_NOCTTY


def about_to_open(path: str | os.PathLike[str]) -> None:
    """Mark the point between a check of ``path`` and its open (the test hook's call)."""
    if between_check_and_open is not None:
        between_check_and_open(os.fspath(path))


def open_real(path: str | os.PathLike[str], *, directory: bool = False) -> int:
    """A descriptor of ``path``, an absolute real path (``os.path.realpath``, or what
    ``trust.resolve_inside`` returned), opened one component at a time from ``/`` with
    ``O_NOFOLLOW``: no symbolic link along it is followed. A folder along it that became a
    link after it was checked is a :class:`RefusedFile` (nothing outside is opened). The
    last component must be a regular file, not on ``/proc`` or ``/sys`` (a folder with
    ``directory=True``). ``FileNotFoundError`` when a component is missing."""
    path = os.fspath(path)
    about_to_open(path)
    if not os.path.isabs(path):
        raise ValueError(f"{path!r} is not an absolute path")
    parts = [p for p in path.split(os.sep) if p]
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"{path!r} is not a real path")
    fd = os.open("/", _WALK if parts else _FOLDER)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = (_FOLDER if directory else _FILE) if last else _WALK
            try:
                opened = os.open(part, flags, dir_fd=fd)
            except OSError as err:
                if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) \
                        and _is_link(part, fd):
                    raise RefusedFile(
                        f"refused: {os.sep.join(parts[:i + 1])!r} is a symbolic link now, "
                        "not what was checked (a folder or file swapped since): nothing was "
                        "read through it; to allow it: try again once nothing changes the "
                        "folder", path=path) from None
                raise
            os.close(fd)
            fd = opened
        st = os.fstat(fd)
        if directory:
            if not stat.S_ISDIR(st.st_mode):
                raise RefusedFile("refused: not a folder", path=path)
        else:
            check_regular(st, path)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
