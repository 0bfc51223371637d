"""The ATTP loop: model step, sandbox run, results back to the model, until an answer.

Every step is recorded as outputs of the message cell: the agent's step (``reasoning=1``),
the tool call (``CELL.NONCE``), its result (``CELL.NONCE.1``), and the final reply. A reply
that is not valid ATTP goes back once with the parser's error; after that, prose is taken
as the final answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.session import (
    CellRun,
    OnEvent,
    _add_usage,
    _error_out,
    _next_n,
    _reply_attrs,
    call,
    nonce,
    to_json_text,
)

SANDBOX_TIMEOUT = 30.0


def result_message(res: Any) -> str:
    """The user turn that carries a sandbox run back to the model."""
    parts = [f"Tool call status: {res.status}"]
    if res.status == "success":
        parts.append("__result__:\n```json\n" + to_json_text(res.result) + "\n```")
    if res.stdout:
        parts.append("Printed output:\n```\n" + res.stdout.rstrip() + "\n```")
    if res.error is not None:
        parts.append(f"Error: {res.error}")
    for ins in res.instructions or []:
        parts.append(f"Instruction: {ins}")
    parts.append("Continue: call more tools, or give the final answer as ATTP TOML "
                 '(answer = """...""").')
    return "\n\n".join(parts)


def result_text(res: Any) -> str:
    """The body of the tool-result output recorded in the file."""
    parts = []
    if res.status == "success":
        parts.append("```json\n" + to_json_text(res.result) + "\n```")
    if res.stdout:
        parts.append("```text\n" + res.stdout.rstrip() + "\n```")
    if res.error is not None:
        parts.append(f"Error: {res.error}")
    for ins in res.instructions or []:
        parts.append(f"Instruction: {ins}")
    return "\n\n".join(parts) or "(no result)"


async def attp_loop(cell: Mapping[str, Any], agent: Agent, registry: Any,
                    messages: list[dict[str, Any]], run: CellRun, on_event: OnEvent,
                    extra: dict[str, Any], *, max_steps: int = 8,
                    route: Any = None) -> None:
    """Run the ATTP loop for one message; appends outputs to ``run``."""
    from jupyter_percent_agent import attp, sandbox

    messages = list(messages)
    repaired = False
    for step in range(1, max_steps + 1):
        on_event("step", step)
        res = await call(cell, agent, messages, run, on_event, route=route)
        if res.error is not None:
            run.status, run.error, run.error_type = "error", res.error, res.error_type
            run.error_detail = res.error_detail
            out = _error_out(run, cell, agent, res)
            run.outputs.append(out)
            on_event("output", out)
            return
        _add_usage(run, res)
        try:
            parsed = attp.parse_reply(res.text)
        except attp.ATTPError as exc:
            if not repaired:
                repaired = True
                _record(run, cell, agent, res, res.text, reasoning=1, attp_error=str(exc),
                        on_event=on_event)
                messages += [{"role": "assistant", "content": res.text},
                             {"role": "user", "content": exc.repair_prompt()}]
                continue
            _final(run, cell, agent, res, res.text, extra, on_event)
            return
        if isinstance(parsed, attp.FinalAnswer):
            _final(run, cell, agent, res, parsed.answer, extra, on_event)
            return
        if isinstance(parsed, attp.Refusal):
            _final(run, cell, agent, res, parsed.message, {**extra, "status": "fail"}, on_event)
            return
        _record(run, cell, agent, res, res.text, reasoning=1, on_event=on_event)
        call_id = f"{run.cell_id}.{nonce()}"
        result = await sandbox.execute_async(
            parsed.code, tools=registry, timeout=SANDBOX_TIMEOUT,
            on_chunk=lambda name, chunk: on_event("chunk", (name, chunk)))
        names = sorted({c.name for c in result.tool_calls}) or ["python"]
        call_out = fmt.tool_call_output(",".join(names), parsed.code, out_id=call_id,
                                        attrs={"target": parsed.target} if parsed.target
                                        else None)
        status = "success" if result.status == "success" else "fail"
        res_out = fmt.tool_result_output(result_text(result), out_id=f"{call_id}.1",
                                         status=status,
                                         attrs={"duration": round(result.duration, 3),
                                                **({"error": str(result.error)}
                                                   if result.error else {})})
        for out in (call_out, res_out):
            run.outputs.append(out)
            on_event("output", out)
        messages += [{"role": "assistant", "content": res.text},
                     {"role": "user", "content": result_message(result)}]
    run.status, run.error, run.error_type = "error", f"no final answer after {max_steps} steps", \
        "StepLimit"
    out = fmt.error_output("StepLimit", run.error, [], out_id=f"{run.cell_id}.{_next_n(cell, run)}",
                           attrs={"agent": agent.name})
    run.outputs.append(out)
    on_event("output", out)


def _record(run: CellRun, cell: Mapping[str, Any], agent: Agent, res: Any, text: str, *,
            reasoning: int, on_event: OnEvent, **extra: Any) -> None:
    out = fmt.reply_output(text, agent=agent.name, out_id=f"{run.cell_id}.{_next_n(cell, run)}",
                           attrs=_reply_attrs(agent, res, reasoning=reasoning, **extra))
    run.outputs.append(out)
    on_event("output", out)


def _final(run: CellRun, cell: Mapping[str, Any], agent: Agent, res: Any, text: str,
           extra: dict[str, Any], on_event: OnEvent) -> None:
    run.reply = text
    out = fmt.reply_output(text, agent=agent.name, out_id=f"{run.cell_id}.{_next_n(cell, run)}",
                           attrs=_reply_attrs(agent, res, **extra))
    run.outputs.append(out)
    on_event("output", out)
