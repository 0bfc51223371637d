"""Main program of a sandbox worker process (one run, then exit).

Started by the parent as ``python -I -S -B -c BOOT``: it moves its protocol channel off
descriptors 0/1, sets the process-wide limits that need no job (no core files, no file
writes), imports RestrictedPython, says ``ready``, and waits for one job. Then it applies the
job's limits (address space, CPU seconds, descriptors, processes), compiles the code with the
sandbox policy, runs it (or, for a direct call, calls the one defined tool the job names), and
sends one ``done`` frame. The tools the code calls are the stubs of ``_stubs``: registry tools
over the channel, tools defined in the file compiled and run here.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import time
from typing import Any, NoReturn

from jupyter_percent_agent.outcome import Reason, RunStatus

from . import _limits
from ._protocol import ProtocolError, read_frame, write_frame

_MiB = 1 << 20


class _Channel:
    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.replies = 0  # replies read so far: every tool call says it (its "n")

    def send(self, message: dict[str, Any]) -> None:
        write_frame(self.fd_out, message)

    def recv(self) -> dict[str, Any]:
        message = read_frame(
            self.fd_in, 2 * _limits.MAX_TOOL_REPLY_BYTES + _limits.MAX_CODE_CHARS * 4
        )
        self.replies += message.get("t") == "reply"
        return message


def _finish(channel: _Channel, message: dict[str, Any]) -> NoReturn:
    try:
        channel.send({"t": "done", **message})
    finally:
        os._exit(0)


def _limit(kind: int, value: int) -> None:
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        _soft, hard = resource.getrlimit(kind)
        if hard == resource.RLIM_INFINITY or value <= hard:
            try:
                resource.setrlimit(kind, (value, hard))
            except (ValueError, OSError):
                pass  # not supported here; the parent's wall-clock kill still holds


def _address_space_now() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 256 * _MiB


def _apply_job_limits(timeout: float, memory_mb: int) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(usage.ru_utime + usage.ru_stime + timeout) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    _limit(resource.RLIMIT_AS, _address_space_now() + memory_mb * _MiB)
    _limit(resource.RLIMIT_NOFILE, 16)
    _limit(resource.RLIMIT_NPROC, 0)


def _encode_result(value: Any) -> tuple[str | None, dict[str, Any] | None]:
    from ._stubs import describe_exception

    def default(obj: Any) -> Any:
        if isinstance(obj, (set, frozenset)):
            return list(obj)
        raise TypeError(f"__result__ must be a JSON value; got a {type(obj).__name__}")

    try:
        text = json.dumps(value, default=default)
    except RecursionError:
        return None, {"type": "RecursionError", "message": "__result__ is nested too deeply"}
    except MemoryError:
        return None, {"type": "MemoryError", "message": "__result__ is too large to serialize"}
    except (TypeError, ValueError) as exc:
        return None, {"type": type(exc).__name__, "message": describe_exception(exc)}
    return text, None


def run_job(channel: _Channel, job: dict[str, Any]) -> NoReturn:
    """Compile and run one job, then send ``done`` and exit."""
    from ._facades import build_facades
    from ._names import TOOL_ERROR
    from ._policy import FILENAME, RESULT_NAME, compile_code
    from ._runtime import Namespace
    from ._stubs import ToolError, defined_stub, describe_exception, error_line, registry_stub

    code_text = job.get("code")
    if not isinstance(code_text, str):
        _finish(
            channel,
            {"status": RunStatus.ERROR,
             "error": {"type": "ProtocolError", "message": "no code in job"}},
        )
    _apply_job_limits(float(job.get("timeout", 10.0)), int(job.get("memory_mb", 512)))

    def overflow(text: str) -> NoReturn:
        _finish(channel, {
            "status": RunStatus.ERROR, "reason": Reason.OUTPUT_LIMIT, "stdout": text,
            "error": {"type": "OutputLimit",
                      "message": f"printed output exceeded {_limits.MAX_OUTPUT_CHARS} characters"},
        })  # fmt: skip

    call = job.get("call")
    code, error = (None, None) if call is not None else compile_code(code_text)
    if error is not None:
        _finish(channel, {"status": RunStatus.ERROR, "error": error})

    registry = {n: registry_stub(n, channel) for n in job.get("tools", [])
                if isinstance(n, str) and n.isidentifier() and not n.startswith("_")}  # fmt: skip

    def output(text: str) -> None:
        channel.send({"t": "out", "text": text})

    namespace = Namespace(_limits.MAX_OUTPUT_CHARS, overflow, output)

    def tool_globals() -> dict[str, Any]:  # a defined tool's own namespace
        return namespace.globals({**build_facades(), **registry, TOOL_ERROR: ToolError})

    defined = {str(d["name"]): defined_stub(d, channel, tool_globals)
               for d in job.get("defined", []) if isinstance(d, dict)}  # fmt: skip
    glb = namespace.globals({**build_facades(), **registry, **defined, TOOL_ERROR: ToolError})
    try:
        if call is not None:  # one defined tool called directly: its data is the result
            glb[RESULT_NAME] = defined[call["name"]](**call["kwargs"])
        else:
            exec(code, glb)
    except BaseException as exc:  # the code may raise anything, SystemExit included
        error = {"type": type(exc).__name__, "message": describe_exception(exc),
                 "line": error_line(exc.__traceback__, FILENAME)}  # fmt: skip
        _finish(channel, {**_failed(isinstance(exc, MemoryError)),
                          "stdout": namespace.printer.text(), "error": error})
    text, error = _encode_result(glb.get(RESULT_NAME))
    stdout = namespace.printer.text()
    if error is not None:
        _finish(channel, {**_failed(error["type"] == "MemoryError"), "stdout": stdout,
                          "error": error})
    if len(text) > _limits.MAX_RESULT_BYTES:  # ASCII JSON: characters are bytes
        _finish(
            channel,
            {
                "status": RunStatus.ERROR,
                "reason": Reason.OUTPUT_LIMIT,
                "stdout": stdout,
                "error": {
                    "type": "ResultTooLarge",
                    "message": f"__result__ exceeds {_limits.MAX_RESULT_BYTES} bytes of JSON",
                },
            },
        )
    _finish(channel, {"status": RunStatus.OK, "stdout": stdout, "result_json": text})


def _failed(out_of_memory: bool) -> dict[str, Any]:
    """A failed run's status (and reason: memory, when the interpreter ran out of it)."""
    if out_of_memory:
        return {"status": RunStatus.ERROR, "reason": Reason.MEMORY}
    return {"status": RunStatus.ERROR}


def main() -> None:
    """Entry point of a worker process."""
    channel = _Channel(os.dup(0), os.dup(1))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
    # Imported before the job so that their cost is paid while the worker waits in the pool.
    from . import _facades, _policy, _runtime, _stubs  # noqa: F401

    _policy.compile_code("__result__ = [x for x in range(1)]\n")
    channel.send({"t": "ready", "pid": os.getpid(), "time": time.time()})
    try:
        job = channel.recv()
    except (EOFError, ProtocolError, OSError):
        os._exit(0)
    if job.get("t") != "job":
        os._exit(0)
    try:
        run_job(channel, job)
    except BaseException as exc:  # our own code failed (out of memory while reporting...)
        failed = _failed(isinstance(exc, MemoryError))
        del exc
        _finish(
            channel,
            {
                **failed,
                "error": {"type": "InternalError", "message": "the sandbox failed while reporting"},
            },
        )
