"""Where the test suite's files are, for test modules at any depth under tests/."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The project's root folder (pyproject.toml, README.md, docs/)."""
TEST_DATA = ROOT / "tests" / "data"
"""tests/data: the project's own test files."""
SHARED = Path(os.environ.get("PERCENT_AGENT_SHARED", ROOT.parent / "shared"))
"""../shared: the read-only corpus and attack battery beside the project."""
