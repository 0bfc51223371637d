"""`tce tools call` as a real subprocess: chunks streamed, a broken module in one line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from jupyter_percent_agent.testing.environment import run_tce
from tests.helpers.toolboxes import BROKEN, TOOLBOX

TCE = Path(sys.executable).parent / "tce"


@pytest.mark.skipif(not TCE.exists(), reason="tce is not installed beside this interpreter")
def test_real_tce_streams_chunks_and_prints_json() -> None:
    proc = run_tce("tools", "call", "countdown", "--args", '{"start": 2}', "--toolbox", TOOLBOX,
                   env=os.environ)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "2...\n1...\n"
    assert json.loads(proc.stdout) == {"data": "liftoff", "instruction": None}


@pytest.mark.skipif(not TCE.exists(), reason="tce is not installed beside this interpreter")
def test_real_tce_reports_a_broken_module_in_one_line() -> None:
    proc = run_tce("tools", "list", "--toolbox", BROKEN, "-m", "import_error", env=os.environ)
    assert proc.returncode == 4
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("tce: ")
    assert "import_error.py" in lines[0]
    assert "ModuleNotFoundError: No module named 'not_a_real_module_for_tce_tests'" in lines[0]
