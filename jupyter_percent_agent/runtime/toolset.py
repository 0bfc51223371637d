"""Which tools an agent may call, and how the model is told about them.

Four sources, each with its trust:

- installed packages (entry points): trusted as installed code is;
- the ``toolbox/`` folder beside the message file: imported only when the user trusted that
  folder; a module of an untrusted toolbox is refused (``TrustError``), never imported;
- ``[tool]`` cells of the file itself: untrusted text, so they run in the sandbox, always
  (``sandbox.DefinedTool``), whoever trusts what.

- MCP servers: the user's (``tce mcp add``) and those a file or its folder defines
  (``.mcp.json``, ``mcp:``), selectable by name; in a folder the user did not trust only the
  user's servers marked ``--untrusted-ok``, the others ignored (``ignored_servers``), and a turn
  asking for one of those refused (``check_mcp_servers``).

An agent's ``tools`` lists modules, MCP servers and ``[tool]`` cell names (``[all]``: every
module and cell; servers are started only when named).
An agent with more tools than its ``tool_limit`` is described only those that fit the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.errors import Kind
from jupyter_percent_agent.runtime.agents import Agent

ALL = (None, ["*"], ["all"])


@dataclass
class Toolset:
    """The tools of one turn: the registry (run in this process, reached over the sandbox's
    bridge) and the tools defined in the file (run in the sandbox)."""

    registry: Any
    defined: dict[str, Any] = field(default_factory=dict)  # name -> sandbox.DefinedTool

    def __len__(self) -> int:
        return len(self.registry) + len(self.defined)

    def __contains__(self, name: object) -> bool:
        return name in self.registry or name in self.defined

    def names(self) -> list[str]:
        return [*self.registry, *self.defined]

    def descriptions(self) -> dict[str, str]:
        """Name -> the text tool selection ranks (docstring; a defined tool's stub)."""
        out = {name: tool.doc.text for name, tool in self.registry.items()}
        out.update({name: tool.stub for name, tool in self.defined.items()})
        return out

    def describe(self, offered: Sequence[str] | None = None) -> str:
        """The tools as ATTP shows them to the model (``offered`` only, when given)."""
        from jupyter_percent_agent.tools import render_tools

        keep = set(self.names() if offered is None else offered)
        return render_tools([t for n, t in self.registry.items() if n in keep],
                            [t.stub for n, t in self.defined.items() if n in keep])


def _toolbox(base_dir: Path | None) -> Path | None:
    if base_dir is None or not (base_dir / trust.TOOLBOX).is_dir():
        return None
    return base_dir / trust.TOOLBOX


def defined_tools(nb: Mapping[str, Any]) -> dict[str, Any]:
    """The ``[tool]`` cells of a notebook as ``sandbox.DefinedTool`` (a later cell of the
    same name replaces an earlier one); ``ToolLoadError`` names a broken one."""
    from jupyter_percent_agent.sandbox import DefinedTool
    from jupyter_percent_agent.tools import ToolLoadError

    out: dict[str, Any] = {}
    for cell in nb.get("cells", []):
        if fmt.cell_kind(cell) != "tool":
            continue
        attrs = fmt.cell_attrs(cell)
        body = fmt.message_text(cell)
        fenced = fmt.split_fenced(body)
        source = fenced[2] if fenced is not None else body
        name = attrs.get("name")
        if not isinstance(name, str) or not name:
            raise ToolLoadError(f"the [tool] cell {fmt.cell_id(cell)!r} has no name=\"...\"")
        out[name] = DefinedTool(name, source, description=str(attrs.get("description") or ""),
                                parameters=attrs.get("parameters"),
                                function=attrs.get("function"))
    return out


def _load(modules: Sequence[str] | None, base_dir: Path | None, what: str) -> Any:
    """The registry of ``modules`` (None: all) from entry points and the toolbox beside the
    file, which an untrusted folder may not contribute."""
    from jupyter_percent_agent.tools import Registry

    toolbox = _toolbox(base_dir)
    if toolbox is not None and base_dir is not None and not trust.is_trusted(base_dir):
        beside = {p.stem for p in toolbox.glob("*.py") if not p.stem.startswith("_")}
        asked = beside if modules is None else beside & set(modules)
        if asked:
            raise trust.refuse_toolbox(base_dir, what.format(", ".join(sorted(asked))))
        toolbox = None
    return Registry.load(toolbox, modules=modules)


def _checked(toolset: Toolset) -> Toolset:
    from jupyter_percent_agent.tools import ToolLoadError

    both = sorted(set(toolset.registry) & set(toolset.defined))
    if both:
        raise ToolLoadError(f"tool {both[0]!r} is defined in the file and in module "
                            f"{toolset.registry[both[0]].module!r}: rename one")
    return toolset


class IgnoredServer(NamedTuple):
    """Why a file cannot use an MCP server in its folder, and how the user can allow it."""

    why: str
    remedy: str  # "to allow it: ..."
    folders_own: bool  # the folder or the file defines it (not one of the user's)


def ignored_servers(nb: Mapping[str, Any] | None, folder: Path | None,
                    asked: Sequence[str] | None = None) -> dict[str, IgnoredServer]:
    """The MCP servers a file in ``folder`` cannot use, each with why and how to allow it: in
    a folder the user did not trust, every server the folder or the file defines
    (``.mcp.json``, ``mcp:``: they would start processes of the folder's choosing), and the
    user's own servers not marked ``--untrusted-ok`` (they act with the user's rights on
    whatever path the model names), those of them in ``asked`` only when it is given.
    Nothing in a trusted folder. Reading this starts nothing."""
    if folder is None or trust.is_trusted(folder):
        return {}
    from jupyter_percent_agent import mcptools
    from jupyter_percent_agent.mcptools.config import defined_names

    out = {name: IgnoredServer(f"defined only by {words}, and its folder is not trusted",
                               f"to allow it: tce trust {folder}", True)
           for name, words in defined_names(fmt.front_matter(nb or {}), folder).items()}
    for name, spec in mcptools.load_servers().items():
        if spec.untrusted_ok:
            out.pop(name, None)  # the user's, marked: theirs is used, the folder's ignored
        elif asked is None or name in asked:
            out[name] = IgnoredServer("your server acts with your rights on whatever path the "
                                      "model names, and this folder is not trusted",
                                      f"to allow it: tce mcp add {name} --untrusted-ok (in every "
                                      f"untrusted folder), or tce trust {folder}", False)
    return out


def check_mcp_servers(agent: Agent, nb: Mapping[str, Any] | None, folder: Path | None
                      ) -> None:
    """Refuse (``TrustError``, one line naming the server and how to allow it) a turn whose
    agent asks for an MCP server its folder may not use (``ignored_servers``). Asked before
    anything runs or starts; a folder's configuration the agent does not ask for refuses
    nothing, nor does a name it shares with an installed tool module (that module is meant:
    the folder's server is ignored)."""
    asked = _asked_servers(agent, nb)
    if not asked:
        return
    for name, ignored in ignored_servers(nb, folder, asked).items():
        if name in asked and not (ignored.folders_own and name in _module_names(None)):
            raise trust.TrustError(f"MCP server {name!r} (agent {agent.name!r}): {ignored.why}",
                                   ignored.remedy, kind="mcp", folder=folder)


def _asked_servers(agent: Agent, nb: Mapping[str, Any] | None) -> list[str]:
    """The names in the agent's ``tools`` that could be MCP servers (not ``[tool]`` cells;
    ``[all]`` selects no server)."""
    if agent.tools in ALL:
        return []
    cells = nb.get("cells", []) if nb is not None else []
    defined = {fmt.cell_attrs(c).get("name") for c in cells if fmt.cell_kind(c) == "tool"}
    return [t for t in agent.tools or [] if t not in defined]


def _servers(nb: Mapping[str, Any] | None, base_dir: Path | None) -> dict[str, Any]:
    """The MCP servers a file in ``base_dir`` may select by name: the user's, then those the
    folder and the file define, which win; in a folder not trusted only the user's marked
    ``--untrusted-ok`` (``check_mcp_servers`` refused a turn asking for another)."""
    from jupyter_percent_agent import mcptools
    from jupyter_percent_agent.mcptools.config import file_servers

    servers = mcptools.load_servers()
    if base_dir is not None and not trust.is_trusted(base_dir):
        return {name: spec for name, spec in servers.items() if spec.untrusted_ok}
    servers.update(file_servers(fmt.front_matter(nb) if nb is not None else {}, base_dir))
    return servers


def _module_names(base_dir: Path | None) -> set[str]:
    """The tool modules there are (the toolbox beside the file, installed entry points)."""
    from importlib.metadata import entry_points

    from jupyter_percent_agent.tools import ENTRY_POINT_GROUP

    names = {ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)}
    toolbox = _toolbox(base_dir)
    if toolbox is not None:
        names |= {p.stem for p in toolbox.glob("*.py") if not p.stem.startswith("_")}
    return names


def tools_for(agent: Agent, base_dir: Path | None, nb: Mapping[str, Any] | None = None
              ) -> Toolset:
    """The tools an agent may use: its ``tools`` modules, MCP servers and ``[tool]`` cells
    (all modules and cells for ``[all]``; MCP servers only by name). ``ToolLoadError`` for
    a name that is both a tool module and a server; ``McpServerError`` for a server that
    does not start."""
    defined = defined_tools(nb) if nb is not None else {}
    servers: dict[str, Any] = {}
    if agent.tools in ALL:
        modules = None
    else:
        check_mcp_servers(agent, nb, base_dir)
        wanted = [t for t in agent.tools or [] if t not in defined]
        known = _servers(nb, base_dir)
        servers = {t: known[t] for t in wanted if t in known}
        if servers:
            from jupyter_percent_agent.tools import ToolLoadError

            both = sorted(set(servers) & _module_names(base_dir))
            if both:
                raise ToolLoadError(f"{both[0]!r} is both a tool module and an MCP server: "
                                    "rename one (tce mcp remove, then add it as another "
                                    "name)", kind=Kind.USAGE)
        modules = [t for t in wanted if t not in servers]
        defined = {n: t for n, t in defined.items() if n in (agent.tools or [])}
    registry = _load(modules, base_dir, f"agent {agent.name!r} (tools: {{}})")
    if servers:
        from jupyter_percent_agent import mcptools

        registry = registry.merged(mcptools.server_tools(
            servers.values(), base_dir, taken=[*registry, *defined]))
    return _checked(Toolset(registry, defined))


def tool_cell_tools(names: Sequence[Any], base_dir: Path | None, nb: Mapping[str, Any]
                    ) -> Toolset:
    """The tools a ``[tool_call]``/``[toolchain]`` cell may call: the file's ``[tool]``
    cells, installed ones, and the toolbox beside the file only when its folder is trusted
    (``TrustError`` when a named tool is missing and only an untrusted toolbox could hold
    it)."""
    defined = defined_tools(nb)
    if base_dir is None or _toolbox(base_dir) is None or trust.is_trusted(base_dir):
        return _checked(Toolset(_load(None, base_dir, "this tool call"), defined))
    toolset = _checked(Toolset(_load(None, None, "this tool call"), defined))
    if any(name not in toolset for name in names):
        raise trust.refuse_toolbox(base_dir, "this tool call")
    return toolset


def used_tools(cells: Sequence[Mapping[str, Any]]) -> set[str]:
    """The tools called in these cells' outputs (an ATTP call may name several: ``a,b``)."""
    used: set[str] = set()
    for cell in cells:
        for out in cell.get("outputs") or []:
            if fmt.output_kind(out) == "tool_call":
                used.update(str(fmt.output_attrs(out).get("name") or "").split(","))
    return used - {""}


def offered_tools(agent: Agent, toolset: Toolset, message: str,
                  earlier: Sequence[Mapping[str, Any]]) -> list[str] | None:
    """The tools to describe to the model for ``message``: all of them (None) when they are no
    more than the agent's ``tool_limit`` (the user's limit, 12), else those that fit the
    message best, plus any the conversation already used (``ranking.tools.select_tools``),
    leaving one place for ``search_tools``. Every tool stays callable."""
    from jupyter_percent_agent.ranking.tools import DEFAULT_TOOL_LIMIT, select_tools

    limit = agent.tool_limit or DEFAULT_TOOL_LIMIT
    if len(toolset) <= limit:
        return None
    # one place of the limit is search_tools' (``with_search``), which finds the others
    return select_tools(toolset.descriptions(), message, used_tools(earlier), max(1, limit - 1))


SEARCH_TOOLS = "search_tools"


def with_search(toolset: Toolset, offered: Sequence[str]) -> tuple[Toolset, list[str]]:
    """When only the ``offered`` tools are described, the model's code also gets
    ``search_tools(words)``: the descriptions of the others that fit the words, ranked as
    the offered ones were (``ranking.tools.rank_tools``). So 100 tools cost the prompt no more
    than ``tool_limit``; every tool stays callable."""
    from jupyter_percent_agent.ranking.tools import rank_tools
    from jupyter_percent_agent.tools import Tool, render_tool

    if SEARCH_TOOLS in toolset:  # a tool of the user's has the name: theirs is kept
        return toolset, list(offered)
    hidden = {n: d for n, d in toolset.descriptions().items() if n not in set(offered)}

    def search_tools(words: str, limit: int = 5) -> list[str]:
        ranked = [n for n, _ in rank_tools(hidden, str(words))][: max(1, min(int(limit), 20))]
        return [render_tool(toolset.registry[n]) if n in toolset.registry
                else toolset.defined[n].stub for n in ranked]

    search_tools.__doc__ = f"""Find tools by what they do: {len(hidden)} more tools can be
    called than are described here.

    Args:
        words (str): What the tool should do, in words.
        limit (int): How many tools to return (at most 20).

    Returns:
        list[str]: The best-fitting tools' descriptions (signature and docstring), best
        first; call them like the tools above.
    """
    tool = Tool.from_function(search_tools)
    return Toolset(toolset.registry.merged([tool]), toolset.defined), [*offered, SEARCH_TOOLS]


def system_prompt_for(agent: Agent, toolset: Toolset | None,
                      offered: Sequence[str] | None = None) -> str:
    """The agent's system prompt, with the ATTP protocol and its tools (those ``offered``,
    else all) when it has any."""
    if toolset is None:
        return agent.system_prompt
    from jupyter_percent_agent import attp

    return attp.system_prompt(agent_prompt=agent.system_prompt,
                              tools=toolset.describe(offered), modules=attp.ALLOWED_MODULES)
