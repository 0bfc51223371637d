"""Files: where a path really leads, reading it safely, and the one atomic write.

Message files travel in shared folders, so a path is untrusted too (TRUST: "symlinks resolved
inside the file's folder only"):

* :func:`safe_path` is the file that reading or writing a path touches: the path itself, or
  the target of a symbolic link when that target lies inside the link's own folder. A link
  that leads out of its folder (``notes.msg.md -> ~/.ssh/id_rsa``) and anything that is not a
  regular file (a FIFO, which would block a reader forever, a device, a ``/proc`` or ``/sys``
  file) are refused with a :class:`FormatError`.
* Every read and write here opens its file or folder through :func:`.opening.open_real`:
  component by component from ``/``, following no link, so a folder along the path swapped
  for a link between the check and the open (a shared folder, a sync tool) is refused.
* :func:`read_text` reads a file through :func:`safe_path`, UTF-8, keeping its line endings;
  ``real=True`` reads a path a check already made real (``trust.resolve_inside``) as it is.
* :func:`write_text` replaces a file's text atomically: a reader sees the old text or the new,
  never a mix. The text goes to a temporary file in the same folder, which is fsynced,
  given the old file's permission bits and renamed over the file; the folder is fsynced too.
  On Linux the temporary file has no name until its text is complete (``O_TMPFILE``, then a
  link), so a writer killed mid-write leaves nothing behind; a name that a killed writer did
  leave (elsewhere, or killed between the link and the rename) is swept by the next process
  that writes the same file (its first write of it, and again after ``SWEEP_EVERY``: a sweep
  lists the folder, and a folder of 1,000 transcripts made it the most of a write's cost). A
  writer holds an ``flock`` on its temporary file from before it has a name until the
  rename, so a sweeper removes only the files of writers that are gone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from typing import Final

from .errors import FormatError, RefusedFile
from .opening import check_regular, open_real
from .script import is_script_path
from .text import escape_surrogates

__all__ = ["check_markdown", "check_writable", "decode_utf8", "make_durable",
           "read_bytes", "read_text", "safe_path", "write_text"]

_TMP_RANDOM: Final = 12  # hex digits of a temporary file's random part
SWEEP_EVERY: Final = 60.0  # seconds between two sweeps for one file by one process
_swept: dict[tuple[str, str], float] = {}  # (folder, name) -> when this process last swept


def _inside(real: str, folder: str) -> bool:
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)


def safe_path(path: str | os.PathLike[str]) -> str:
    """The file that reading or writing ``path`` touches; :class:`FormatError` when refused.

    ``path`` itself when it is not a symbolic link; the link's target (followed to the end)
    when that lies inside the link's own folder, else refused. An existing file that is not a
    regular file (FIFO, socket, device, directory) or lives on ``/proc`` or ``/sys`` is
    refused. A path that does not exist yet is returned as is.
    """
    path = os.fspath(path)
    target = path
    if os.path.islink(path):
        folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        target = os.path.realpath(path)
        if not _inside(target, folder):
            raise RefusedFile("refused: a symbolic link to a file outside its folder; to allow "
                              "it: copy the file here instead", path=path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as err:  # a link loop, a name too long: nothing to read or replace
        raise FormatError(f"cannot be opened ({err.strerror})", path=path) from None
    check_regular(st, path)
    return target


def read_bytes(path: str | os.PathLike[str], *, real: bool = False,
               inside: str | os.PathLike[str] | None = None, one_link: bool = False) -> bytes:
    """The bytes of a file, read through :func:`safe_path` (a link out of its folder, a FIFO,
    a device, ``/proc``: :class:`FormatError`) and :func:`open_real`. ``real=True``:
    ``path`` is a real path a check returned (``trust.resolve_inside``), opened as it is.
    ``inside``: a real folder the file must really lie in (a folder along the path that is
    a link out of it is refused). ``one_link=True``: a file with another hard link (a name
    elsewhere, which a check of this one cannot see) is refused."""
    path = os.fspath(path)
    target = path if real else os.path.realpath(safe_path(path))
    if inside is not None and not _inside(target, os.fspath(inside)):
        raise RefusedFile(f"refused: it leads out of the folder {os.fspath(inside)} (a link "
                          "along the path); to allow it: copy the file into the folder",
                          path=path)
    fd = open_real(target)
    try:
        st = os.fstat(fd)
        if one_link and st.st_nlink > 1:
            raise RefusedFile(
                f"refused: a file with {st.st_nlink} hard links (its other names may lie "
                "outside the folder); to allow it: copy the file here instead", path=path)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], *, real: bool = False,
              inside: str | os.PathLike[str] | None = None, one_link: bool = False) -> str:
    """The text of a file (UTF-8, line endings kept), read as :func:`read_bytes` reads it.

    Bytes that are not UTF-8 are a :class:`FormatError` naming their line.
    """
    path = os.fspath(path)
    return decode_utf8(read_bytes(path, real=real, inside=inside, one_link=one_link), path)


def decode_utf8(data: bytes, path: str | None = None) -> str:
    """``data`` as UTF-8 text (line separators kept), or a ``FormatError`` naming the line
    and the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise FormatError(f"not UTF-8 text (byte 0x{data[err.start]:02x})", line=line,
                          path=path) from None


# --------------------------------------------------------------------------- writing


def _temp_name(name: str) -> str:
    return f".{name}.{os.urandom(_TMP_RANDOM // 2).hex()}.tmp"


def _sweep_due(folder: str, name: str) -> bool:
    """Whether this process should sweep for ``name`` now (see the module's doc)."""
    now = time.monotonic()
    last = _swept.get((folder, name))
    if last is not None and now - last < SWEEP_EVERY:
        return False
    if len(_swept) >= 4096:  # a long-lived process writing many files: forget, sweep again
        _swept.clear()
    _swept[(folder, name)] = now
    return True


def _sweep(dfd: int, name: str) -> None:
    """Remove the temporary files of earlier writers of ``name`` (in the folder open as
    ``dfd``) that died holding them."""
    pattern = re.compile(re.escape(f".{name}.") + f"[0-9a-f]{{{_TMP_RANDOM}}}" + r"\.tmp")
    try:
        entries = [e.name for e in os.scandir(dfd) if e.name.startswith(f".{name}.")]
    except OSError:
        return
    for entry in entries:
        if not pattern.fullmatch(entry):
            continue
        try:
            fd = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=dfd)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer is alive
            with contextlib.suppress(OSError):
                now = os.stat(entry, dir_fd=dfd, follow_symlinks=False)
                if (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
                    os.unlink(entry, dir_fd=dfd)
        finally:
            os.close(fd)


def _anonymous_temp(dfd: int) -> int | None:
    """A nameless file in the folder open as ``dfd`` (Linux ``O_TMPFILE``), or None where
    there is none."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return None
    try:
        return os.open(".", flag | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=dfd)
    except OSError as err:
        if err.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # the filesystem (or kernel) does not do it
        raise


def _link_temp(fd: int, dfd: int, name: str) -> str | None:
    """Give the nameless file ``fd`` a temporary name in the folder ``dfd``; None if it
    cannot be."""
    for _ in range(16):
        tmp = _temp_name(name)
        try:
            # linkat(AT_SYMLINK_FOLLOW) through /proc: Python asks for it only when given a
            # directory descriptor (a plain link() would link the /proc symlink itself)
            os.link(f"/proc/self/fd/{fd}", tmp, dst_dir_fd=dfd, follow_symlinks=True)
            return tmp
        except FileExistsError:
            continue
        except OSError:
            return None
    return None


def _named_temp(dfd: int, name: str, private: bool) -> tuple[int, str]:
    """A new, locked temporary file with a name in the folder ``dfd`` (where there is no
    ``O_TMPFILE``), created private (0o600) when it is to get an existing file's bits
    before its text.

    Locked right after it is created; a sweeper may take it in between (it then looks dead),
    so the name is checked to be still ours once the lock is held.
    """
    while True:
        tmp = _temp_name(name)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600 if private else 0o666, dir_fd=dfd)
        except FileExistsError:
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)
        st = os.fstat(fd)
        try:
            now = os.stat(tmp, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev):
            return fd, tmp
        os.close(fd)


def _fill(fd: int, data: bytes, mode: int | None, durable: bool = True) -> None:
    """Set the permission bits (when the file had some), write ``data`` and fsync."""
    if mode is not None:
        os.fchmod(fd, mode)
    view = memoryview(data)
    while view:
        done = os.write(fd, view)
        view = view[done:]
    if durable:
        os.fsync(fd)


READ_ONLY = "the file is read-only: nothing written (chmod u+w to allow it)"


def check_writable(path: str | os.PathLike[str], mode: int | None = None) -> None:
    """Refuse (``PermissionError`` naming the file) to write over an existing file that is
    read-only: no write bit at all (``chmod a-w``, which even root's writes respect here), or
    not writable by this user. The atomic write renames a new file over the old one, which
    the folder's permissions allow whatever the file's own say. ``mode``: the file's
    permission bits when the caller has them already."""
    path = os.fspath(path)
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = None
    if mode is not None and (not mode & 0o222 or not os.access(path, os.W_OK)):
        raise PermissionError(errno.EACCES, READ_ONLY, path)


def write_text(path: str | os.PathLike[str], text: str, *, mode: int | None = None,
               durable: bool = True, real: bool = False, exclusive: bool = False) -> None:
    """Replace the text of ``path`` atomically (UTF-8; lone surrogates escaped, never fatal).

    A symbolic link is written through to its target when :func:`safe_path` allows it (the
    link stays a link); a link out of its folder or a special file is refused with a
    :class:`FormatError`. ``real=True``: ``path`` is a real path a check returned
    (``trust.resolve_inside``), written as it is (a link there now is refused). The folder is
    opened through :func:`open_real` and everything after is done in it by descriptor, so a
    folder swapped for a link meanwhile receives nothing. An existing file keeps its
    permission bits; a new one gets ``mode`` (e.g. 0o600 for a private file), else the
    umask's. Temporary files of writers that were killed are swept (see the module's doc).
    ``durable=False`` leaves out the fsyncs: still atomic, and it survives the process being
    killed, but a power loss may bring back the file as it was. ``exclusive=True``: a new
    file only; whatever holds the name already (a file, a link) is a ``FileExistsError``,
    and the complete file appears under the name at once (linked, never renamed over).
    """
    path = os.fspath(path)
    if exclusive and os.path.lexists(path):  # a link, even to nothing, is not a new name
        raise FileExistsError(errno.EEXIST, "the file exists", path)
    target = path if real else safe_path(path)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = escape_surrogates(text).encode("utf-8")
    folder = os.path.dirname(os.path.abspath(target))
    name = os.path.basename(target)
    dfd = open_real(folder if real else os.path.realpath(folder), directory=True)
    try:
        _write_in(dfd, folder, name, path, data, new_mode=mode, durable=durable, real=real,
                  exclusive=exclusive)
        if durable:
            with contextlib.suppress(OSError):
                os.fsync(dfd)
    finally:
        os.close(dfd)


def _write_in(dfd: int, folder: str, name: str, path: str, data: bytes, *,
              new_mode: int | None, durable: bool, real: bool, exclusive: bool = False) -> None:
    """:func:`write_text`'s work in the folder open as ``dfd``."""
    try:
        st: os.stat_result | None = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if exclusive and st is not None:
        raise FileExistsError(errno.EEXIST, "the file exists", path)
    if st is not None and stat.S_ISLNK(st.st_mode):
        if real:
            raise RefusedFile("refused: a symbolic link now, not the file that was checked; "
                              "to allow it: try again once nothing changes the folder",
                              path=path)
        st = None  # safe_path resolved the link; what replaced the target since is replaced
    if st is not None:
        check_regular(st, path)
    mode = st.st_mode & 0o7777 if st is not None else None
    if mode is not None and (not mode & 0o222
                             or not os.access(name, os.W_OK, dir_fd=dfd)):
        raise PermissionError(errno.EACCES, READ_ONLY, path)
    if mode is None:
        mode = new_mode
    if _sweep_due(folder, name):
        _sweep(dfd, name)
    tmp: str | None = None
    fd = _anonymous_temp(dfd)
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            _fill(fd, data, mode, durable)
            tmp = _link_temp(fd, dfd, name)
            if tmp is None:  # no /proc to link through: start again the named way
                os.close(fd)
                fd = None
        if fd is None:
            fd, tmp = _named_temp(dfd, name, mode is not None)
            _fill(fd, data, mode, durable)
        if exclusive:  # a name taken meanwhile is an error, never written over
            os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            os.unlink(tmp, dir_fd=dfd)
        else:
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp = None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        if fd is not None:
            os.close(fd)


def make_durable(path: str | os.PathLike[str]) -> None:
    """fsync ``path`` and its folder: what ``write_text(..., durable=False)`` left out, done
    later (on a thread, once for several writes). A file or folder that cannot be opened or
    synced is passed over: durability is best effort, atomicity is not."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        fd = None
    if fd is not None:
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
    _fsync_folder(os.path.dirname(os.path.abspath(path)))


def _fsync_folder(folder: str) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


NOTEBOOK_SUFFIXES = (".ipynb",)
MARKDOWN_SUFFIXES = (".md", ".markdown")


def check_markdown(path: str | os.PathLike[str]) -> None:
    """Refuse (``FormatError``, one line saying what the file is and what to do) a file that
    ``tce`` must not read as a message file nor write into: a Jupyter notebook, a file that is
    not Markdown, a file that is not UTF-8 text. ``--force`` changes none of this."""
    path = os.fspath(path)
    name = os.path.basename(path).lower()
    if is_script_path(path):
        pass  # a script message file (NAME.msg.py): its messages are comments
    elif name.endswith(NOTEBOOK_SUFFIXES):
        beside = os.path.splitext(path)[0] + ".msg.md"
        raise FormatError(
            "a Jupyter notebook (JSON), not a Markdown message file: tce never writes into "
            f"it; start a conversation beside it: tce chat {beside}", path=path)
    elif not name.endswith(MARKDOWN_SUFFIXES):
        stem, ext = os.path.splitext(path)
        if is_script_path(stem + ".msg" + ext):
            raise FormatError(
                "a script, not a message file: tce writes no message into it; keep the "
                f"conversation in a script message file: tce chat {stem}.msg{ext}", path=path)
        raise FormatError(
            "not a Markdown file (.md), so tce writes no message into it; name a .msg.md "
            "file (a new one is made) or a Markdown file", path=path)
    if os.path.lexists(path):
        try:
            text = read_text(path)
        except UnicodeDecodeError:
            text = "\0"
        # NULs throughout (UTF-16 text reads as UTF-8 with a NUL in every other byte, or a
        # binary file): not text. A few are text a message or a reply held, that tce wrote.
        if "\0" in text and text.count("\0") * 10 > len(text):
            raise FormatError("not a text file (it is not UTF-8 or holds NUL bytes): tce "
                              "writes no message into it; check the name", path=path)
