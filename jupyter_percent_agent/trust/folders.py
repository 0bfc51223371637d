"""Trusted folders: the user's explicit "code and settings here may run with my keys".

A folder is trusted when it, or a folder above it, is listed in the user's config. Paths are
compared after resolving symlinks, so a link inside an untrusted clone cannot borrow the trust
of the folder it points to, and a trusted folder stays trusted under another name.
"""

from __future__ import annotations

import os
from pathlib import Path

from jupyter_percent_agent.trust.config import Config, load_config, save_config
from jupyter_percent_agent.trust.withholding import withheld


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def trusted_folders(config: Config | None = None) -> list[Path]:
    """The folders the user trusts, as written in the config."""
    return list((config or load_config()).trusted)


def is_trusted(folder: str | os.PathLike[str], config: Config | None = None) -> bool:
    """Whether ``folder`` (a folder, not a file) is trusted, itself or through a parent; never
    while the Agent kernel withholds trust from the conversation it runs (``withholding``)."""
    if withheld() is not None:
        return False
    real = _real(folder)
    for root in trusted_folders(config):
        root_real = _real(root)
        if real == root_real or root_real in real.parents:
            return True
    return False


def auto_runs(folder: str | os.PathLike[str], config: Config | None = None) -> bool:
    """Whether code a model proposes for a file in ``folder`` runs by itself: only when the
    user listed the folder (or one above it) under ``auto_run`` in their config, and trusts
    it. Never from a file."""
    config = config or load_config()
    listed = config.raw.get("auto_run") or []
    if not isinstance(listed, list) or not is_trusted(folder, config):
        return False
    real = _real(folder)
    for entry in listed:
        if isinstance(entry, str):
            root = _real(entry)
            if real == root or root in real.parents:
                return True
    return False


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
