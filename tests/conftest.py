"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# pytest-jupyter registers no plugin by itself.
pytest_plugins = [
    "pytest_jupyter.jupyter_server",
    "pytest_jupyter.jupyter_client",
    "jupyter_percent_agent.testing.pytest_plugin",
]

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SHARED = Path(os.environ.get("PERCENT_AGENT_SHARED", ROOT.parent / "shared"))

# litellm must never reach for the network, in tests or anywhere else.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# tce chat's warm litellm helper stays off in tests unless a test turns it on; retries
# back off without sleeping.
os.environ.setdefault("PERCENT_AGENT_WARM", "0")
os.environ.setdefault("PERCENT_AGENT_BACKOFF", "0")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """tests/data: the project's own test files."""
    return DATA


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared: the read-only corpus and attack battery beside the project."""
    if not SHARED.is_dir():
        pytest.skip(f"shared data not found at {SHARED}")
    return SHARED
