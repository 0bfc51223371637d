"""Which tools an agent may call, and how the model is told about them.

Tools come from installed packages (entry points, trusted as installed code is) and from the
``toolbox/`` folder beside the message file, which is imported only when the user trusted
that folder: a module of an untrusted toolbox is refused (``TrustError``), never imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime.agents import Agent

TOOL_CELLS = "tools"
"""The name of the pseudo-agent whose registry ``[tool_call]`` cells call."""


def _toolbox(base_dir: Path | None) -> Path | None:
    if base_dir is None or not (base_dir / "toolbox").is_dir():
        return None
    return base_dir / "toolbox"


def tools_for(agent: Agent, base_dir: Path | None) -> Any:
    """The tool registry an agent may use: its ``tools`` modules (all for ``[all]``)."""
    from jupyter_percent_agent.tools import Registry

    toolbox = _toolbox(base_dir)
    modules = None if agent.tools in (None, ["*"], ["all"]) else agent.tools
    if toolbox is not None and base_dir is not None and not trust.is_trusted(base_dir):
        beside = {p.stem for p in toolbox.glob("*.py") if not p.stem.startswith("_")}
        asked = beside if modules is None else beside & set(modules)
        if asked:
            what = f"agent {agent.name!r} (tools: {', '.join(sorted(asked))})"
            raise trust.refuse_toolbox(base_dir, what)
        toolbox = None
    return Registry.load(toolbox, modules=modules)


def tool_cell_registry(names: Sequence[Any], base_dir: Path | None) -> Any:
    """The tools a ``[tool_call]``/``[toolchain]`` cell may call: installed ones, and the
    toolbox beside the file only when its folder is trusted (``TrustError`` when a named tool
    is missing and only an untrusted toolbox could hold it)."""
    everything = Agent(name=TOOL_CELLS, tools=None)
    if base_dir is None or _toolbox(base_dir) is None or trust.is_trusted(base_dir):
        return tools_for(everything, base_dir)
    registry = tools_for(everything, None)
    if any(name not in registry for name in names):
        raise trust.refuse_toolbox(base_dir, "this tool call")
    return registry


def used_tools(cells: Sequence[Mapping[str, Any]]) -> set[str]:
    """The tools called in these cells' outputs (an ATTP call may name several: ``a,b``)."""
    used: set[str] = set()
    for cell in cells:
        for out in cell.get("outputs") or []:
            if fmt.output_kind(out) == "tool_call":
                used.update(str(fmt.output_attrs(out).get("name") or "").split(","))
    return used - {""}


def offered_tools(agent: Agent, registry: Any, message: str,
                  earlier: Sequence[Mapping[str, Any]]) -> list[str] | None:
    """The tools to describe to the model for ``message``: all of them (None) when they are no
    more than the agent's ``tool_limit`` (12), else those that fit the message best, plus any
    the conversation already used (``ranking.tools.select_tools``). Every tool of the
    registry stays callable."""
    from jupyter_percent_agent.ranking.tools import DEFAULT_TOOL_LIMIT, select_tools

    limit = agent.tool_limit or DEFAULT_TOOL_LIMIT
    if len(registry) <= limit:
        return None
    return select_tools({name: tool.doc.text for name, tool in registry.items()}, message,
                        used_tools(earlier), limit)


def system_prompt_for(agent: Agent, registry: Any | None,
                      offered: Sequence[str] | None = None) -> str:
    """The agent's system prompt, with the ATTP protocol and its tools (those ``offered``,
    else all) when it has any."""
    if registry is None:
        return agent.system_prompt
    from jupyter_percent_agent import attp
    from jupyter_percent_agent.tools import render_tools

    described = (registry.describe() if offered is None
                 else render_tools([registry[name] for name in offered]))
    return attp.system_prompt(agent_prompt=agent.system_prompt, tools=described,
                              modules=attp.ALLOWED_MODULES)
