"""Fixtures shared by the whole test suite."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_percent_agent.format import NS

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
def trusted(user_config_dir: Path) -> Callable[[Path], Path]:
    """``trusted(folder)``: trust a folder for this test, as ``tce trust`` would."""
    from jupyter_percent_agent import trust

    return trust.trust_folder


def _reordered(nb: dict, order: Callable[[list[str]], list[str]]) -> dict:
    """``nb`` with every dict of attributes (a cell's and an output's metadata, their
    namespaced entries and what those keep for stream and error outputs) holding its keys in
    ``order(keys)``: what a front end that builds the same metadata in its own order saves."""
    def again(d):
        return {k: d[k] for k in order(list(d))} if isinstance(d, dict) else d

    def entry(ns):
        ns = again(ns)
        if isinstance(ns, dict):
            if isinstance(ns.get("meta"), dict):
                ns["meta"] = again(ns["meta"])
            if isinstance(ns.get("outputs"), dict):
                ns["outputs"] = {k: again({**v, "attrs": again(v["attrs"])}
                                         if isinstance(v, dict) and "attrs" in v else v)
                                 for k, v in ns["outputs"].items()}
        return ns

    def metadata(md):
        md = again(md)
        if isinstance(md, dict) and NS in md:
            md[NS] = entry(md[NS])
        return md

    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        cell["metadata"] = metadata(cell.get("metadata", {}))
        for out in cell.get("outputs", []):
            if "metadata" in out:
                out["metadata"] = metadata(out["metadata"])
    return nb


@pytest.fixture(scope="session")
def reordered() -> Callable[[dict, Callable[[list[str]], list[str]]], dict]:
    """``reordered(nb, order)``: ``nb`` with its attribute dicts holding their keys in
    ``order(keys)``, as a front end that builds the same metadata in its own order saves it."""
    return _reordered


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
