"""The one error of the trust boundary: what was refused, and how the user can allow it."""

from __future__ import annotations

from pathlib import Path

from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.trust.withholding import withheld


class TrustError(PercentAgentError, PermissionError):
    """Something a file, its folder or a model asked for that needs the user's trust.

    ``kind`` says what: ``"api_base"``, ``"toolbox"``, ``"path"``. ``folder`` is the folder
    whose trust would allow it (None when no trust allows it, e.g. a path out of the folder).
    The message is one line: what was refused, then how to allow it; when ``folder`` is in a
    clone inside a trusted folder, it says so (the user may think it trusted). While trust is
    withheld from the conversation (``withholding``), trusting a folder would not allow it:
    the remedy says why the conversation runs untrusted and how to run it trusted instead.
    """

    error_kind = Kind.REFUSED

    def __init__(self, refused: str, remedy: str = "", *, kind: str,
                 folder: Path | None = None) -> None:
        reason = withheld()
        if reason is not None and folder is not None:
            remedy, folder = str(reason), None
        if folder is not None:
            refused += _in_a_clone(folder)
        self.refused, self.remedy, self.kind, self.folder = refused, remedy, kind, folder
        super().__init__(f"refused: {refused}" + (f"; {remedy}" if remedy else ""))

    def __str__(self) -> str:
        return self.args[0]

    @property
    def trust_folder(self) -> Path | None:
        return self.folder

    @property
    def ename(self) -> str:
        """``UntrustedFolder`` when trusting ``folder`` would allow it (JupyterLab offers
        to), ``TrustError`` when nothing the user can trust allows it (a path out)."""
        return "UntrustedFolder" if self.folder is not None else "TrustError"


def _in_a_clone(folder: Path) -> str:
    """Why ``folder`` is untrusted although a folder above it is trusted, or ""."""
    from jupyter_percent_agent.trust.folders import clone_below_trust

    try:
        clone = clone_below_trust(folder)
    except (OSError, PercentAgentError):  # no config to read: nothing trusted above it
        return ""
    if clone is None:
        return ""
    return (f" ({clone} is a clone, with its own .git folder, inside a trusted folder: "
            "a clone is trusted only when you trust it)")
