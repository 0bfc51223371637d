"""Checks across the documents of a SOP folder: references, cycles, tools, agents.

Pure functions over parsed documents; ``sop.load_sop`` runs them after reading the folder.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from jupyter_percent_agent.tasks.documents import LLM, Problem, TaskDocument

DEFAULT_AGENT = "default"


def reference_problems(docs: Mapping[str, TaskDocument]) -> list[Problem]:
    """``plan_steps`` and ``error_routing`` entries naming no document."""
    out = []
    for doc in docs.values():
        for i, step in enumerate(doc.plan_steps):
            if step not in docs:
                out.append(Problem(doc.path, f"plan_steps[{i}]", doc.line(f"plan_steps[{i}]"),
                                   f"no document {step!r}{_near(step, docs)}"))
        for etype, target in doc.on_failure.routes.items():
            if target not in docs:
                out.append(Problem(doc.path, f"error_routing.{etype}",
                                   doc.line(f"error_routing.{etype}"),
                                   f"no document {target!r}{_near(target, docs)}"))
    return out


def _near(name: str, docs: Mapping[str, TaskDocument]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(docs), n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (no {name}.md in the folder)"


def cycles(docs: Mapping[str, TaskDocument]) -> list[list[str]]:
    """Each cycle of ``plan_steps`` once, as the list of task_ids around it (first repeated
    last), starting from its smallest id."""
    found: dict[tuple[str, ...], list[str]] = {}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(tid: str) -> None:
        state[tid] = 1
        path.append(tid)
        for step in docs[tid].plan_steps if tid in docs else ():
            if step not in docs:
                continue
            if state.get(step) == 1:
                loop = path[path.index(step):]
                start = loop.index(min(loop))
                ring = loop[start:] + loop[:start]
                found.setdefault(tuple(ring), [*ring, ring[0]])
            elif state.get(step) is None:
                visit(step)
        path.pop()
        state[tid] = 2

    for tid in sorted(docs):
        if state.get(tid) is None:
            visit(tid)
    return list(found.values())


def cycle_problems(docs: Mapping[str, TaskDocument]) -> list[Problem]:
    out = []
    for ring in cycles(docs):
        doc = docs[ring[0]]
        at = doc.plan_steps.index(ring[1]) if ring[1] in doc.plan_steps else 0
        out.append(Problem(doc.path, f"plan_steps[{at}]", doc.line(f"plan_steps[{at}]"),
                           "cycle of plan_steps: " + " -> ".join(ring)))
    return out


def tool_problems(docs: Mapping[str, TaskDocument], tools: Collection[str]) -> list[Problem]:
    """``tool_id``s that are neither ``LLM`` nor a tool of the registry."""
    known = ", ".join([LLM, *sorted(tools)])
    return [Problem(doc.path, "tool.tool_id", doc.line("tool.tool_id"),
                    f"unknown tool_id {doc.tool_id!r} (known: {known})")
            for doc in docs.values()
            if doc.tool_id is not None and doc.tool_id != LLM and doc.tool_id not in tools]


def agent_problems(docs: Mapping[str, TaskDocument], agents: Collection[str]) -> list[Problem]:
    """``agent:`` naming no agent of ``_agents.yaml``, or set on a step that calls no model."""
    out = []
    names = ", ".join([*sorted(agents), DEFAULT_AGENT])
    for doc in docs.values():
        if doc.agent is None or doc.is_plan:
            continue
        if not doc.is_llm:
            out.append(Problem(doc.path, "agent", doc.line("agent"),
                               f"has no effect: the step calls the tool {doc.tool_id!r}, "
                               "not the LLM"))
        elif doc.agent not in agents and doc.agent != DEFAULT_AGENT:
            out.append(Problem(doc.path, "agent", doc.line("agent"),
                               f"unknown agent {doc.agent!r} (known: {names}; agents are "
                               "defined in the folder's _agents.yaml)"))
    return out


def used_by(docs: Mapping[str, TaskDocument], task_id: str) -> list[tuple[str, str]]:
    """Where ``task_id`` is used: (document, how) for plans that list it and validators and
    steps that route an error type to it."""
    out = []
    for doc in sorted(docs.values(), key=lambda d: d.task_id):
        for i, step in enumerate(doc.plan_steps):
            if step == task_id:
                out.append((doc.task_id, f"plan_steps[{i}]"))
        for etype, target in doc.on_failure.routes.items():
            if target == task_id:
                out.append((doc.task_id, f"error_routing[{etype!r}]"))
    return out
