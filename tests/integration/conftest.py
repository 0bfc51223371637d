"""Fixtures of the integration tier's kernel tests (test_kernel.py, test_kernel_code.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_percent_agent.kernel import KERNEL_NAME, kernelspec_dir
from jupyter_percent_agent.testing.openai_server import OpenAIServer


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    """A local model server of the module's own, for kernels that outlive one test."""
    with OpenAIServer() as s:
        yield s


@pytest.fixture(scope="module")
def spec_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernels folder holding a copy of the project's kernelspec."""
    kernels = tmp_path_factory.mktemp("jupyter") / "kernels"
    shutil.copytree(kernelspec_dir(), kernels / KERNEL_NAME)
    return kernels
