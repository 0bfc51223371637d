"""A small persistent helper process that keeps litellm imported, so ``tce chat`` starts fast.

``import litellm`` costs about 3 s here, far more than the rest of a chat. The first
``tce chat`` starts this helper in the background (its own session, so Ctrl-C in the
terminal does not reach it) and makes its own call in-process; later runs hand their model
call (a ``CallSpec``, plain JSON) to the helper over a Unix socket and read the streamed
deltas back (``request``, used by ``transport.HelperTransport``). ``PERCENT_AGENT_WARM=0``
turns it off.

Helpers are bounded: one per interpreter and key-relevant environment (the variables that
can change a model call: keys, endpoints, proxies, certificates, litellm's and this
package's settings; not the working folder or the terminal), at most
``PERCENT_AGENT_WARM_MAX`` (default 2) at once (starting another stops the one idle the
longest; when all are busy none is started and the call is made in-process), and each exits
after ``PERCENT_AGENT_WARM_IDLE`` seconds (default 900) without work. ``tce helper status``
lists them (``running``), ``tce helper stop`` stops them (``stop``).

The socket lives in the user's private folder (``trust.private_dir``, mode 0700, checked
before use) and its name is a hash of that environment, the interpreter and this package's
code, so a helper never answers for a different set of keys, ``api_base`` or version.
Closing the connection cancels the call in the helper.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_percent_agent import safe_start
from jupyter_percent_agent.litellm_setup import LITELLM_ENV_DEFAULTS, LITELLM_ENV_FORCED
from jupyter_percent_agent.runtime.events import Delta, Event, OnEvent, Reasoning, Retry
from jupyter_percent_agent.runtime.models import CallResult, CallSpec

_RELEVANT = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "API", "BASE", "URL",
             "ENDPOINT", "PROXY", "SSL", "CERT", "CA_BUNDLE", "LITELLM", "PERCENT_AGENT",
             "OPENAI", "ANTHROPIC", "AZURE", "AWS", "GOOGLE", "VERTEX", "GEMINI", "OLLAMA",
             "HF_", "HUGGINGFACE", "REGION", "PROJECT", "HOME", "XDG_CONFIG", "TMPDIR",
             "PYTHON", "TIKTOKEN", "HTTP")
"""Parts of the names of the variables that can change what a model call does (a key, an
endpoint, a proxy, a certificate, a setting): only these choose the helper. Another
terminal, another working folder, another shell prompt share it."""

_VOLATILE = ("PWD", "OLDPWD", "SHLVL", "_", "COLUMNS", "LINES", "TERM", "PS1", "PS2",
             "PYTEST_CURRENT_TEST", "PERCENT_AGENT_WARM_IDLE")
_VOLATILE_PREFIXES = ("JPY_",)
"""Set per kernel by Jupyter (the notebook's path, the parent's pid): every kernel of the same
environment shares one helper."""


def _folder() -> Path:
    from jupyter_percent_agent import trust

    try:
        return trust.private_dir()
    except trust.TrustError:  # not private: ``_private`` refuses it below, no helper is used
        return Path(tempfile.gettempdir()) / f"percent-agent-{os.getuid()}"


def _private(folder: Path) -> bool:
    try:
        st = folder.stat()
    except FileNotFoundError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IRWXG | stat.S_IRWXO)


def socket_path(env: dict[str, str] | None = None) -> Path:
    """Where the helper for this environment listens.

    The environment is taken as it is once litellm is imported (``import_litellm`` fills in
    ``LITELLM_ENV_DEFAULTS`` and sets ``LITELLM_ENV_FORCED``): a ``tce`` that has not imported
    it yet looks for the same socket as the helper, which has.
    """
    env = {**LITELLM_ENV_DEFAULTS, **(os.environ if env is None else env), **LITELLM_ENV_FORCED}
    h = hashlib.sha256()
    for key in sorted(env):
        if key not in _VOLATILE and not key.startswith(_VOLATILE_PREFIXES) \
                and any(part in key.upper() for part in _RELEVANT):
            h.update(f"{key}={env[key]}\0".encode())
    # the environment's interpreter, however it was named (python, python3, a relative path)
    h.update(f"{sys.prefix}\0{os.path.realpath(sys.executable)}".encode())
    here = Path(__file__).resolve().parent
    for name in ("models.py", "direct.py", "routing.py", "helper.py", "events.py"):
        with contextlib.suppress(OSError):
            h.update(str((here / name).stat().st_mtime_ns).encode())
    return _folder() / f"litellm-{h.hexdigest()[:16]}.sock"


def enabled() -> bool:
    """``PERCENT_AGENT_WARM`` (default on)."""
    from jupyter_percent_agent.envflags import env_flag

    return env_flag("PERCENT_AGENT_WARM", True)


_WIRE = {Delta: "delta", Reasoning: "reasoning", Retry: "retry"}
_FROM_WIRE = {"delta": Delta, "reasoning": Reasoning, "retry": Retry}


def _to_wire(event: Event) -> dict[str, str] | None:
    kind = _WIRE.get(type(event))
    text = getattr(event, "text", None) if kind != "retry" else getattr(event, "reason", None)
    return {"kind": kind, "text": text} if kind and isinstance(text, str) else None


def spawn(path: Path) -> None:
    """Start a helper for ``path`` in the background, detached from this terminal."""
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    # -P and a cleaned PYTHONPATH: nothing of the folder tce runs in is ever imported here
    subprocess.Popen(safe_start.python_command("jupyter_percent_agent.runtime.helper", str(path)),
                     env=safe_start.safe_env(), stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)


STARTING = 60.0
"""Seconds a helper may take to start listening; an older marker is a helper that died."""


def limit() -> int:
    """How many helpers may run at once (``PERCENT_AGENT_WARM_MAX``, default 2, at least 1)."""
    try:
        return max(1, int(os.environ.get("PERCENT_AGENT_WARM_MAX", "2")))
    except ValueError:
        return 2


def _start(path: Path) -> None:
    """Start a helper unless one is already starting (a marker younger than a minute), making
    room under the cap first: the helper idle the longest stops; when every helper is busy,
    none is started (this call is made in-process)."""
    with contextlib.suppress(OSError):
        marker = path.with_suffix(".starting")
        if not marker.exists() or time.time() - marker.stat().st_mtime > STARTING:
            if not _make_room(path):
                return
            _folder().mkdir(mode=0o700, parents=True, exist_ok=True)
            marker.touch()
            spawn(path)


def _make_room(path: Path) -> bool:
    """Stop idle helpers (the longest idle first) until one more fits under the cap."""
    others = [h for h in running() if h["socket"] != str(path)]
    starting = [m for m in _folder().glob("litellm-*.starting")
                if m.with_suffix(".sock") != path
                and time.time() - m.stat().st_mtime <= STARTING]
    excess = len(others) + len(starting) + 1 - limit()
    for info in sorted((h for h in others if not h["active"]), key=lambda h: h["last_used"]):
        if excess <= 0:
            break
        if stop(Path(info["socket"])):
            excess -= 1
    return excess <= 0


def _ask(path: Path, request: dict[str, Any], timeout: float = 5.0) -> dict[str, Any] | None:
    """One short exchange with the helper at ``path`` (None when it does not answer)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(1 << 16)
                if not chunk:
                    return None
                data += chunk
        answer = json.loads(data)
        return answer if isinstance(answer, dict) else None
    except (OSError, ValueError):
        return None


def running() -> list[dict[str, Any]]:
    """The helpers of this user that answer: socket, pid, interpreter, when started and last
    used (epoch seconds), busy or not, resident memory (bytes, None when unknown). A socket
    nobody answers on (its helper was killed) is removed."""
    folder = _folder()
    if not _private(folder):
        return []
    found = []
    for sock in sorted(folder.glob("litellm-*.sock")):
        info = _ask(sock, {"status": True})
        if info is None:
            if _dead(sock):  # its helper was killed: nobody listens
                with contextlib.suppress(OSError):
                    sock.unlink()
            continue  # (one that listens but is too busy to answer is left alone)
        info["socket"] = str(sock)
        info["rss"] = _rss(int(info.get("pid", 0)))
        found.append(info)
    return found


def _dead(sock: Path) -> bool:
    """Whether nobody listens on ``sock`` (connecting is refused), as opposed to a helper too
    busy to answer in time."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1.0)
            probe.connect(str(sock))
    except (ConnectionRefusedError, FileNotFoundError):
        return True
    except OSError:
        return False
    return False


def _rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def stop(path: Path | None = None) -> bool:
    """Ask the helper at ``path`` (this environment's by default) to stop; it finishes the
    call it is making first. True when it said it will."""
    answer = _ask(path or socket_path(), {"stop": True})
    return bool(answer and answer.get("stopping"))


def stop_all() -> int:
    """Stop every helper of this user; how many said they will."""
    return sum(stop(Path(h["socket"])) for h in running())


def start() -> None:
    """Start this environment's helper in the background, unless it runs or is starting."""
    path = socket_path()
    if not (_private(path.parent) and path.exists()):
        _start(path)


async def wait(timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for a helper that is starting to listen. False when
    none is starting (or it gave up: a helper removes its marker when it exits)."""
    path = socket_path()
    marker = path.with_suffix(".starting")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return True
        try:
            if time.time() - marker.stat().st_mtime > STARTING:  # it died before serving
                return False
        except OSError:  # no marker: none is starting
            return False
        await asyncio.sleep(0.1)
    return path.exists()


async def request(spec: CallSpec, on_event: OnEvent) -> CallResult | None:
    """The call made by a running helper, or None when there is none (one is then started
    for next time)."""
    path = socket_path()
    if not _private(path.parent) or not path.exists():
        _start(path)
        return None
    try:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=2**24)
    except OSError:  # a stale socket: its helper was killed
        with contextlib.suppress(OSError):
            path.unlink()
        _start(path)
        return None
    streamed = False
    try:
        writer.write(json.dumps(spec.to_json()).encode() + b"\n")
        await writer.drain()
        while True:
            line = await reader.readline()
            if not line:  # the helper went away: the caller calls in-process
                if streamed:
                    on_event(Retry("the warm helper went away; calling in-process"))
                return None
            msg = json.loads(line)
            if "result" in msg:
                return CallResult(**msg["result"])
            streamed = True
            kind = _FROM_WIRE.get(msg.get("kind"))
            if kind is not None:
                on_event(kind(msg["text"]))
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


def count(model: str, messages: list[dict[str, Any]]) -> list[int] | None:
    """Token counts of each message from a running helper (None when there is none). A
    short blocking exchange, so it can be made from synchronous code."""
    path = socket_path()
    if not _private(path.parent) or not path.exists():
        return None
    answer = _ask(path, {"count": {"model": model, "messages": messages}}, timeout=60)
    if answer is None:
        return None
    try:
        counts = answer["counts"]
        return [int(c) for c in counts] if len(counts) == len(messages) else None
    except (ValueError, KeyError):
        return None


# -- the helper process ------------------------------------------------------------------

async def _serve(path: Path, idle: float) -> None:
    from jupyter_percent_agent.runtime import models

    # what the first call would load besides litellm, loaded before anyone waits on it
    models.prewarm()
    last = time.monotonic()
    started = last_used = time.time()
    active = 0
    stopping = asyncio.Event()

    async def work(request: dict[str, Any], reader: asyncio.StreamReader,
                   writer: asyncio.StreamWriter) -> None:
        if "count" in request:
            counts = models.count_tokens(request["count"]["model"],
                                         request["count"]["messages"])
            writer.write(json.dumps({"counts": counts}).encode() + b"\n")
            await writer.drain()
            return
        spec = CallSpec(**request)

        def on_event(event: Event) -> None:
            wire = _to_wire(event)
            if wire is not None:
                writer.write(json.dumps(wire).encode() + b"\n")

        call = asyncio.ensure_future(models.complete(spec, on_event))
        gone = asyncio.ensure_future(reader.read())  # EOF = the client gave up
        done, _ = await asyncio.wait({call, gone}, return_when=asyncio.FIRST_COMPLETED)
        if call in done:
            gone.cancel()
            writer.write(json.dumps({"result": call.result().to_json()}).encode() + b"\n")
            await writer.drain()
        else:
            call.cancel()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal last, active, last_used
        try:
            line = await reader.readline()
            if not line:
                return
            request = json.loads(line)
            if "status" in request or "stop" in request:  # not work: the idle clock runs on
                if "stop" in request:
                    stopping.set()
                writer.write(json.dumps({
                    "pid": os.getpid(), "interpreter": os.path.realpath(sys.executable),
                    "started": started, "last_used": last_used, "active": active,
                    "idle_limit": idle, "stopping": stopping.is_set()}).encode() + b"\n")
                await writer.drain()
                return
            active += 1
            last_used = time.time()
            try:
                await work(request, reader, writer)
            finally:
                active -= 1
                last = time.monotonic()
        except (ConnectionError, json.JSONDecodeError, TypeError):
            pass
        finally:
            writer.close()

    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = await asyncio.start_unix_server(handle, str(path), limit=2**24)
    os.chmod(path, 0o600)
    with contextlib.suppress(FileNotFoundError):
        path.with_suffix(".starting").unlink()
    async with server:
        while active or (not stopping.is_set() and time.monotonic() - last < idle):
            if stopping.is_set():  # the call under way finishes first
                await asyncio.sleep(0.1)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=min(5.0, idle))
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else socket_path()
    idle = float(os.environ.get("PERCENT_AGENT_WARM_IDLE", 900))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # clean up the socket on kill
    try:
        asyncio.run(_serve(path, idle))
    finally:
        for leftover in (path, path.with_suffix(".starting")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


if __name__ == "__main__":
    main()
