"""A SOP folder: its task documents, its agents (``_agents.yaml``), and everything wrong in it.

``load_sop`` reads the whole folder and checks it at once (every problem, not the first), so a
run can refuse to start before any model is called. Reading is the only I/O here; parsing and
checking are in ``documents`` and ``check``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.errors import Kind, PercentAgentError
from jupyter_percent_agent.tasks import adapter, check
from jupyter_percent_agent.tasks.documents import (
    Problem,
    TaskDocument,
    document_files,
    parse_document,
)
from jupyter_percent_agent.tasks.safe_yaml import YamlError, load_with_lines

AGENTS_FILE = "_agents.yaml"


class SopError(PercentAgentError, ValueError):
    """A SOP folder (or a task in it) that cannot run; ``problems`` lists every reason."""

    error_kind = Kind.BAD_FILE

    def __init__(self, problems: list[Problem], root: Path | None = None) -> None:
        self.problems = problems
        self.root = root
        head = f"{root}: " if root is not None else ""
        n = len(problems)
        more = f" (and {n - 1} more)" if n > 1 else ""
        self.reason = (f"{head}{n} problem{'s' if n != 1 else ''}; nothing was run: "
                       f"{problems[0] if problems else ''}{more}")
        super().__init__(f"{head}{n} problem{'s' if n != 1 else ''}:\n"
                         + "\n".join(f"  {p}" for p in problems))


@dataclass
class Sop:
    """The documents of a SOP folder by ``task_id``, its agents, tools and problems."""

    root: Path
    documents: dict[str, TaskDocument] = field(default_factory=dict)
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    tools: frozenset[str] = frozenset()
    problems: list[Problem] = field(default_factory=list)

    def __getitem__(self, task_id: str) -> TaskDocument:
        return self.documents[task_id]

    def __contains__(self, task_id: object) -> bool:
        return task_id in self.documents

    @property
    def base_dir(self) -> Path:
        """The folder the SOP folder is in: ``toolbox/`` and ``runs/`` are found there."""
        return self.root.parent

    def used_by(self, task_id: str) -> list[tuple[str, str]]:
        return check.used_by(self.documents, task_id)

    def reachable(self, task_id: str) -> list[TaskDocument]:
        """The documents running ``task_id`` may run: it, its plan steps and error routes,
        followed; every document of the folder when one of them may replan (the planner
        chooses from the folder)."""
        seen: dict[str, TaskDocument] = {}
        todo = [task_id]
        while todo:
            doc = self.documents.get(todo.pop())
            if doc is None or doc.task_id in seen:
                continue
            if doc.on_failure.replan:
                return list(self.documents.values())
            seen[doc.task_id] = doc
            todo.extend([*doc.plan_steps, *doc.on_failure.routes.values()])
        return list(seen.values())

    def calls_model(self, task_id: str) -> bool:
        """Whether running ``task_id`` may call a model: an LLM step among the documents it
        can reach (plan steps, error routes) that no external agent (ACP) answers, or a
        replan."""
        def external(name: str) -> bool:
            props = self.agents.get(name)
            return isinstance(props, dict) and bool(props.get("acp"))

        return any((d.is_llm and not external(d.agent or "default")) or d.on_failure.replan
                   for d in self.reachable(task_id))

    def lowered_limits(self) -> list[str]:
        """The budgets this folder asks for that the trust rules lower (retries of its
        documents, its agents' numbers), each as ``WHO: BUDGET (asked N; RULE)``."""
        from jupyter_percent_agent import trust

        out = []
        for doc in self.documents.values():
            retries = trust.bound("retries", doc.on_failure.retry, folder=self.root)
            if retries.lowered:
                out.append(f"{doc.task_id}: {retries.describe()}")
        for name, budget in adapter.agent_limits(self.agents, self.base_dir):
            out.append(f"agent {name}: {budget}")
        return out

    def raise_problems(self) -> None:
        if self.problems:
            raise SopError(self.problems, self.root)


def load_sop(folder: str | os.PathLike[str], *, tools: bool = True, real: bool = False
             ) -> Sop:
    """Read and check every document of ``folder``. Problems are collected in
    ``sop.problems`` (nothing is raised for them); ``tools=False`` skips looking up tool
    ids. ``FileNotFoundError`` when the folder does not exist. ``real=True``: ``folder`` is
    a real path a check returned (``trust.resolve_inside``), used as it is.

    Every document is read as lying in the folder's real path, opened without following a
    link (``format.opening.open_real``): a folder along the way swapped for a link since is refused,
    and nothing from outside the folder is read."""
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    sop = Sop(root=root)
    real_root = os.fspath(folder) if real else os.path.realpath(root)
    for path in document_files(Path(real_root)):
        rel = path.relative_to(real_root).as_posix()
        try:  # as a message file is read: no link out of the folder, no FIFO or device
            text = fmt.read_text(path, inside=real_root)
        except (OSError, fmt.FormatError) as exc:
            sop.problems.append(Problem(rel, "", None, f"cannot be read: {exc}"))
            continue
        doc, problems = parse_document(text, rel)
        sop.problems.extend(problems)
        if doc is not None:
            sop.documents[doc.task_id] = doc
    sop.agents, agent_problems = read_agents(Path(real_root))
    sop.problems.extend(agent_problems)
    docs = sop.documents
    sop.problems.extend(check.reference_problems(docs))
    sop.problems.extend(check.cycle_problems(docs))
    sop.problems.extend(check.agent_problems(docs, sop.agents))
    if tools and any(d.tool_id not in (None, "LLM") for d in docs.values()):
        names, tool_problems = adapter.tool_names(sop.base_dir)
        sop.tools = frozenset(names)
        sop.problems.extend(Problem(os.path.relpath(p, root), "", None, m)
                            for p, m in tool_problems)
        sop.problems.extend(check.tool_problems(docs, sop.tools))
    sop.problems.sort(key=lambda p: (p.path, p.line or 0, p.field))
    return sop


def read_agents(root: Path) -> tuple[dict[str, dict[str, Any]], list[Problem]]:
    """The agents of ``_agents.yaml`` (name -> settings) and what is wrong with them
    (``root``: the SOP folder's real path, which the file must lie in)."""
    path = root / AGENTS_FILE
    if not os.path.lexists(path):
        return {}, []
    try:
        data, lines = load_with_lines(fmt.read_text(path, inside=root))
    except YamlError as exc:
        return {}, [Problem(AGENTS_FILE, "", exc.line, exc.message)]
    except (OSError, fmt.FormatError) as exc:
        return {}, [Problem(AGENTS_FILE, "", None, f"cannot be read: {exc}")]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return {}, [Problem(AGENTS_FILE, "", 1, "must map agent names to their settings")]
    agents: dict[str, dict[str, Any]] = {}
    problems = []
    for name, props in data.items():
        line = lines.get((name,))
        reason = adapter.agent_problem(str(name), props)
        if reason is not None:
            problems.append(Problem(AGENTS_FILE, str(name), line, reason))
        else:
            agents[str(name)] = dict(props or {})
    return agents, problems
