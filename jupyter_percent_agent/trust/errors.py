"""The one error of the trust boundary: what was refused, and how the user can allow it."""

from __future__ import annotations

from pathlib import Path


class TrustError(PermissionError):
    """Something a file, its folder or a model asked for that needs the user's trust.

    ``kind`` says what: ``"api_base"``, ``"toolbox"``, ``"path"``. ``folder`` is the folder
    whose trust would allow it (None when no trust allows it, e.g. a path out of the folder).
    The message is one line: what was refused, then how to allow it.
    """

    def __init__(self, refused: str, remedy: str = "", *, kind: str,
                 folder: Path | None = None) -> None:
        self.refused, self.remedy, self.kind, self.folder = refused, remedy, kind, folder
        super().__init__(f"refused: {refused}" + (f"; {remedy}" if remedy else ""))

    def __str__(self) -> str:
        return self.args[0]
