"""``tce list``: the cells of a message file, or the agents it defines (``ITEM/agent``).

The cells: imports only click, the format core and the trust rules, so it starts fast on
large files. The agents: where each model's calls would go and with which key is litellm's
routing (``runtime.models.call_route``, as a call decides it), so ``ITEM/agent`` imports it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from jupyter_percent_agent.cli._common import fail_for, read_or_fail, resolve_item
from jupyter_percent_agent.errors import PercentAgentError


def _split_agent_item(item: str) -> tuple[str, bool]:
    for suffix in ("/agent", "/agents"):
        if item.endswith(suffix) and not Path(item).exists():
            return item[: -len(suffix)], True
    return item, False


CELL_BUDGETS = {"tool_call": ("timeout", "tool_timeout"), "toolchain": ("timeout", "tool_timeout"),
                "task": ("max_steps", "task_max_steps")}
"""The numbers a cell of a kind may set: (its attribute, the budget that bounds it)."""


def cell_limits(cell: dict, kind: str, folder: Path | None, config: Any = None) -> list[str]:
    """The budgets ``cell`` asks for that the trust rules lower (``trust.bound``)."""
    if kind not in CELL_BUDGETS:  # most cells: the trust rules are not even imported
        return []
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent import trust

    attr, budget = CELL_BUDGETS[kind]
    asked = fmt.cell_attrs(cell).get(attr)
    if asked is None:
        return []
    bounded = trust.bound(budget, asked, folder=folder, config=config)
    return [bounded.describe()] if bounded.lowered else []


def cell_rows(nb: dict, folder: Path | None = None) -> list[dict[str, Any]]:
    """One row per cell: index, id, type, title, agent, history (and ``limits``: the numbers
    it sets that are lowered, when any)."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime import history as hist

    rows = []
    default = hist.default_mode(nb)  # the front matter's history: (auto or include)
    config = None  # the user's config, read once, for the first cell that sets a budget
    for i, cell in enumerate(hist.conversation_cells(nb), start=1):
        kind = fmt.cell_kind(cell)
        meta = cell.get("metadata") or {}  # the attributes, flat (docs/format.md)
        agent = meta.get("name") if kind == "agent" else meta.get("agent")
        outputs = cell.get("outputs") or []
        if not agent and outputs:
            seen: list[str] = []
            for o in outputs:  # the agents that replied, or whose call failed
                ot = o.get("output_type")
                if ot == "display_data" and fmt.output_kind(o) == "reply":
                    name = fmt.output_attrs(o).get("agent")
                elif ot == "error":  # its attributes are kept in the cell's metadata
                    name = fmt.output_attrs(o, cell).get("agent")
                else:
                    continue
                if name and isinstance(name, str) and name not in seen:
                    seen.append(name)
            agent = ",".join(seen)
        title = hist.cell_title(cell) or _first_line(fmt.message_text(cell))
        row = {"index": i, "id": fmt.cell_id(cell), "type": kind, "title": title,
               "agent": agent or "", "outputs": len(outputs),
               "history": hist.history_mode(meta.get("history"), kind, fmt.cell_id(cell),
                                            default=default)}
        if kind in CELL_BUDGETS:  # most cells set no budget
            if config is None:
                from jupyter_percent_agent import trust

                config = trust.load_config()
            limits = cell_limits(cell, kind, folder, config)
            if limits:
                row["limits"] = limits
        rows.append(row)
    return rows


def _first_line(text: str, width: int = 50) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def model_routes(agent: Any, folder: Path | None) -> list[dict[str, Any]]:
    """Where each of ``agent``'s models would send a conversation, decided as a call decides
    it: ``{model, provider, endpoint, key}`` (``key``: a variable's name, never its value), or
    ``{model, refused}`` with the one-line refusal."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.litellm_setup import import_litellm
    from jupyter_percent_agent.runtime.models import call_route, spec_for

    try:
        trust.route_for(agent.api_base, folder=folder, agent=agent.name)
    except PercentAgentError as exc:  # the agent's own api_base: every model goes there
        return [{"model": m, "refused": exc.user_message()} for m in agent.models]
    litellm = import_litellm()
    out: list[dict[str, Any]] = []
    for model in agent.models:
        try:
            route = trust.route_agent(agent.name, agent.api_base, [model], folder=folder,
                                      from_file=agent.source != "environment")
            how = call_route(litellm, spec_for(agent, [], route=route), model)
        except PercentAgentError as exc:  # refused by trust, or before the call
            out.append({"model": model, "refused": exc.user_message()})
            continue
        out.append({"model": model, "provider": how.provider or "", "endpoint": how.endpoint,
                    "key": how.key_name})
    return out


def acp_route(agent: Any) -> list[dict[str, Any]]:
    """Where an external agent's conversations go: its command as the user added it (MODEL
    ``acp:NAME``, PROVIDER ``acp``), or why there is none; no key of ours is involved."""
    from jupyter_percent_agent import acp

    try:
        spec = acp.find_agent(agent.acp)
    except PercentAgentError as exc:
        return [{"model": f"acp:{agent.acp}", "refused": str(exc)}]
    return [{"model": f"acp:{agent.acp}", "provider": "acp", "endpoint": spec.target,
             "key": f"permissions={spec.permissions}"}]


def agent_rows(nb: dict, folder: Path | None = None) -> list[dict[str, Any]]:
    """One row per agent: the presets and definition cells, ``default`` (the environment's
    agent, with the models it would use now), then agents seen only in replies. ``default``
    marks the agent that answers a message naming none; ``limits`` the budgets its file asks
    for that are lowered; ``routes`` where each model's conversations go (``model_routes``);
    ``mcp_ignored`` the MCP servers it could not use in ``folder`` and why
    (``toolset.ignored_servers``: a folder's own, the user's not marked for untrusted folders
    that it names)."""
    from jupyter_percent_agent import format as fmt
    from jupyter_percent_agent.runtime.agents import (
        DEFAULT_AGENT_NAME,
        bound_agent,
        environment_agent,
        known_agents,
        resolve_agent,
    )

    agents = known_agents(nb)
    if DEFAULT_AGENT_NAME not in agents:
        agents[DEFAULT_AGENT_NAME] = environment_agent()
    try:
        answering = resolve_agent(nb).name
    except PercentAgentError:  # default_agent names an agent that does not exist: none answers
        answering = None
    rows = []
    for name, agent in agents.items():
        bounded, budgets = bound_agent(agent, folder)
        rows.append({"name": name, "source": agent.source, "models": agent.models,
                     "tools": agent.tools or [], "default": name == answering,
                     "limits": [b.describe() for b in budgets if b.lowered],
                     "routes": acp_route(agent) if agent.acp else model_routes(bounded, folder),
                     "mcp_ignored": _ignored_servers(nb, folder, agent.tools or [])})
    seen = {r["name"] for r in rows}
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            if fmt.output_kind(out) == "reply":
                name = fmt.output_attrs(out).get("agent")
                if name and name not in seen:
                    seen.add(name)
                    rows.append({"name": name, "source": "replies only", "models": [],
                                 "tools": [], "default": False, "limits": [], "routes": [],
                                 "mcp_ignored": {}})
    return rows


def _ignored_servers(nb: dict, folder: Path | None, tools: list[str]) -> dict[str, str]:
    from jupyter_percent_agent.runtime.toolset import ignored_servers

    try:
        ignored = ignored_servers(nb, folder, tools)
    except PercentAgentError as exc:  # the user's mcp.json is broken: said, not fatal here
        return {"mcp.json": str(exc)}
    return {name: f"{why.why}; {why.remedy}" for name, why in ignored.items()}


AGENT_COLUMNS = ["name", "source", "default", "tools", "mcp_ignored", "limits", "model",
                 "provider", "endpoint", "key"]


def agent_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agents' rows as the table shows them: one line per model, the agent's own columns
    on its first; a refused model's KEY says why."""
    lines = []
    for row in rows:
        own = {k: row[k] for k in ("name", "source", "default", "tools", "limits")}
        own["mcp_ignored"] = list(row["mcp_ignored"])
        for i, route in enumerate(row["routes"] or [{}]):
            line = own if i == 0 else {k: "" for k in own}
            lines.append({**line, "model": route.get("model", ""),
                          "provider": route.get("provider", ""),
                          "endpoint": route.get("endpoint", ""),
                          "key": route.get("key") or route.get("refused", "")})
    return lines


@click.command("list")
@click.argument("item")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
@click.option("--history", "message", metavar="MESSAGE",
              help="Show which cells sending MESSAGE would send (as tce chat --explain).")
def list_(item: str, as_json: bool, message: str | None) -> None:
    """List the cells of ITEM (index, type, title, agent, history), or its agents with
    ITEM/agent."""
    item, agents = _split_agent_item(item)
    path = resolve_item(item)
    if message is not None:
        from jupyter_percent_agent.cli.chat import explain_history

        sys.exit(explain_history(path, message, as_json=as_json))
    nb = read_or_fail(path)
    if agents:
        try:
            rows = agent_rows(nb, path.parent)
        except PercentAgentError as exc:
            fail_for(exc, path=path)
        cols, shown = AGENT_COLUMNS, agent_table(rows)
    else:
        try:
            rows = shown = cell_rows(nb, path.parent)
        except PercentAgentError as exc:  # a history value that is none: one line, exit 3
            fail_for(exc, path=path)
        cols = ["index", "type", "title", "agent", "history"]
        if any("limits" in r for r in rows):
            cols.append("limits")
    out = sys.stdout
    if as_json:
        out.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        return
    # most values are strings already: _cell only for the others (a table of 5,000 rows)
    table = [[v if type(v := r.get(c, "")) is str else _cell(v) for c in cols] for r in shown]
    widths = [max([len(c)] + [len(row[i]) for row in table]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
              for row in table]
    if agents:  # why a server is ignored is a sentence: once each, below the table
        reasons = {n: why for r in rows for n, why in r["mcp_ignored"].items()}
        lines += [f"# MCP server {n!r} ignored: {why}" for n, why in reasons.items()]
    out.write("\n".join(lines) + "\n")


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "*" if value else ""
    if isinstance(value, list):
        return ", ".join(map(str, value)) if any(" " in str(v) for v in value) \
            else ",".join(map(str, value))
    return str(value)
