"""``[code]`` cells: in a trusted folder a real Jupyter kernel of their language
(``codekernel``); elsewhere the sandbox, and what only a kernel would allow is refused in one
line naming ``tce trust``.

A code cell is a ``Run`` like any other: its outputs are emitted as they complete (ids
``ID.n``), its execution count is recorded on the run, and a failure (an exception in the
cell, a kernel that died) is an ``[error]`` output and ``run.fail``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime.events import CodeText
from jupyter_percent_agent.runtime.run import Run

PYTHON = ("python", "py", "python3", "ipython", "ipython3")
REFUSED_IN_SANDBOX = (
    "CompileError",
    "NameError",
    "ImportError",
    "ModuleNotFoundError",
    "PermissionError",
)
"""What the sandbox says when a cell needs what only a real kernel has (an import it does
not offer, ``open``, a name from a package)."""


def output_cap(folder: Path) -> int | None:
    """The bytes one cell's outputs may take in the file (the user's ``code_output_bytes``)."""
    value = trust.bound("code_output_bytes", None, folder=folder).value
    return None if value is None else int(value)


def refuse(folder: Path, cell_id: str, what: str) -> trust.TrustError:
    """The one-line refusal for a code cell that needs a real kernel in an untrusted folder."""
    return trust.TrustError(
        f"cell {cell_id} needs a real kernel ({what}) and its folder is not trusted",
        f"to run it: tce trust {folder}",
        kind="code",
        folder=folder,
    )


async def run_code_cell(
    cell: Mapping[str, Any],
    run: Run,
    *,
    nb: Mapping[str, Any] | None,
    folder: Path,
    kernels: Any = None,
) -> None:
    """Run a ``[code]`` cell of ``nb`` (whose file is in ``folder``) into ``run``.
    ``kernels``: the session's ``codekernel.CodeKernels`` (None: one started for this cell
    and stopped after it)."""
    language = fmt.cell_language(cell, nb)
    if trust.is_trusted(folder):
        await _in_kernel(cell, run, language, folder, kernels)
        return
    if language not in PYTHON:
        raise refuse(folder, run.cell_id, f"a {language} cell runs only in a kernel")
    from jupyter_percent_agent.runtime.cells import run_in_sandbox

    # the outputs wait until the sandbox has not refused: a refused cell leaves nothing
    made: list[dict[str, Any]] = []
    prefix, _, first = run.next_output_id().rpartition(".")
    ids = (f"{prefix}.{n}" for n in range(int(first), 1 << 30))
    error = await run_in_sandbox(cell, made.append, lambda: next(ids))
    if error is not None and _refused(*error):
        raise refuse(folder, run.cell_id, "in the sandbox: " + _short(error[1]))
    for out in made:
        run.emit(out)
    if error is not None:
        run.fail(*error)


def _refused(kind: str, message: str) -> bool:
    """Whether the sandbox's error is a refusal of what a kernel allows (an import, a
    built-in such as ``open``), not the cell's own mistake (a name it never defined)."""
    if kind != "NameError":
        return kind in REFUSED_IN_SANDBOX
    import builtins
    import re

    m = re.search(r"name '(\w+)' is not defined", message)
    return m is not None and hasattr(builtins, m.group(1))


def _short(message: str) -> str:
    """The sandbox's refusal without its advice to a model: ``import is not allowed (line
    1)``, ``name 'open' is not defined (line 2)``."""
    import re

    m = re.search(r"Line (\d+): ([^:;]+)", message)
    if m:
        return f"{m.group(2).strip()} (line {m.group(1)})"
    line = message.splitlines()[0] if message else ""
    return line.split(": ", 1)[-1][:120]


async def _in_kernel(
    cell: Mapping[str, Any], run: Run, language: str, folder: Path, kernels: Any
) -> None:
    from jupyter_percent_agent import codekernel

    own = kernels is None
    if own:
        kernels = codekernel.CodeKernels(folder)
    collector = codekernel.Collector(
        run.emit,
        run.next_output_id,
        cap=output_cap(folder),
        language=language,
        on_text=lambda name, text: run.tell(CodeText(name, text)),
    )
    try:
        kernel = await kernels.get(language)
        reply = await kernel.execute(fmt.message_text(cell), collector, kernels.answer)
        collector.finish()
        count = reply.get("execution_count", collector.execution_count)
        if isinstance(count, int):
            run.counted(count)
        if reply.get("status") == "error" or collector.error is not None:
            ename, evalue = collector.error or (
                str(reply.get("ename") or "Error"),
                str(reply.get("evalue") or ""),
            )
            run.fail(ename, f"{ename}: {evalue}" if evalue else ename)
        elif reply.get("status") == "aborted":
            run.fail("Aborted", "the kernel aborted the cell")
    except asyncio.CancelledError:
        collector.finish()
        raise
    except (codekernel.KernelDied, codekernel.InputUnavailable) as exc:
        collector.finish()
        run.fail(exc.ename, str(exc))
        run.emit(fmt.error_output(exc.ename, str(exc), [], out_id=run.next_output_id()))
    finally:
        if own:
            await asyncio.shield(kernels.shutdown())
