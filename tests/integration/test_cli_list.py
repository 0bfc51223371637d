"""``tce list`` against the local model server, and the modules a fresh ``tce list`` imports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from jupyter_percent_agent.testing.environment import tce
from tests.paths import TEST_DATA

DATA = TEST_DATA / "runtime"


def test_list_agents(tmp_path: Path) -> None:
    path = tmp_path / "agents.msg.md"
    shutil.copy(DATA / "agents.msg.md", path)
    r = tce("list", str(tmp_path / "agents") + "/agent", "--json")
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert [x["name"] for x in rows] == ["reviewer", "bare", "default"]
    assert rows[0]["models"] == ["review-model", "backup-model"]
    assert rows[0]["source"] == "cell"


def test_list_does_not_import_heavy_modules(tmp_path: Path) -> None:
    path = tmp_path / "basic.msg.md"
    shutil.copy(DATA / "basic.msg.md", path)
    code = ("import sys\nsys.argv = ['tce', 'list', sys.argv[1]]\n"
            "from jupyter_percent_agent.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('litellm', 'nbformat', 'jupytext', 'openai', 'mcp', 'acp') "
            "if m in sys.modules)\n"
            "print('HEAVY', heavy)\n")
    p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "HEAVY []" in p.stdout
    assert "INDEX" in p.stdout
