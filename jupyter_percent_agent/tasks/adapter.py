"""Every call from task runs into the runtime and the tools registry, in one place.

The runner asks for three things: run one step cell of the transcript (a message cell for the
LLM, a ``[tool_call]`` cell for a tool) through the runtime's turn, the names of the tools a SOP
folder may call, and whether an agent's settings are valid (``runtime.run_turn``: the same
turn ``tce chat`` and the kernel run, with its trust rules). It imports the runtime lazily:
``tce sop check`` stays light, and litellm is imported only when a model is called.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt

OnEvent = Callable[[Any], None]

# Settings a SOP folder may not give its agents: a shared folder must not choose where the
# user's key is sent (TRUST.md), nor carry a key.
REFUSED_AGENT_KEYS = ("api_base", "api_key", "base_url", "api_key_env")


def toolbox_dir(base_dir: Path) -> Path:
    from jupyter_percent_agent import trust

    return base_dir / trust.TOOLBOX


def turn_notebook(agents: Mapping[str, Any], path: str = "turn.msg.md") -> dict[str, Any]:
    """The notebook a step's turn runs in: the SOP folder's agents in its front matter and,
    added by :func:`run_step`, the step's cell alone. A step is sent alone anyway (its cell
    and every earlier one are ``history="exclude"``), and the runtime reads the front matter
    and walks every earlier cell of the notebook it is given on each call: given the whole
    transcript, that work grows with the run. Make it once per run."""
    nb = fmt.reads("", path=path)
    if agents:
        fmt.set_front_matter(nb, "agents", {k: dict(v) for k, v in agents.items()})
    return nb


def step_run(cell: Mapping[str, Any], on_event: OnEvent | None = None) -> Any:
    """The runtime's ``Run`` for a step's ``cell``, given to :func:`run_step`: it holds what
    was complete when the step is cancelled, and says how the step ended
    (``run.outcome``)."""
    from jupyter_percent_agent.runtime import Run

    return Run(fmt.cell_id(cell), existing=cell.get("outputs") or [],
               on_event=on_event or (lambda event: None))


async def run_step(turn_nb: Mapping[str, Any], cell: dict[str, Any], run: Any, *,
                   base_dir: Path, model: str | None = None, document: Path | None = None,
                   permission_asker: Any = None) -> Any:
    """Run a step's ``cell`` (a cell of the transcript) through the runtime's turn, in
    ``turn_nb`` (:func:`turn_notebook`): its agent answers a message cell, a
    ``[tool_call]`` cell calls its tool (from ``toolbox/`` in ``base_dir`` and entry points).
    ``run`` (:func:`step_run`) fills as outputs arrive, so a cancelled step keeps what it
    had; model and tool failures end in ``run.status == "error"``. An external agent (ACP)
    may never read or write ``document`` (the step's task document), and its permission
    requests go to ``permission_asker`` (None: nobody, so rejected unless the user's own
    setting for that agent allows them)."""
    from jupyter_percent_agent.runtime import RunOptions, run_turn

    cell_id = fmt.cell_id(cell)
    nb = {**turn_nb, "cells": [*turn_nb.get("cells", []), cell]}
    return await run_turn(nb, cell_id, RunOptions(base_dir=base_dir, model=model, path=document,
                                                  permission_asker=permission_asker), run=run)


def import_models_soon() -> None:
    """Start importing litellm on a thread: a command about to run model steps gains the
    time its own set-up takes (the first call waits for the import if it is not done).

    Then freeze what the process holds (``gc.freeze``): litellm's import leaves a large
    graph of objects that never becomes garbage, and every full collection of the cyclic
    collector walked it again; with many runs at once (their calls make objects fast) that
    was a seventh of the CPU time. And collect the youngest generation every 50,000
    allocations rather than 700: many runs at once allocate fast, and the collections were
    another 5% of a batch's time (measured with ``gc.callbacks``: 0.7 s of 11 s, then 0.2 s).
    For a command, not a library: the caller decides."""
    import gc
    import threading

    gc.set_threshold(50_000)  # from now: litellm's import makes objects fast too

    def work() -> None:
        try:
            from jupyter_percent_agent.litellm_setup import import_litellm

            import_litellm()
        except Exception:  # the first call will say what is wrong
            return
        gc.freeze()

    threading.Thread(target=work, name="import-litellm", daemon=True).start()


def agent_problem(name: str, props: Any) -> str | None:
    """Why ``props`` are not valid settings for agent ``name`` (``None`` when they are)."""
    from jupyter_percent_agent.runtime.agents import AgentError, agent_from_mapping

    if props is None:
        props = {}
    if not isinstance(props, Mapping):
        return "an agent's settings are a mapping (models, system_prompt, temperature, ...)"
    refused = [k for k in REFUSED_AGENT_KEYS if k in props]
    if refused:
        return (f"{', '.join(refused)} may not be set in a SOP folder (a shared folder must "
                "not choose where your key is sent); set PERCENT_AGENT_API_BASE in your "
                "environment")
    try:
        agent_from_mapping(name, props, source="preset")
    except AgentError as exc:
        return str(exc)
    except TypeError as exc:
        return f"bad settings: {exc}"
    return None


def agent_limits(agents: Mapping[str, Mapping[str, Any]], base_dir: Path
                 ) -> list[tuple[str, str]]:
    """(agent, budget) for each budget of ``agents`` (name -> settings) that the runtime
    lowers for a folder in ``base_dir`` (``runtime.agents.bound_agent``)."""
    from jupyter_percent_agent.runtime.agents import AgentError, agent_from_mapping, bound_agent

    out = []
    for name, props in agents.items():
        try:
            agent = agent_from_mapping(name, props, source="preset")
        except (AgentError, TypeError):
            continue  # the folder's check reports it
        out += [(name, b.describe()) for b in bound_agent(agent, base_dir)[1] if b.lowered]
    return out


def toolbox_refusal(base_dir: Path, tool_ids: Collection[str],
                    agents: Mapping[str, Mapping[str, Any]], what: str) -> Any:
    """The ``TrustError`` steps would meet for the ``toolbox/`` in ``base_dir`` while it is
    untrusted, told before any of them runs: tool steps calling ``tool_ids`` that only the
    toolbox has, LLM steps answered by ``agents`` (name -> settings) given its tools. The
    runtime's own loading decides (an untrusted toolbox is never imported); ``None`` when
    the folder is trusted or nothing needs its toolbox. Loading problems are left to the
    steps, which report them."""
    from jupyter_percent_agent import trust

    if not toolbox_dir(base_dir).is_dir() or trust.is_trusted(base_dir):
        return None
    from jupyter_percent_agent.runtime.agents import AgentError, agent_from_mapping
    from jupyter_percent_agent.runtime.toolset import tool_cell_tools, tools_for
    from jupyter_percent_agent.tools import ToolLoadError

    needs = []
    if tool_ids:
        try:  # what a tool step may call from an untrusted folder: never its toolbox
            allowed = tool_cell_tools([], base_dir, {"cells": []})
            missing = sorted(t for t in tool_ids if t not in allowed)
        except ToolLoadError:
            missing = []
        if missing:
            needs.append("tools " + ", ".join(missing))
    for name, props in sorted(agents.items()):
        try:
            agent = agent_from_mapping(name, props, source="preset")
        except (AgentError, TypeError):
            continue
        try:
            if agent.has_tools:
                tools_for(agent, base_dir)
        except trust.TrustError as exc:
            if exc.kind == "toolbox":  # an MCP server refused is the step's own refusal
                needs.append(f"agent {name!r} (tools: {', '.join(agent.tools or [])})")
        except ToolLoadError:
            continue
    if not needs:
        return None
    return trust.refuse_toolbox(base_dir, f"{what} ({'; '.join(needs)})")


def acp_refusal(base_dir: Path, agents: Mapping[str, Mapping[str, Any]]) -> Any:
    """The ``TrustError`` the first step answered by an external agent (ACP) of ``agents``
    (name -> settings) would meet in ``base_dir`` while it is untrusted (the runtime's own
    check, ``acp_turn.check_acp_agent``), told before any step runs; ``None`` when the folder
    is trusted or no agent is an external one. An agent the user never added is left to its
    step, which says so."""
    from jupyter_percent_agent import trust

    if not any(isinstance(p, Mapping) and p.get("acp") for p in agents.values()):
        return None
    from jupyter_percent_agent.acp import AcpConfigError
    from jupyter_percent_agent.runtime.acp_turn import check_acp_agent
    from jupyter_percent_agent.runtime.agents import AgentError, agent_from_mapping

    for name, props in sorted(agents.items()):
        try:
            agent = agent_from_mapping(name, props, source="preset")
            if agent.acp is not None:
                check_acp_agent(agent, base_dir)
        except (AgentError, TypeError, AcpConfigError):
            continue
        except trust.TrustError as exc:
            return exc
    return None


def tool_names(base_dir: Path) -> tuple[set[str], list[tuple[str, str]]]:
    """The names of the tools a step may call: those of ``toolbox/`` in ``base_dir`` (read
    from their source, never imported: a check runs no code of the folder) and those of
    installed packages' entry points. Also (file, problem) for tool files that do not load."""
    from jupyter_percent_agent import tools

    names: set[str] = set()
    problems: list[tuple[str, str]] = []
    folder = toolbox_dir(base_dir)
    if folder.is_dir():
        for file in sorted(folder.glob("*.py")):
            if file.stem.startswith("_"):
                continue
            try:
                source = fmt.read_text(file)  # no link out, no FIFO or device
                names.update(tools.describe_source(source, module=file.stem))
            except (tools.ToolLoadError, OSError, fmt.FormatError) as exc:
                problems.append((str(file), str(exc)))
    try:
        names.update(tools.Registry.load(None, entry_points=True))
    except tools.ToolLoadError as exc:
        problems.append(("(installed tools)", str(exc)))
    return names, problems
