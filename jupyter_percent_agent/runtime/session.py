"""Running one cell: the glue between agents, history, model calls, the ATTP loop and tools.

``run_cell`` reads a notebook (a snapshot) and returns a ``CellRun``: the outputs to append
to the cell and the summaries made on the way. It never writes a file: the caller applies the
run to a fresh copy of the file (``runtime.store``), so concurrent runs lose nothing.
Knows nothing of Jupyter or the terminal; both talk to it through ``on_event``.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.runtime.agents import Agent, resolve_agent
from jupyter_percent_agent.runtime.models import CallResult, CallSpec, complete, spec_for
from jupyter_percent_agent.runtime.ranges import Selection, parse_selection
from jupyter_percent_agent.trust import Route, route_for

OnEvent = Callable[[str, Any], None]
"""``on_event(kind, payload)``: "delta" (text), "reasoning" (text), "retry" (why),
"output" (an output dict just made), "step" (n), "status" (a line for the user)."""

SUMMARY_PROMPT = (
    "Summarize the following part of a conversation in a few sentences. Keep facts, decisions, "
    "names and numbers; drop pleasantries. Answer with the summary only."
)


@dataclass
class RunOptions:
    """What the caller chose: agent, model override, selections, where tools live."""

    agent: str | None = None
    model: str | None = None
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    base_dir: Path | None = None
    file_path: Path | None = None
    env: Mapping[str, str] | None = None
    max_steps: int | None = None
    current_text: str | None = None


@dataclass
class CellRun:
    """What running a cell produced. ``status``: "ok", "error", "interrupted"."""

    cell_id: str
    agent: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    summaries: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (text, hash)
    dropped: list[str] = field(default_factory=list)
    status: str = "ok"
    error: str | None = None
    error_type: str | None = None
    error_detail: str | None = None  # ``error`` for the terminal (may name the api_base)
    reply: str = ""
    usage: dict[str, Any] = field(default_factory=dict)


def _noop(kind: str, payload: Any) -> None:
    pass


def _next_n(cell: Mapping[str, Any], run: CellRun) -> int:
    """The next ``n`` of an ``ID.n`` output id (tool calls ``ID.NONCE`` do not count)."""
    outputs = [*(cell.get("outputs", []) or []), *run.outputs]
    prefix = run.cell_id + "."
    numbers = [0]
    for i, out in enumerate(outputs, start=1):
        oid = fmt.output_id(out)
        if fmt.output_kind(out) == "tool_call":
            continue  # its id is CELL.NONCE, and a hex nonce can be all digits
        if oid is None:
            numbers.append(i)
        elif oid.startswith(prefix) and oid[len(prefix):].isdigit():
            numbers.append(int(oid[len(prefix):]))
    return max(numbers) + 1


def _reply_attrs(agent: Agent, res: CallResult, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {"agent": agent.name, "model": res.model, "time": res.time,
                             "duration": res.duration, "tokens_in": res.tokens_in,
                             "tokens_out": res.tokens_out, "cost": res.cost}
    attrs.update(extra)
    return {k: v for k, v in attrs.items() if v is not None}


def _error_out(run: CellRun, cell: Mapping[str, Any], agent: Agent, res: CallResult
               ) -> dict[str, Any]:
    attrs = {"agent": agent.name, "time": res.time, "duration": res.duration,
             "models": list(agent.models)}
    ename = res.error_type or "ModelError"
    evalue = (res.error or "model call failed").removeprefix(f"{ename}: ")
    return fmt.error_output(ename, evalue, attempt_lines(res.attempts, evalue),
                            out_id=f"{run.cell_id}.{_next_n(cell, run)}", attrs=attrs)


def attempt_lines(attempts: Sequence[str], reason: str) -> list[str]:
    """The attempts worth listing under an error: repeats folded into one line with a count,
    and none at all when every attempt failed for the error's own reason."""
    folded: list[list[Any]] = []
    for line in attempts:
        if folded and folded[-1][0] == line:
            folded[-1][1] += 1
        else:
            folded.append([line, 1])
    if len(folded) == 1 and folded[0][0].partition(": ")[2] == reason:
        return []
    return [f"{line} ({n} attempts)" if n > 1 else line for line, n in folded]


def load_included(selections: Sequence[Selection], base_dir: Path,
                  excluded: Sequence[Selection] = (), *, confined: Sequence[Selection] = ()
                  ) -> list[hist.Included]:
    """Cells of other files named by ``-i OTHER/[1..3]`` (selections with a path), less
    those excluded by ``-e OTHER/[2]``. Selections in ``confined`` come from the file itself
    (its ``include:``) and must name files in its own folder (``TrustError`` otherwise); the
    others were typed by the user."""
    out: list[hist.Included] = []
    for sel in selections:
        if sel.path is None:
            continue
        if sel in confined:
            path = _confined_item(sel.path, base_dir)
        else:
            path = resolve_item(sel.path, base_dir)
        cells = hist.conversation_cells(fmt.read(path))
        skip = {i for e in excluded if e.path is not None
                and resolve_item(e.path, base_dir).resolve() == path.resolve()
                for i in e.indices(len(cells))}
        for i in sel.indices(len(cells)):
            if i not in skip:
                out.append(hist.Included(f"{sel.path}[{i}]", cells[i - 1]))
    return out


def _confined_item(item: str, base_dir: Path) -> Path:
    """An ITEM named in a file's front matter, inside the file's folder."""
    path = trust.resolve_inside(base_dir, item, what="include")
    if path.exists() or path.name.endswith(".md"):
        return path
    return trust.resolve_inside(base_dir, item + ".msg.md", what="include")


def resolve_item(item: str, base_dir: Path | None = None) -> Path:
    """A message file path from an ITEM (``.msg.md`` optional)."""
    p = Path(item)
    if base_dir is not None and not p.is_absolute():
        p = base_dir / p
    if p.exists() or p.name.endswith(".md"):
        return p
    return p.with_name(p.name + ".msg.md")


def saved_selections(nb: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Include / exclude selections saved in the front matter by ``--save``."""
    fm = fmt.front_matter(nb)
    inc, exc = fm.get("include") or [], fm.get("exclude") or []
    return ([inc] if isinstance(inc, str) else list(inc),
            [exc] if isinstance(exc, str) else list(exc))


def selections(options: RunOptions, nb: Mapping[str, Any]
               ) -> tuple[list[Selection], list[Selection], list[Selection]]:
    """Includes, excludes, and the includes the file itself asked for (front matter)."""
    inc, exc = saved_selections(nb)
    saved = [parse_selection(s) for s in inc]
    return ([*saved, *(parse_selection(s) for s in options.include)],
            [parse_selection(s) for s in [*exc, *options.exclude]], saved)


def _budget(agent: Agent) -> int | None:
    window = agent.context_window
    if window is None:
        return None
    return max(256, window - (agent.max_output_tokens or 0))


def _token_counter(agent: Agent) -> Callable[[list[dict[str, str]]], int]:
    from jupyter_percent_agent.runtime.models import import_litellm

    litellm = import_litellm()
    model = agent.models[0]

    def count(messages: list[dict[str, str]]) -> int:
        try:
            return int(litellm.token_counter(model=model, messages=messages))
        except Exception:  # unknown tokenizer: litellm's default
            return int(litellm.token_counter(messages=messages))

    return count


def tools_for(agent: Agent, base_dir: Path | None) -> Any:
    """The tool registry an agent may use: its ``tools`` modules, from installed packages
    (entry points) and from ``toolbox/`` beside the file when its folder is trusted. A
    module of an untrusted toolbox is refused (``TrustError``), never imported."""
    from jupyter_percent_agent import trust
    from jupyter_percent_agent.tools import Registry

    toolbox = (base_dir / "toolbox") if base_dir is not None else None
    if toolbox is not None and not toolbox.is_dir():
        toolbox = None
    modules = None if agent.tools in (None, ["*"], ["all"]) else agent.tools
    if toolbox is not None and base_dir is not None and not trust.is_trusted(base_dir):
        beside = {p.stem for p in toolbox.glob("*.py") if not p.stem.startswith("_")}
        asked = beside if modules is None else beside & set(modules)
        if asked:
            what = (f"agent {agent.name!r} (tools: {', '.join(sorted(asked))})"
                    if agent.name != TOOL_CELLS else "this tool call")
            raise trust.refuse_toolbox(base_dir, what)
        toolbox = None
    return Registry.load(toolbox, modules=modules)


TOOL_CELLS = "tools"
"""The name of the pseudo-agent whose registry ``[tool_call]`` cells call."""


def system_prompt_for(agent: Agent, registry: Any | None) -> str:
    if registry is None:
        return agent.system_prompt
    from jupyter_percent_agent import attp

    return attp.system_prompt(agent_prompt=agent.system_prompt, tools=registry.describe(),
                              modules=attp.ALLOWED_MODULES)


def plan_history(nb: Mapping[str, Any], index: int, agent: Agent, options: RunOptions, *,
                 system_prompt: str, summaries: Mapping[str, str] | None = None
                 ) -> hist.History:
    """The history for the cell at 1-based ``index``, fitted to the agent's window."""
    cells = hist.conversation_cells(nb)
    inc, exc, saved = selections(options, nb)
    base = options.base_dir or Path.cwd()
    included = load_included(inc, base, exc, confined=saved)
    exclude_here = {i for s in exc if s.path is None for i in s.indices(len(cells))}
    include_here = {i for s in inc if s.path is None for i in s.indices(len(cells))}
    history = hist.build_history(cells, index, system_prompt=system_prompt,
                                 current_text=options.current_text, included=included,
                                 exclude=exclude_here, include=include_here,
                                 summaries=summaries, document=hist.preamble_text(nb))
    budget = _budget(agent)
    if budget is None:
        return history
    return hist.fit(history, budget, _LazyCounter(agent))


class _LazyCounter:
    """Counts tokens only when the cheap byte bound says it is needed: through the warm
    helper when ``tce`` uses one (so litellm is not imported here), else with litellm."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._count: Callable[[list[dict[str, str]]], int] | None = None

    def __call__(self, messages: list[dict[str, str]]) -> int:
        if self._count is None:
            self._count = _token_counter(self.agent)
        return self._count(messages)

    def each(self, messages: list[dict[str, str]]) -> list[int]:
        from jupyter_percent_agent.runtime import models

        if models.USE_HELPER:
            from jupyter_percent_agent.runtime import warm

            counts = warm.try_count(self.agent.models[0], messages)
            if counts is not None:
                return counts
        return models.count_tokens(self.agent.models[0], messages)


async def make_summaries(nb: Mapping[str, Any], index: int, agent: Agent,
                         on_event: OnEvent = _noop, *, route: Route | None = None
                         ) -> dict[str, tuple[str, str]]:
    """Summaries for the earlier ``history="summary"`` cells that have none (or a stale one)."""
    made: dict[str, tuple[str, str]] = {}
    cells = hist.conversation_cells(nb)
    for _i, cell, mode in hist.earlier_cells(cells, index):
        if mode != "summary" or hist.stored_summary(cell) is not None:
            continue
        cid = fmt.cell_id(cell)
        text = "\n\n".join(f"{t.role}: {t.content}" for t in hist.cell_turns(cell, cid))
        spec = spec_for(agent, [{"role": "system", "content": SUMMARY_PROMPT},
                                {"role": "user", "content": text}], route=route)
        on_event("status", f"summarizing cell {cid}")
        res = await complete(spec)
        if res.error is None and res.text.strip():
            made[cid] = (res.text.strip(), hist.content_hash(cell))
    return made


def find_cell(nb: Mapping[str, Any], cell_id: str) -> tuple[int, dict[str, Any]]:
    """(1-based index, cell) of the cell with footnote id ``cell_id``."""
    for i, cell in enumerate(hist.conversation_cells(nb), start=1):
        if fmt.cell_id(cell) == cell_id:
            return i, cell
    raise KeyError(cell_id)


async def run_cell(nb: Mapping[str, Any], cell_id: str, options: RunOptions | None = None,
                   on_event: OnEvent = _noop, *, run: CellRun | None = None) -> CellRun:
    """Run the cell ``cell_id`` of ``nb`` (a message, code, tool call...) and return what it
    produced. Model failures end as an ``[error]`` output, not an exception. Pass ``run`` to
    keep what was produced when the task is cancelled (a partial reply is recorded with
    ``interrupted=true``)."""
    options = options or RunOptions()
    index, cell = find_cell(nb, cell_id)
    kind = fmt.cell_kind(cell)
    run = run if run is not None else CellRun(cell_id=cell_id)
    if kind == "code":
        from jupyter_percent_agent.runtime.cells import run_code_cell

        await run_code_cell(cell, run, on_event)
        return run
    if kind in ("tool_call", "toolchain"):
        from jupyter_percent_agent.runtime.cells import run_tool_cell

        await run_tool_cell(cell, run, options, on_event)
        return run
    if kind == "async":
        done = _async_done(cell, run, options)
        if done is not None:
            run.outputs.append(done)
            on_event("output", done)
            return run
    agent = resolve_agent(nb, cell, cli_agent=options.agent, model=options.model,
                          env=options.env)
    run.agent = agent.name
    route = route_for(agent.api_base, folder=options.base_dir, agent=agent.name,
                      env=options.env)
    registry = tools_for(agent, options.base_dir) if agent.has_tools else None
    run.summaries = await make_summaries(nb, index, agent, on_event, route=route)
    history = plan_history(nb, index, agent, options, system_prompt=system_prompt_for(
        agent, registry), summaries={k: v[0] for k, v in run.summaries.items()})
    run.dropped = history.dropped
    extra = {"dropped": history.dropped} if history.dropped else {}
    if registry is None:
        await _plain_reply(cell, agent, history.messages, run, on_event, extra, route)
    else:
        from jupyter_percent_agent.runtime.loop import attp_loop

        await attp_loop(cell, agent, registry, history.messages, run, on_event, extra,
                        max_steps=step_limit(options, agent), route=route)
    if kind == "async" and run.status == "ok":
        _async_land(cell, run, options)
    return run


def step_limit(options: RunOptions, agent: Agent) -> int:
    """ATTP steps for one message: the caller's choice (the user's), else the agent's as the
    trust rules allow (a file may lower the user's limit, not raise it)."""
    if options.max_steps:
        return min(options.max_steps, trust.HARD_MAX_STEPS)
    return trust.step_limit(agent.max_steps, folder=options.base_dir)


def _async_file(cell: Mapping[str, Any], options: RunOptions) -> Path | None:
    """The FILE of ``[async](FILE)``, inside the message file's folder (``TrustError``)."""
    link = hist.cell_link(cell)
    if link is None:
        return None
    return trust.resolve_inside(options.base_dir or Path.cwd(), link, what="[async] file")


def _async_done(cell: Mapping[str, Any], run: CellRun, options: RunOptions
                ) -> dict[str, Any] | None:
    """An ``[async](FILE)`` cell whose FILE has landed shows it (and calls no model)."""
    path = _async_file(cell, options)
    if path is None or not path.is_file() or not path.read_text().strip():
        return None
    run.reply = path.read_text()
    return fmt.reply_output(run.reply, agent="async", out_id=f"{run.cell_id}.{_next_n(cell, run)}",
                            attrs={"file": hist.cell_link(cell), "status": "done"})


def _async_land(cell: Mapping[str, Any], run: CellRun, options: RunOptions) -> None:
    """Write the reply of an ``[async](FILE)`` cell into FILE (atomically)."""
    path = _async_file(cell, options)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt.write_text(path, run.reply)


class Partial:
    """Collects streamed text so an interrupted or failed call can still be recorded.

    ``text`` is what the current attempt streamed; ``cut`` what the last attempt that failed
    after streaming something had shown before the retry started afresh.
    """

    def __init__(self, on_event: OnEvent) -> None:
        self.text = ""
        self.cut = ""
        self.on_event = on_event

    def __call__(self, kind: str, text: str) -> None:
        if kind == "content":
            self.text += text
            self.on_event("delta", text)
        elif kind == "reasoning":
            self.on_event("reasoning", text)
        elif kind == "retry":
            if self.text:
                self.cut = self.text
            self.text = ""
            self.on_event("retry", text)


async def call(cell: Mapping[str, Any], agent: Agent, messages: list[dict[str, Any]],
               run: CellRun, on_event: OnEvent, *, reasoning_step: bool = False,
               route: Route | None = None) -> CallResult:
    """One model call; on cancellation the partial reply is recorded ``interrupted=true``."""
    partial = Partial(on_event)
    spec: CallSpec = spec_for(agent, messages, env=None, route=route)
    started = time.monotonic()
    try:
        res = await complete(spec, partial)
        streamed = partial.text or partial.cut
        if res.error is not None and streamed:
            # the connection broke mid-reply: keep what the user saw, marked incomplete (the
            # [error] after it says why)
            attrs = {"agent": agent.name, "model": agent.models[0], "incomplete": True,
                     "duration": round(time.monotonic() - started, 3)}
            if reasoning_step:
                attrs["reasoning"] = 1
            out = fmt.reply_output(streamed, agent=agent.name,
                                   out_id=f"{run.cell_id}.{_next_n(cell, run)}", attrs=attrs)
            run.outputs.append(out)
            on_event("output", out)
        return res
    except asyncio.CancelledError:
        run.status = "interrupted"
        if partial.text:
            attrs = {"agent": agent.name, "model": agent.models[0], "interrupted": True,
                     "duration": round(time.monotonic() - started, 3)}
            if reasoning_step:
                attrs["reasoning"] = 1
            out = fmt.reply_output(partial.text, agent=agent.name,
                                   out_id=f"{run.cell_id}.{_next_n(cell, run)}", attrs=attrs)
            run.outputs.append(out)
        raise


def _add_usage(run: CellRun, res: CallResult) -> None:
    u = run.usage
    for key in ("tokens_in", "tokens_out", "cost"):
        value = getattr(res, key)
        if value is not None:
            u[key] = round(u.get(key, 0) + value, 8)
    u["model"] = res.model


async def _plain_reply(cell: Mapping[str, Any], agent: Agent, messages: list[dict[str, Any]],
                       run: CellRun, on_event: OnEvent, extra: dict[str, Any],
                       route: Route | None = None) -> None:
    res = await call(cell, agent, messages, run, on_event, route=route)
    if res.error is not None:
        run.status, run.error, run.error_type = "error", res.error, res.error_type
        run.error_detail = res.error_detail
        out = _error_out(run, cell, agent, res)
    else:
        _add_usage(run, res)
        run.reply = res.text
        out = fmt.reply_output(res.text, agent=agent.name,
                               out_id=f"{run.cell_id}.{_next_n(cell, run)}",
                               attrs=_reply_attrs(agent, res, **extra))
    run.outputs.append(out)
    on_event("output", out)


def nonce() -> str:
    """A random nonce for tool-call ids (``CELL.NONCE``), so text cannot forge a call."""
    return secrets.token_hex(3)


def to_json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(value)


def env_flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() not in ("", "0", "false", "no", "off")
