"""The modules ``tce sop`` commands import, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import TEST_DATA

BLOG = TEST_DATA / "sop" / "seed_blog"


@pytest.mark.parametrize("command", [["check"], ["list"], ["show", "blog/generate_blog"]])
def test_sop_commands_do_not_import_heavy_modules(command: list[str]) -> None:
    args = ["tce", "sop", *command, *(["--sop", str(BLOG / "sop")] if command[0] == "show"
                                       else [str(BLOG / "sop")])]
    code = ("import sys\nsys.argv = " + repr(args) + "\n"
            "from jupyter_percent_agent.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('litellm', 'nbformat', 'jupytext', 'openai') "
            "if m in sys.modules)\nprint('HEAVY', heavy)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "HEAVY []" in p.stdout
