"""Trusted folders: the user's explicit "code and settings here may run with my keys".

A folder is trusted when it, or a folder above it, is listed in the user's config, except
below a nested clone: a folder between the two that holds its own ``.git`` *directory* (the
usual ``git clone`` into a trusted ``~/work``) is someone else's code, untrusted until the
user trusts it too. Submodules and worktrees (a ``.git`` *file*) stay trusted through their
parent, and the listed folder itself may hold a ``.git`` directory. Deciding costs one
``stat`` per folder between the file's folder and the trusted one, never a scan of the tree
(:func:`nested_clones` scans, bounded, for ``tce trust`` to show what stays untrusted).

Paths are compared after resolving symlinks, so a link inside an untrusted clone cannot borrow
the trust of the folder it points to, and a trusted folder stays trusted under another name.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

from jupyter_percent_agent.trust.config import Config, load_config, save_config
from jupyter_percent_agent.trust.withholding import withheld


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def trusted_folders(config: Config | None = None) -> list[Path]:
    """The folders the user trusts, as written in the config."""
    return list((config or load_config()).trusted)


GIT_DIR = ".git"
"""What marks a clone: a folder holding a ``.git`` directory (a ``.git`` file is a submodule's
or a worktree's pointer to its parent's repository)."""

SCAN_LIMIT = 10_000
"""The most folders :func:`nested_clones` looks at below one trusted folder."""


def _is_clone(folder: Path) -> bool:
    return os.path.isdir(os.path.join(folder, GIT_DIR))


def _clone_between(real: Path, root: Path) -> Path | None:
    """The nearest clone from ``real`` up to ``root`` (``root`` itself excluded), for ``real``
    inside ``root``: one ``stat`` per level."""
    level = real
    while level != root:
        if _is_clone(level):
            return level
        level = level.parent
    return None


def _covers(root: Path, real: Path) -> bool:
    """Whether the trusted ``root`` makes the folder ``real`` trusted (both resolved)."""
    return real == root or (root in real.parents and _clone_between(real, root) is None)


def is_trusted(folder: str | os.PathLike[str], config: Config | None = None) -> bool:
    """Whether ``folder`` (a folder, not a file) is trusted, itself or through a parent
    (not through a parent above a nested clone: see the module's docstring); never while the
    Agent kernel withholds trust from the conversation it runs (``withholding``)."""
    if withheld() is not None:
        return False
    real = _real(folder)
    return any(_covers(_real(root), real) for root in trusted_folders(config))


def clone_below_trust(folder: str | os.PathLike[str],
                      config: Config | None = None) -> Path | None:
    """The nested clone that keeps ``folder`` untrusted although a folder above it is
    trusted (trusting the clone, or ``folder`` itself, would trust it); None when ``folder``
    is trusted or no trusted folder holds it."""
    config = config or load_config()
    real = _real(folder)
    if is_trusted(real, config):
        return None
    for root in trusted_folders(config):
        root_real = _real(root)
        if root_real in real.parents:
            clone = _clone_between(real, root_real)
            if clone is not None:
                return clone
    return None


def nested_clones(folder: str | os.PathLike[str], config: Config | None = None,
                  limit: int = SCAN_LIMIT) -> tuple[list[Path], bool]:
    """The clones below ``folder`` (itself excluded) that are not trusted, nearest first, and
    whether the scan was complete (it looks at ``limit`` folders at most, follows no links,
    and does not look inside a clone or a ``.git`` folder)."""
    config = config or load_config()
    root = _real(folder)
    found: list[Path] = []
    queue = deque([root])
    seen = 0
    while queue:
        if seen >= limit:
            return found, False
        here = queue.popleft()
        seen += 1
        try:
            with os.scandir(here) as entries:
                subfolders = sorted(e.path for e in entries
                                    if e.name != GIT_DIR and e.is_dir(follow_symlinks=False))
        except OSError:  # unreadable, or gone since: nothing of it can be listed
            continue
        for sub in map(Path, subfolders):
            if not _is_clone(sub):
                queue.append(sub)
            elif not is_trusted(sub, config):
                found.append(sub)
            # a clone the user trusts is listed, and scanned, as a trusted folder of its own
    return found, True


def auto_runs(folder: str | os.PathLike[str], config: Config | None = None) -> bool:
    """Whether code a model proposes for a file in ``folder`` runs by itself: only when the
    user listed the folder (or one above it) under ``auto_run`` in their config, and trusts
    it. Never from a file."""
    config = config or load_config()
    listed = config.raw.get("auto_run") or []
    if not isinstance(listed, list) or not is_trusted(folder, config):
        return False
    real = _real(folder)
    return any(_covers(_real(entry), real) for entry in listed if isinstance(entry, str))


def trust_folder(folder: str | os.PathLike[str]) -> Path:
    """Trust ``folder`` (which must exist); returns it as recorded (resolved)."""
    real = _real(folder)
    if not real.is_dir():
        raise NotADirectoryError(f"{folder}: not a folder")
    config = load_config()
    if real not in [_real(p) for p in config.trusted]:
        save_config(_with(config, trusted=(*config.trusted, real)))
    return real


def untrust_folder(folder: str | os.PathLike[str]) -> bool:
    """Stop trusting ``folder``; False when it was not listed (a parent may still be)."""
    real = _real(folder)
    config = load_config()
    kept = tuple(p for p in config.trusted if _real(p) != real)
    if len(kept) == len(config.trusted):
        return False
    save_config(_with(config, trusted=kept))
    return True


def _with(config: Config, **changes: object) -> Config:
    from dataclasses import replace

    return replace(config, **changes)  # type: ignore[arg-type]
