"""External agents over ACP beyond ``tce chat``: a task document's ACP step (the document
protected, the person at the terminal asked, an untrusted folder refused), images in the
prompt (ACP image blocks for an agent that takes them, the stand-in line otherwise), and
``tce exec`` not importing the model client for an ACP turn. The scripted agent is a real
process on the official SDK (jupyter_percent_agent/testing/scripted_acp_agent.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_acp import HEADER, Scripted


@pytest.fixture
def project(tmp_path: Path, trusted) -> Scripted:
    scripted = Scripted(tmp_path)
    trusted(scripted.folder)
    return scripted


def test_tce_exec_of_an_external_agents_message_never_imports_the_model_client(
        project: Scripted) -> None:
    """tce exec warmed litellm up for any message cell; an ACP turn calls no model."""
    project.add("echo.json")
    project.path.write_text(HEADER.format(name="fake")
                            + "# %% Ask[^m1]\n[^m1]: [markdown]\n\nhi\n")
    probe = ("import sys\nsys.argv = ['tce', 'exec', sys.argv[1]]\n"
             "from jupyter_percent_agent.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n"
             "    print('LITELLM' if 'litellm' in sys.modules else 'NO-LITELLM', file=sys.stderr)\n"
             "    raise\n")
    p = subprocess.run([sys.executable, "-c", probe, str(project.path)], env=dict(os.environ),
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert "answer to: hi" in p.stdout and "NO-LITELLM" in p.stderr
