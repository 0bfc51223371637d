"""Task documents (seed 003): plan / execute / validate / error_handler workflows from a SOP
folder, run over one JSON context, each run written as a message file.

    from jupyter_percent_agent.tasks import load_sop, run_task

    sop = load_sop("sop/")                     # every document, checked; sop.problems
    result = run_task(sop, "blog/generate_blog", {"标题": "春天", "用户原始输入": "..."})
    result.status, result.context, result.transcript

    with Index.open("sop/") as ix:              # the exact and semantic index
        ix.search("检查提纲是否合格", k=3)

``arun_task`` is the same for code inside an event loop (Jupyter); ``resume_task`` continues a
killed run from its transcript; ``run_task_cell`` runs a ``[task]`` cell for the agent kernel.
See ``docs/tasks.md``. Importing this package imports nothing heavy: names load on first use.
"""

from __future__ import annotations

from jupyter_percent_agent.lazy import lazy_getattr

_NAMES = {
    "load_sop": "sop", "Sop": "sop", "SopError": "sop",
    "Problem": "documents", "TaskDocument": "documents",
    "run_task": "api", "arun_task": "api", "resume_task": "api", "aresume_task": "api",
    "TaskResult": "state", "StepInfo": "state",
    "run_inputs": "batch",
    "run_task_cell": "cell",
    "Index": "index", "pick_plan": "index",
}

__all__ = sorted(_NAMES)

__getattr__ = lazy_getattr(__name__, _NAMES)
