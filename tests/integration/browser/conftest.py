"""Fixtures of the browser tests: a real `jupyter lab` server and Debian's Chromium.

The server runs as a subprocess on 127.0.0.1 with a temporary root directory, its own
config, data, runtime, settings and workspaces directories (so nothing the user set up
leaks in), no token and no password. Its agent kernels talk to the project's local
OpenAI-compatible server (`lab_model`), started before it. A second local server, the
`beacon`, logs every request it gets: tests point "remote" media and attack payloads at it
and assert what the page fetched. Chromium is driven by Python Playwright, which never
downloads a browser here: it launches `/usr/bin/chromium` (or `$CHROMIUM`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from jupyter_percent_agent.testing.environment import free_port
from jupyter_percent_agent.testing.openai_server import OpenAIServer

from .labpage import PNG

os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
START_TIMEOUT = 180.0  # seconds for `jupyter lab` to answer /api/status on a busy machine


@dataclass
class LabServer:
    """A running `jupyter lab`: where it listens and which directory it serves."""

    url: str
    root: Path
    log: Path
    settings: Path
    user_config: Path  # the server's (and its kernels') PERCENT_AGENT_CONFIG_DIR

    def log_tail(self, lines: int = 60) -> str:
        """The end of the server's log, for failure messages."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/status", timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@dataclass
class Beacon:
    """A local HTTP server that records the path of every request it gets."""

    url: str
    hits: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def seen(self, prefix: str = "/") -> list[str]:
        """The paths requested so far that start with `prefix`."""
        with self.lock:
            return [path for path in self.hits if path.startswith(prefix)]

    def clear(self) -> None:
        with self.lock:
            self.hits.clear()


@pytest.fixture(scope="package")
def beacon() -> Iterator[Beacon]:
    """The logging server on 127.0.0.1 (cleared before each test that uses it)."""
    state = Beacon(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def _answer(self) -> None:
            with state.lock:
                state.hits.append(self.path)
            # An image gets a real PNG, so that a loaded image loads.
            body = PNG if self.path.split("?")[0].endswith(".png") else b""
            self.send_response(200 if body else 204)
            self.send_header("Content-Type", "image/png" if body else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()
            with contextlib.suppress(OSError):  # the page may drop what it asked for
                self.wfile.write(body)

        do_GET = do_POST = do_HEAD = _answer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, name="beacon", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="package")
def lab_model() -> Iterator[OpenAIServer]:
    """The local model server the lab's agent kernels call (reset before each test)."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def model(lab_model: OpenAIServer) -> Iterator[OpenAIServer]:
    """The lab's model server with an empty script and request log."""
    lab_model.reset()
    yield lab_model
    lab_model.reset()


def _rtc_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("jupyter_server_ydoc") is not None


@contextlib.contextmanager
def _lab(base: Path, lab_model: OpenAIServer, *, rtc: bool,
         first_run: bool = False, base_url: str = "/") -> Iterator[LabServer]:
    """`jupyter lab` serving ``base/root``, its kernels answering through the local model
    server, with real-time collaboration (jupyter-collaboration) on or off. ``first_run``:
    no key, no model and no server of the user's in the environment; OpenAI's endpoint is the
    local model server (``OPENAI_BASE_URL``), so a call needs a stored key. ``base_url``: the
    server's own (JupyterHub serves a user's at ``/user/NAME/``)."""
    root = base / "root"
    root.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERCENT_AGENT_")
           and not (first_run and k.endswith(("_API_KEY", "_API_BASE", "_BASE_URL")))}
    # Agent kernels started by this server answer through the local model server, at once.
    env.update(
        {
            "PERCENT_AGENT_API_BASE": lab_model.url,
            "PERCENT_AGENT_MODEL": "test-model",
            "PERCENT_AGENT_RETRIES": "0",
            "PERCENT_AGENT_BACKOFF": "0",
            "PERCENT_AGENT_TIMEOUT": "30",
            "PERCENT_AGENT_WARM": "0",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            # the user's config (trusted folders): its own, never the real user's
            "PERCENT_AGENT_CONFIG_DIR": str(base / "user-config"),
        }
    )
    if first_run:
        del env["PERCENT_AGENT_API_BASE"], env["PERCENT_AGENT_MODEL"]
        env["OPENAI_BASE_URL"] = lab_model.url
    for name, sub in [
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
    ]:
        (base / sub).mkdir()
        env[name] = str(base / sub)
    log = base / "server.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.allow_root=True",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=",
        "--LabServerApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        # `window.jupyterapp`: tests read the document's state (its model's `dirty`) from it.
        "--LabApp.expose_app_in_browser=True",
        f"--ServerApp.base_url={base_url}",
    ]
    if _rtc_installed() and not rtc:
        command.append("--YDocExtension.disable_rtc=True")
    url = f"http://127.0.0.1:{port}{base_url.rstrip('/')}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = LabServer(url=url, root=root, log=log, settings=base / "settings",
                       user_config=base / "user-config")
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ready(url):
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{server.log_tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not answer in {START_TIMEOUT}s:\n{server.log_tail()}")
            time.sleep(0.5)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture(scope="package")
def lab_server(
    tmp_path_factory: pytest.TempPathFactory, lab_model: OpenAIServer
) -> Iterator[LabServer]:
    """`jupyter lab` serving a fresh temporary directory, stopped at the end (no real-time
    collaboration: a single user, as most people work)."""
    with _lab(tmp_path_factory.mktemp("lab"), lab_model, rtc=False) as server:
        yield server


@pytest.fixture(scope="package")
def first_run_server(
    tmp_path_factory: pytest.TempPathFactory, lab_model: OpenAIServer
) -> Iterator[LabServer]:
    """`jupyter lab` as a new user starts it: no API key and no model in its environment."""
    with _lab(tmp_path_factory.mktemp("first-run"), lab_model, rtc=False,
              first_run=True) as server:
        yield server


@pytest.fixture(scope="package")
def hub_server(
    tmp_path_factory: pytest.TempPathFactory, lab_model: OpenAIServer
) -> Iterator[LabServer]:
    """`jupyter lab` under a base URL, as JupyterHub serves a user's: ``/user/alice/``."""
    with _lab(tmp_path_factory.mktemp("hub"), lab_model, rtc=False,
              base_url="/user/alice/") as server:
        yield server


@pytest.fixture(scope="package")
def collab_server(
    tmp_path_factory: pytest.TempPathFactory, lab_model: OpenAIServer
) -> Iterator[LabServer]:
    """`jupyter lab` with jupyter-collaboration's real-time collaboration on."""
    if not _rtc_installed():
        if os.environ.get("CI"):
            pytest.fail("jupyter-collaboration is not installed: CI must install the test extras")
        pytest.skip("jupyter-collaboration is not installed")
    with _lab(tmp_path_factory.mktemp("collab"), lab_model, rtc=True) as server:
        yield server


# Package scope: Playwright's sync API owns this thread's event loop while it runs, so it
# must stop before the rest of the suite (pytest-jupyter's fixtures) runs.
@pytest.fixture(scope="package")
def browser() -> Iterator[object]:
    """Debian's Chromium through Playwright; skipped locally when it is not installed."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        if os.environ.get("CI"):
            pytest.fail(f"Chromium not found at {CHROMIUM}: CI must install it (make setup)")
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _new_page(browser: object) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    context.set_default_timeout(60_000)
    lab_page = context.new_page()
    try:
        yield lab_page
    finally:
        with contextlib.suppress(Exception):
            context.close()


@pytest.fixture
def page(browser: object, lab_server: LabServer) -> Iterator[object]:
    """A fresh JupyterLab page (new browser context, workspace reset), closed after the test."""
    yield from _new_page(browser)


@pytest.fixture
def hub_page(browser: object, hub_server: LabServer) -> Iterator[object]:
    """A fresh page of the lab under JupyterHub's base URL."""
    yield from _new_page(browser)


@pytest.fixture
def first_run_page(browser: object, first_run_server: LabServer) -> Iterator[object]:
    """A fresh page of the first-run lab."""
    yield from _new_page(browser)


@pytest.fixture(autouse=True)
def _fresh_start(request: pytest.FixtureRequest) -> None:
    """Each test that uses the lab starts from an empty root folder, and a clear beacon."""
    if "beacon" in request.fixturenames:
        request.getfixturevalue("beacon").clear()
    if "lab_server" not in request.fixturenames:
        return
    root = request.getfixturevalue("lab_server").root
    for entry in Path(root).iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)  # a toolbox/ left by one test would change the next
        else:
            entry.unlink()


# pytest-jupyter's autouse fixtures are overridden here: Playwright's sync API runs its own
# event loop in this thread, which they would try to close. These tests talk to a real
# `jupyter lab` process instead of an in-process server, so there is nothing to clean up.
@pytest.fixture(autouse=True)
def jp_asyncio_loop() -> Iterator[None]:
    yield None


@pytest.fixture(autouse=True)
def jp_server_cleanup() -> Iterator[None]:
    yield None
