"""pytest fixtures for the local OpenAI-compatible server (listed in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jupyter_percent_agent.testing.openai_server import OpenAIServer


@pytest.fixture(scope="session")
def _openai_server_session() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def openai_server(_openai_server_session: OpenAIServer) -> Iterator[OpenAIServer]:
    """A running server with an empty script and request log, shared across the session."""
    _openai_server_session.reset()
    yield _openai_server_session
    _openai_server_session.reset()
