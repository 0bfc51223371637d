"""The warm litellm helper (``runtime.helper``): a real helper process serving a real
litellm call."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from jupyter_percent_agent.runtime import helper as warm
from jupyter_percent_agent.runtime import models
from jupyter_percent_agent.runtime.events import Delta
from jupyter_percent_agent.runtime.models import CallSpec
from jupyter_percent_agent.testing.openai_server import OpenAIServer, Reply


@pytest.fixture
def helper(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PERCENT_AGENT_WARM_TEST", str(tmp_path))  # a private socket name
    path = warm.socket_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    env = {**os.environ, "PERCENT_AGENT_WARM_IDLE": "30"}
    proc = subprocess.Popen([sys.executable, "-m", "jupyter_percent_agent.runtime.helper",
                             str(path)], env=env)
    deadline = time.monotonic() + 120  # importing litellm takes 3 s idle, far more under load
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), f"the helper did not start (exit code {proc.poll()})"
    yield path
    proc.terminate()
    proc.wait(60)


def test_helper_streams_a_call(helper, openai_server: OpenAIServer) -> None:
    openai_server.script(Reply("via the helper", chunk_size=3))
    events: list = []
    spec = CallSpec(models=["m"], messages=[{"role": "user", "content": "hi"}],
                    api_base=openai_server.url, backoff=0, timeout=5)
    res = asyncio.run(warm.request(spec, events.append))
    assert res is not None and res.text == "via the helper"
    assert "".join(e.text for e in events if isinstance(e, Delta)) == "via the helper"
    assert openai_server.last_messages == [{"role": "user", "content": "hi"}]
    # errors come back as results too
    openai_server.responder = lambda b: Reply.http_error(500, "down")
    res = asyncio.run(warm.request(spec.__class__(**{**spec.to_json(), "retries": 0}),
                                   lambda e: None))
    assert res is not None and "down" in (res.error or "")


def test_no_helper_means_none(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERCENT_AGENT_WARM_TEST", str(tmp_path) + "-none")
    monkeypatch.setattr(warm, "spawn", lambda path: None)  # do not start one here
    spec = CallSpec(models=["m"], messages=[{"role": "user", "content": "hi"}])
    assert asyncio.run(warm.request(spec, lambda e: None)) is None


def test_socket_name_depends_on_the_environment() -> None:
    a = warm.socket_path({"OPENAI_API_KEY": "a"})
    b = warm.socket_path({"OPENAI_API_KEY": "b"})
    assert a != b and a.parent == b.parent
    assert warm.socket_path({"OPENAI_API_KEY": "a", "PWD": "/x"}) == a


def test_helper_counts_tokens_like_litellm(helper) -> None:
    msgs = [{"role": "user", "content": "hello there " * 20},
            {"role": "assistant", "content": "short"}]
    counts = warm.count("gpt-4o-mini", msgs)
    assert counts == models.count_tokens("gpt-4o-mini", msgs)
    assert counts[0] > counts[1] > 0


def test_the_socket_is_the_same_before_and_after_litellm_is_imported() -> None:
    """``tce`` looks for the helper before it imports litellm, which sets its defaults and
    forces what must hold whatever the user set."""
    from jupyter_percent_agent.litellm_setup import LITELLM_ENV_DEFAULTS, LITELLM_ENV_FORCED

    user = {"OPENAI_API_KEY": "a"}
    assert warm.socket_path(user) == warm.socket_path({**user, **LITELLM_ENV_DEFAULTS})
    assert warm.socket_path(user) == warm.socket_path({**user, **LITELLM_ENV_FORCED})
    assert warm.socket_path(user) == warm.socket_path({**user, "LITELLM_MODE": "DEV"})
    assert warm.socket_path(user) != warm.socket_path(
        {**user, "LITELLM_LOCAL_MODEL_COST_MAP": "False"})
