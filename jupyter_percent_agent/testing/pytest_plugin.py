"""pytest fixtures shared by the test suite (listed in tests/conftest.py): the local
OpenAI-compatible server, the environment that points a test and its processes at it, and the
configuration of pytest-jupyter's in-process Jupyter server, and fast-agent (a real ACP
agent) on the local server."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from jupyter_percent_agent.testing.fast_agent import (
    FastAgent,
    fast_agent_executable,
    fast_agent_for,
)
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


@pytest.fixture
def local_model(openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:
    """The local model server as the environment's model (``test-model``, no retries, no
    waiting between them, no warm helper, a call that hangs fails in 10 s, no key of ours),
    for this process and the processes it starts (``dict(os.environ)``): set ``.responder``
    or call ``.script`` to script it."""
    for name, value in {"PERCENT_AGENT_API_BASE": openai_server.url,
                        "PERCENT_AGENT_MODEL": "test-model", "PERCENT_AGENT_RETRIES": "0",
                        "PERCENT_AGENT_BACKOFF": "0", "PERCENT_AGENT_WARM": "0",
                        "PERCENT_AGENT_TIMEOUT": "10",
                        "LITELLM_LOCAL_MODEL_COST_MAP": "True"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PERCENT_AGENT_API_KEY", raising=False)
    return openai_server



@pytest.fixture
def env(local_model: OpenAIServer) -> dict[str, str]:
    """The environment of a process this test starts: this process's, with the local model
    server as its model (``local_model``) and the test's own user config directory."""
    return dict(os.environ)


@pytest.fixture
def fast_agent(local_model: OpenAIServer, request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> FastAgent:
    """fast-agent (``make setup`` installs it in ``.venv-acp``) with the local model server
    as its model: ``tce(*fast_agent.acp_add_args("coder"))`` adds it. Without it the test
    is skipped, and fails under ``CI=true``, as the browser tests do without Chromium."""
    executable = fast_agent_executable(request.config.rootpath)
    if executable is None:
        message = ("fast-agent is not installed in .venv-acp (it needs Python 3.12+): "
                   "make setup installs it")
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI must have it")
        pytest.skip(message)
    return fast_agent_for(executable, local_model.url, tmp_path_factory.mktemp("fast-agent"))


@pytest.fixture
def jp_server_config() -> dict:
    """pytest-jupyter's in-process Jupyter server (``jp_fetch``, ``jp_serverapp``) with the
    package's server extension on: the message-file contents manager and its REST API."""
    return {"ServerApp": {"jpserver_extensions": {"jupyter_percent_agent.contents": True}}}
