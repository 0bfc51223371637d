"""Toolbox folders for the tests: the project's test toolbox in tests/data, and a toolbox that
leaves a marker file when something imports it (proof that a folder's code ran)."""

from __future__ import annotations

from pathlib import Path

from tests.paths import TEST_DATA

TOOLBOX = str(TEST_DATA / "toolbox")
"""The project's test toolbox (tests/data/toolbox)."""
BROKEN = str(Path(TOOLBOX) / "broken")
"""The test toolbox's broken part (tests/data/toolbox/broken)."""

MARKER_TOOL = '''
import pathlib
from jupyter_percent_agent.testing.environment import tce
pathlib.Path({marker!r}).write_text("imported")


def ping() -> str:
    """Answer pong.

    Returns:
        str: pong
    """
    return "pong"
'''



def marker_toolbox(folder: Path) -> Path:
    """Give ``folder`` a ``toolbox/notes.py`` (tool ``ping``) that writes a marker file beside
    ``folder`` when imported; the marker's path (not there yet)."""
    marker = folder.parent / f"{folder.name}-imported.marker"
    (folder / "toolbox").mkdir(parents=True)
    (folder / "toolbox" / "notes.py").write_text(MARKER_TOOL.format(marker=str(marker)))
    return marker
