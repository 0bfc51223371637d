"""How tests run ``tce``, and the environment of a process a test starts.

One way each: :func:`tce` in this process through click's runner (most CLI tests),
:func:`run_tce` as a real process (a test about the process: its imports, its exit, its
environment), :func:`tce_on_terminal` on a real pseudo-terminal.

A kernel, ``tce`` or ``jupyter`` started by a test gets this process's environment without the
user's own ``PERCENT_AGENT_*`` settings, the local server as its only model, no retries, no
back-off, no warm helper and litellm's bundled cost map (never the network) (:func:`model_env`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from jupyter_percent_agent.testing.openai_server import OpenAIServer


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on (yet)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def model_env(server: OpenAIServer, config_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment, ``PERCENT_AGENT_*`` removed, pointed at ``server`` with
    ``config_dir`` as the user config dir (and its ``cache`` folder as the user cache dir);
    ``extra`` added last (it may override)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERCENT_AGENT_")}
    env.update(
        {
            "PERCENT_AGENT_CONFIG_DIR": str(config_dir),
            "PERCENT_AGENT_CACHE_DIR": str(config_dir / "cache"),
            "PERCENT_AGENT_API_BASE": server.url,
            "PERCENT_AGENT_MODEL": "test-model",
            "PERCENT_AGENT_BACKOFF": "0",
            "PERCENT_AGENT_RETRIES": "0",
            "PERCENT_AGENT_TIMEOUT": "20",
            "PERCENT_AGENT_WARM": "0",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
    )
    env.update(extra)
    return env


@dataclass(frozen=True)
class TceResult:
    """What ``tce`` did in this process: its exit code, what it wrote to stdout and to stderr,
    and ``output``, both as a terminal shows them. Unpacks as ``code, out, err``."""

    exit_code: int
    stdout: str
    stderr: str
    output: str

    def __iter__(self) -> Iterator[int | str]:
        return iter((self.exit_code, self.stdout, self.stderr))


def tce(
    *args: str, input: str | None = None, env: Mapping[str, str | None] | None = None
) -> TceResult:
    """``tce ARGS`` in this process, through click's runner: ``input`` as its stdin, ``env``
    set (``None`` values unset) while it runs. An exception ``tce`` does not turn into an exit
    code is raised here, with its traceback, not kept in the result."""
    from click.testing import CliRunner

    from jupyter_percent_agent.cli import main

    result = CliRunner(env=env).invoke(main, list(args), input=input, catch_exceptions=False)
    return TceResult(result.exit_code, result.stdout, result.stderr, result.output)


def tce_command(*args: str) -> list[str]:
    """The command line of ``tce ARGS`` as the user runs it (the ``tce`` script of this
    interpreter), for a test that drives the process itself: several at once, a signal, its
    output as it comes, a limit set in the child."""
    return [str(Path(sys.executable).parent / "tce"), *args]


def run_tce(
    *args: str,
    env: Mapping[str, str],
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """``tce ARGS`` as the user runs it: the ``tce`` script of this interpreter, in ``cwd``,
    with ``env`` (all of it: nothing of this process's is added) and ``input`` as its stdin;
    its output captured as text."""
    return subprocess.run(
        tce_command(*args),
        cwd=cwd,
        env=dict(env),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tce_on_terminal(
    *args: str,
    env: Mapping[str, str],
    cwd: Path | None = None,
    answer: Callable[[bytes, int, subprocess.Popen[bytes]], bool] | None = None,
    stdin_terminal: bool = True,
    timeout: float = 60,
) -> tuple[int, str, bool]:
    """``tce ARGS`` with a real pseudo-terminal as its stdout and stderr (and stdin, unless
    ``stdin_terminal`` is false): its exit code, what the terminal received (its "\\r\\n" made
    "\\n"), and whether ``answer`` answered. ``answer(got, terminal, proc)`` sees all the output
    so far each time more arrives, until it returns True: it may type on the terminal
    (``os.write(terminal, b"n\\n")``) or signal ``proc``."""
    import pty
    import select

    main, child = pty.openpty()
    proc = subprocess.Popen(
        tce_command(*args),
        cwd=cwd,
        env=dict(env),
        stdin=child if stdin_terminal else subprocess.DEVNULL,
        stdout=child,
        stderr=child,
        close_fds=True,
    )
    os.close(child)
    got, answered = b"", answer is None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.2)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # the child closed its end
                    break
                if not data:
                    break
                got += data
                if not answered and answer is not None:
                    answered = answer(got, main, proc)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(main)
    # the terminal turns each "\n" into "\r\n" (onlcr): that "\r" is the terminal's own
    return code, got.decode("utf-8", "replace").replace("\r\n", "\n"), answered
