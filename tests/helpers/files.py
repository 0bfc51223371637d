"""What a write left in a folder."""

from __future__ import annotations

from pathlib import Path


def leftovers(folder: Path, name: str) -> list[str]:
    """The names of the files in ``folder`` other than ``name``, sorted."""
    return sorted(p.name for p in folder.iterdir() if p.name != name)
