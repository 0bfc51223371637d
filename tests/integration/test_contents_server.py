"""A real ``jupyter server`` process, configured only by what the package installed.

pytest-jupyter hides the installed configuration; this starts the venv's own command, so it
checks that ``pip install`` put the server-extension config where jupyter_server reads it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jupyter_percent_agent import format as core


@pytest.mark.slow
def test_installed_server_opens_message_files(tmp_path: Path, data_dir: Path,
                                              jupyter_server) -> None:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(data_dir / "jupytext" / "chat.msg.md", root / "chat.msg.md")
    body = jupyter_server(root).first("GET", "/api/contents/chat.msg.md")
    assert body["type"] == "notebook"
    expected = core.reads((root / "chat.msg.md").read_text(encoding="utf-8"))
    assert len(body["content"]["cells"]) == len(expected["cells"])
    # Not jupytext's Markdown reading (its own server extension is installed too).
    text_repr = body["content"]["metadata"]["jupytext"]["text_representation"]
    assert text_repr["format_name"] == "msg"
    assert any(cell.get("outputs") for cell in body["content"]["cells"])
