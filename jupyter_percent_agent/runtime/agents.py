"""Agents: what they are, where they are defined, and which one answers a cell.

An agent is a system prompt plus inference settings. Presets live in the front matter
(``agents:``); temporary agents are ``definition="agent"`` cells whose body is a YAML front
matter (in a ```yaml fence or between bare ``---`` lines) followed by the system prompt.
Pure functions over the notebook dict (and the user's limits, for ``bound_agent``); nothing
here touches the network or litellm.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.errors import Kind, PercentAgentError, did_you_mean

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_AGENT_NAME = "default"


class AgentError(PercentAgentError, ValueError):
    """An agent that cannot be found or whose definition is wrong."""

    error_kind = Kind.AGENT


class NoModelError(PercentAgentError, ValueError):
    """``--model`` or ``PERCENT_AGENT_MODEL`` that names no model (``" , "``)."""

    error_kind = Kind.USAGE


@dataclass
class Agent:
    """An agent's settings. ``api_base`` is read, never written into a message file."""

    name: str
    models: list[str] = field(default_factory=lambda: [DEFAULT_MODEL])
    context_window: int | None = None
    max_output_tokens: int | None = None
    reasoning: bool | str | None = None
    use_temperature: bool = True
    temperature: float | None = None
    system_prompt: str = ""
    tools: list[str] | None = None
    api_base: str | None = None
    timeout: float | None = None
    max_steps: int | None = None  # None: the user's limit (bound_agent)
    tool_limit: int | None = None  # tools offered per message, when it has more (default 12)
    vision: bool | None = None  # takes image parts (None: as litellm's model map says)
    history_budget: int | None = None  # tokens of history (None: a share of the window)
    history_keep_last: int = 2  # the last messages always sent under history: auto
    history_model: str | None = None  # scores history: auto cells (None: the user's, or local)
    acp: str | None = None  # an external agent the user added (tce acp add NAME): its name
    source: str = "environment"  # "preset", "cell", "environment"

    @property
    def has_tools(self) -> bool:
        return bool(self.tools)


_FIELDS = {f.name for f in fields(Agent)} - {"name", "source"}


BUDGETS = ("max_steps", "timeout", "tool_limit", "max_output_tokens", "context_window")
"""The numbers an agent's definition may set that a run spends (``trust.LIMITS``)."""


def bound_agent(agent: Agent, folder: os.PathLike[str] | str | None
                ) -> tuple[Agent, list[trust.Bounded]]:
    """The agent as a run uses it, each of its budgets bounded by the trust rules for a file
    in ``folder`` (a file may lower the user's limit, a trusted folder raise it to the hard
    cap); and those budgets, so that a front end can say which were lowered."""
    from dataclasses import replace
    from pathlib import Path

    where = Path(folder) if folder is not None else None
    budgets = [trust.bound(name, getattr(agent, name), folder=where) for name in BUDGETS]
    return replace(agent, **{b.name: b.value for b in budgets}), budgets


def agent_from_mapping(name: str, props: Mapping[str, Any], *, source: str,
                       system_prompt: str = "") -> Agent:
    """Build an agent from preset properties; unknown keys are ignored, bad types are errors."""
    if not isinstance(props, Mapping):
        raise AgentError(f"agent {name!r}: properties must be a mapping, not {props!r}")
    kw: dict[str, Any] = {k: v for k, v in props.items() if k in _FIELDS}
    models = kw.get("models", props.get("model"))
    if models is None:
        kw.pop("models", None)
    elif isinstance(models, str) and models.strip():
        kw["models"] = [models]
    elif isinstance(models, list) and models and all(
            isinstance(m, str) and m.strip() for m in models):
        kw["models"] = list(models)
    else:
        raise AgentError(f"agent {name!r}: models must be a model name or a list of them")
    if "acp" in props:
        kw["acp"] = acp_name(name, props)
    tools = kw.get("tools")
    if isinstance(tools, str):
        kw["tools"] = [tools]
    for key in ("context_window", "max_output_tokens", "max_steps", "tool_limit",
                "history_budget", "history_keep_last"):
        if key in kw and kw[key] is not None and not isinstance(kw[key], int):
            raise AgentError(f"agent {name!r}: {key} must be an integer, not {kw[key]!r}")
    if kw.get("history_keep_last") is None:
        kw.pop("history_keep_last", None)
    elif kw["history_keep_last"] < 0:
        raise AgentError(f"agent {name!r}: history_keep_last must be 0 or more")
    if kw.get("history_model") is not None and not (
            isinstance(kw["history_model"], str) and kw["history_model"].strip()):
        raise AgentError(f"agent {name!r}: history_model must be a model name")
    if system_prompt:
        kw["system_prompt"] = system_prompt
    if kw.get("system_prompt") is None:
        kw["system_prompt"] = ""
    return Agent(name=name, source=source, **kw)


COMMAND_KEYS = ("command", "args", "env", "cmd", "permissions")
"""What starts an external agent or decides for it: the user's alone (``tce acp add``)."""


def acp_name(name: str, props: Mapping[str, Any]) -> str:
    """The external agent an agent's ``acp:`` names: one the user added, by its name. A file
    never names a command, an environment or a permission setting."""
    value = props["acp"]
    given = [k for k in COMMAND_KEYS if k in props] or (
        [k for k in COMMAND_KEYS if k in value] if isinstance(value, Mapping) else [])
    if given or not isinstance(value, str) or not value.strip():
        what = f"sets {', '.join(given)}" if given else f"is {value!r}"
        raise AgentError(f"agent {name!r}: acp: names one of your ACP agents (tce acp list); "
                         f"a file cannot give its command or settings, and this one {what}")
    return value.strip()


_FENCE_YAML = re.compile(r"\A\s*(`{3,}|~{3,})\s*ya?ml\s*\n(.*?)\n\1[ \t]*(?:\n|\Z)", re.S)
_DASHES = re.compile(r"\A\s*---[ \t]*\n(.*?)\n---[ \t]*(?:\n|\Z)", re.S)


def split_definition(body: str) -> tuple[str, str]:
    """Split an agent cell body into (YAML text, system prompt)."""
    m = _FENCE_YAML.match(body)
    if m:
        inner, rest = m.group(2), body[m.end():]
        d = _DASHES.match(inner + "\n")
        if d:  # ```yaml fence holding --- lines, as in the seed
            extra = inner[d.end():].strip()
            return d.group(1), (extra + "\n\n" + rest.strip()).strip() if extra else rest.strip()
        return inner, rest.strip()
    m = _DASHES.match(body)
    if m:
        return m.group(1), body[m.end():].strip()
    return "", body.strip()


def agent_from_cell(cell: Mapping[str, Any]) -> Agent:
    """The agent a ``definition="agent"`` cell defines."""
    attrs = fmt.cell_attrs(cell)
    name = attrs.get("name")
    if not name:
        raise AgentError(f"agent definition cell {fmt.cell_id(cell)!r} has no name=\"...\"")
    text, prompt = split_definition(fmt.message_text(cell))
    try:
        props = fmt.load_yaml(text, what="its YAML") if text.strip() else {}
    except fmt.FormatError as exc:
        where = f" (line {exc.line})" if exc.line else ""
        raise AgentError(f"agent {name!r} (cell {fmt.cell_id(cell)}){where}: "
                         f"{exc.reason}") from None
    return agent_from_mapping(str(name), props or {}, source="cell", system_prompt=prompt)


def is_agent_cell(cell: Mapping[str, Any]) -> bool:
    return fmt.cell_kind(cell) == "agent" or fmt.cell_attrs(cell).get("definition") == "agent"


def known_agents(nb: Mapping[str, Any]) -> dict[str, Agent]:
    """Agents defined in a notebook: front-matter presets, then definition cells (a later
    cell redefines an earlier name)."""
    agents: dict[str, Agent] = {}
    presets = fmt.front_matter(nb).get("agents") or {}
    if isinstance(presets, list):  # a list of {name: ..., ...} is accepted too
        presets = {str(p.get("name")): p for p in presets if isinstance(p, Mapping)}
    if not isinstance(presets, Mapping):
        raise AgentError("front matter 'agents' must be a mapping of agent names to settings")
    for name, props in presets.items():
        agents[str(name)] = agent_from_mapping(str(name), props or {}, source="preset")
    for cell in nb.get("cells", []):
        if is_agent_cell(cell):
            agent = agent_from_cell(cell)
            agents[agent.name] = agent
    return agents


def environment_agent(env: Mapping[str, str] | None = None, *, model: str | None = None) -> Agent:
    """The fallback agent: ``--model``, else ``PERCENT_AGENT_MODEL``, else the user's
    ``default_model`` (``tce models default``), else a small default."""
    env = os.environ if env is None else env
    spec = model or env.get("PERCENT_AGENT_MODEL") or default_model()
    models = [m.strip() for m in spec.split(",") if m.strip()]
    if not models:
        what = "--model" if model else "PERCENT_AGENT_MODEL="
        raise NoModelError(f"{what}{' ' if model else ''}{spec!r} names no model")
    return Agent(name=DEFAULT_AGENT_NAME, models=models, source="environment")


def default_model() -> str:
    """The user's ``default_model`` (their config), else :data:`DEFAULT_MODEL`. A config that
    does not parse is reported where it matters (budgets, trust); here it is the default."""
    try:
        return trust.load_config().default_model or DEFAULT_MODEL
    except (trust.ConfigError, OSError):
        return DEFAULT_MODEL


def known_agent_names(agents: Mapping[str, Agent]) -> list[str]:
    """The names an agent may be asked for: those defined (sorted), then ``default`` (the
    environment's agent), which is always valid."""
    names = sorted(agents)
    return names if DEFAULT_AGENT_NAME in agents else [*names, DEFAULT_AGENT_NAME]


def unknown_agent_error(name: str, agents: Mapping[str, Agent]) -> AgentError:
    """The error for an agent name that is neither defined nor ``default``."""
    names = known_agent_names(agents)
    return AgentError(f"unknown agent {name!r}{did_you_mean(name, names)}; known agents: "
                      + ", ".join(names))


def resolve_agent(nb: Mapping[str, Any], cell: Mapping[str, Any] | None = None, *,
                  cli_agent: str | None = None, model: str | None = None,
                  env: Mapping[str, str] | None = None) -> Agent:
    """Which agent answers ``cell``: its ``agent`` attribute, the CLI-named one, the file's
    ``default_agent``, the first preset, the first agent cell, else the environment's.
    ``model`` (``--model``) overrides the chosen agent's models."""
    agents = known_agents(nb)
    wanted = None
    if cell is not None:
        wanted = fmt.cell_attrs(cell).get("agent")
    wanted = wanted or cli_agent or fmt.front_matter(nb).get("default_agent")
    if wanted:
        wanted = str(wanted)
        if wanted in agents:
            agent = agents[wanted]
        elif wanted == DEFAULT_AGENT_NAME:
            agent = environment_agent(env, model=model)
        else:
            raise unknown_agent_error(wanted, agents)
    elif agents:
        agent = next(iter(agents.values()))
    else:
        agent = environment_agent(env, model=model)
    if model:
        agent = _replace_models(agent, model)
    return agent


def _replace_models(agent: Agent, model: str) -> Agent:
    from dataclasses import replace

    models = [m.strip() for m in model.split(",") if m.strip()]
    if not models:
        raise NoModelError(f"--model {model!r} names no model")
    return replace(agent, models=models)
