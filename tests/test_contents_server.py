"""A real ``jupyter server`` process, configured only by what the package installed.

pytest-jupyter hides the installed configuration; this starts the venv's own command, so it
checks that ``pip install`` put the server-extension config where jupyter_server reads it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from jupyter_percent_agent import format as core


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_installed_server_opens_message_files(tmp_path: Path, data_dir: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(data_dir / "jupytext" / "chat.msg.md", root / "chat.msg.md")
    port = _free_port()
    token = "percent-agent-test"
    env = {
        **os.environ,
        # A clean user config; the environment's own (sys.prefix) config stays in effect.
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
    }
    # its log to a file: a pipe nobody reads fills up and stalls the server
    log = tmp_path / "server.log"
    with log.open("w") as log_file:
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "jupyter"),
                "server",
                f"--port={port}",
                "--ip=127.0.0.1",
                "--no-browser",
                "--allow-root",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
            text=True,
        )
    try:
        url = f"http://127.0.0.1:{port}/api/contents/chat.msg.md?token={token}"
        body = None
        deadline = time.monotonic() + 120
        while body is None:
            if server.poll() is not None:
                pytest.fail(f"jupyter server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    body = json.loads(response.read())
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert body["type"] == "notebook"
        expected = core.reads((root / "chat.msg.md").read_text(encoding="utf-8"))
        assert len(body["content"]["cells"]) == len(expected["cells"])
        # Not jupytext's Markdown reading (its own server extension is installed too).
        text_repr = body["content"]["metadata"]["jupytext"]["text_representation"]
        assert text_repr["format_name"] == "msg"
        assert any(cell.get("outputs") for cell in body["content"]["cells"])
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
