"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import os
from collections.abc import Callable
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


@pytest.fixture(autouse=True)
def user_config_dir(tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test has an empty user config directory of its own (no folder trusted, no
    endpoint allowed), inherited by the processes it starts: the real user's is never read."""
    folder = tmp_path_factory.mktemp("user-config")
    monkeypatch.setenv("PERCENT_AGENT_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture
def local_model(openai_server, monkeypatch: pytest.MonkeyPatch):
    """The local model server as the environment's model (``test-model``, no retries, no key
    of ours): set ``.responder`` to script it."""
    monkeypatch.setenv("PERCENT_AGENT_API_BASE", openai_server.url)
    monkeypatch.setenv("PERCENT_AGENT_MODEL", "test-model")
    monkeypatch.setenv("PERCENT_AGENT_RETRIES", "0")
    monkeypatch.delenv("PERCENT_AGENT_API_KEY", raising=False)
    return openai_server


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The user's keys in the environment (name -> value, returned), no endpoint of the
    user's (``PERCENT_AGENT_API_BASE``, ``OPENAI_API_BASE``), no model of theirs, no retries,
    no waiting, no warm helper: a hostile file's test can look for these values in what a
    server received (``OpenAIServer.received``)."""
    secrets = {"OPENAI_API_KEY": "sk-user-openai-secret",
               "ANTHROPIC_API_KEY": "sk-ant-user-secret",
               "HUGGINGFACE_API_KEY": "hf-user-secret",
               "PERCENT_AGENT_API_KEY": "sk-user-percent-secret"}
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    for name, value in {"PERCENT_AGENT_BACKOFF": "0", "PERCENT_AGENT_WARM": "0",
                        "PERCENT_AGENT_TIMEOUT": "5", "PERCENT_AGENT_RETRIES": "0"}.items():
        monkeypatch.setenv(name, value)
    for name in ("PERCENT_AGENT_API_BASE", "PERCENT_AGENT_MODEL", "OPENAI_API_BASE",
                 "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return secrets


@pytest.fixture
def trusted(user_config_dir: Path) -> Callable[[Path], Path]:
    """``trusted(folder)``: trust a folder for this test, as ``tce trust`` would."""
    from jupyter_percent_agent import trust

    return trust.trust_folder


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


class ProcessProbe:
    """Looks at this test process and its children through /proc (Linux only)."""

    WORKER_MARKER = b"jupyter_percent_agent.sandbox._child"

    @staticmethod
    def child_pids() -> set[int]:
        """Pids of the live (non-zombie) direct children of this process."""
        me = os.getpid()
        pids = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == me and fields[0] != "Z":
                pids.add(int(entry.name))
        return pids

    def worker_pids(self) -> set[int]:
        """Pids of sandbox worker processes that are children of this process."""
        found = set()
        for pid in self.child_pids():
            try:
                if self.WORKER_MARKER in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.add(pid)
            except OSError:
                pass
        return found

    @staticmethod
    def open_fds() -> dict[int, str]:
        """This process's open descriptors and what they point at."""
        found = {}
        for name in os.listdir("/proc/self/fd"):
            try:
                found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
            except OSError:
                pass  # the descriptor listdir itself used
        return found

    @staticmethod
    def limits_of(pid: int) -> dict[str, str]:
        """Soft limits of a process by name (``Max address space`` ...), from /proc/PID/limits."""
        result = {}
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]:
            result[line[:26].strip()] = line[26:].split()[0]
        return result

    @staticmethod
    def environ_of(pid: int) -> dict[str, str]:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
        pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if item)
        return {k.decode(): v.decode() for k, v in pairs}


@pytest.fixture(scope="session")
def process_probe() -> ProcessProbe:
    """/proc views of this process and its children (sandbox workers, leftovers)."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    return ProcessProbe()
