"""The ATTP loop: model step, sandbox run, results back to the model, until an answer.

Every step is recorded as outputs of the message cell: the agent's step (``reasoning=1``),
the tool call (``CELL.NONCE``), its result (``CELL.NONCE.1``), the images its tools returned
(``CELL.NONCE.2``...: image parts in the next round for a model that sees images), and the
final reply. A reply
that is not valid ATTP goes back once with the parser's error; after that, prose is taken
as the final answer. The step limit comes from the caller (``trust.step_limit``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.outcome import sandbox_word
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.code_history import sees_images, tool_image_output, with_images
from jupyter_percent_agent.runtime.events import Chunk, Step
from jupyter_percent_agent.runtime.models import CallResult
from jupyter_percent_agent.runtime.reply import ask, fail_with, record_usage, reply_attrs
from jupyter_percent_agent.runtime.run import Run
from jupyter_percent_agent.runtime.toolset import Toolset
from jupyter_percent_agent.runtime.transport import Transport
from jupyter_percent_agent.tools import ToolImage, collecting_images
from jupyter_percent_agent.trust import Route

SANDBOX_TIMEOUT = 30.0


def to_json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(value)


PROMPT_RESULT_CHARS = 20_000
"""Characters of a run's result (and of its printed output) that go back to the model; the
file keeps them whole."""


def cut_for_prompt(text: str, limit: int = PROMPT_RESULT_CHARS) -> str:
    """``text``, or its first ``limit`` characters and a marker saying what was left out."""
    if len(text) <= limit:
        return text
    return (text[:limit] + f"\n... [cut: {len(text) - limit} more characters; keep the value "
            "in a variable and filter it in code]")


def _result_parts(res: Any, result_head: str, printed_head: str,
                  cut: Any = lambda text: text) -> list[str]:
    """A sandbox run's result, printed output, error and instructions, as Markdown blocks."""
    parts = []
    if res.ok:
        parts.append(result_head + "```json\n" + cut(to_json_text(res.result)) + "\n```")
    if res.stdout:
        parts.append(printed_head + "\n" + cut(res.stdout.rstrip()) + "\n```")
    if res.error is not None:
        parts.append(f"Error: {res.error}")
    parts.extend(f"Instruction: {ins}" for ins in res.instructions or [])
    return parts


def result_message(res: Any) -> str:
    """The user turn that carries a sandbox run back to the model."""
    return "\n\n".join([
        f"Tool call status: {sandbox_word(res.status, res.reason)}",
        *_result_parts(res, "__result__:\n", "Printed output:\n```", cut_for_prompt),
        'Continue: call more tools, or give the final answer as ATTP TOML (answer = """...""").'])


def result_text(res: Any) -> str:
    """The body of the tool-result output recorded in the file."""
    return "\n\n".join(_result_parts(res, "", "```text")) or "(no result)"


async def attp_loop(run: Run, agent: Agent, toolset: Toolset, messages: list[dict[str, Any]], *,
                    route: Route, transport: Transport, extra: dict[str, Any],
                    max_steps: int, image_cap: int | None = None) -> None:
    """Run the ATTP loop for one message; its outputs go to ``run``. ``image_cap``: the
    bytes of images one tool run may save (the user's ``code_output_bytes``; None: all)."""
    from jupyter_percent_agent import attp, sandbox

    messages = list(messages)
    repaired = False
    for n in range(1, max_steps + 1):
        run.tell(Step(n))
        res = await ask(run, agent, messages, route=route, transport=transport, step=True)
        if not res.ok:
            fail_with(run, agent, res)
            return
        record_usage(run, res)
        try:
            parsed = attp.parse_reply(res.text)
        except attp.ATTPError as exc:
            if not repaired:
                repaired = True
                _reply(run, agent, res, res.text, reasoning=1, attp_error=str(exc))
                messages += [{"role": "assistant", "content": res.text},
                             {"role": "user", "content": exc.repair_prompt()}]
                continue
            _answer(run, agent, res, res.text, extra)
            return
        if isinstance(parsed, attp.FinalAnswer):
            if parsed.proposed is not None:
                run.propose(parsed.proposed.language, parsed.proposed.code)
            _answer(run, agent, res, parsed.answer, extra)
            return
        if isinstance(parsed, attp.Refusal):
            _answer(run, agent, res, parsed.message, {**extra, "status": "fail"})
            return
        _reply(run, agent, res, res.text, reasoning=1)
        call_id = fmt.tool_call_id(run.cell_id)
        with collecting_images() as images:  # images a tool returned (an MCP server's)
            try:
                result = await sandbox.execute_async(
                    parsed.code, tools=toolset.registry, defined=list(toolset.defined.values()),
                    timeout=SANDBOX_TIMEOUT,
                    on_chunk=lambda name, chunk: run.tell(Chunk(name, chunk)))
            except asyncio.CancelledError:
                _interrupted_call(run, parsed, call_id)
                raise
        names = sorted({c.name for c in result.tool_calls}) or ["python"]
        run.emit(fmt.tool_call_output(",".join(names), parsed.code, out_id=call_id,
                                      attrs={"target": parsed.target} if parsed.target
                                      else None))
        run.emit(fmt.tool_result_output(
            result_text(result), out_id=f"{call_id}.1",
            status="success" if result.ok else "fail",  # the ATTP words a [tool_result] has
            attrs={"duration": round(result.duration, 3),
                   **({"error": str(result.error)} if result.error else {})}))
        kept = _emit_images(run, images, call_id, image_cap)
        messages += [{"role": "assistant", "content": res.text},
                     {"role": "user", "content": _with_images(result_message(result), kept,
                                                              agent)}]
    run.fail("StepLimit", f"no final answer after {max_steps} steps")
    run.emit(fmt.error_output("StepLimit", run.error or "", [], out_id=run.next_output_id(),
                              attrs={"agent": agent.name}))


def _interrupted_call(run: Run, parsed: Any, call_id: str) -> None:
    """The user stopped the call as it ran: it stays on record, its result saying so (for
    the file, and for the model at the next message)."""
    run.emit(fmt.tool_call_output("python", parsed.code, out_id=call_id,
                                  attrs={"target": parsed.target} if parsed.target else None))
    run.emit(fmt.tool_result_output(
        "interrupted: the user stopped this run before it finished", out_id=f"{call_id}.1",
        status="fail", attrs={"interrupted": True}))


def _emit_images(run: Run, images: list[ToolImage], call_id: str, cap: int | None
                 ) -> list[tuple[int, ToolImage]]:
    """The tools' images as outputs of the call's record (``CALL.2``...), within ``cap``
    bytes: one past it is a line saying so, neither saved nor sent. (number, image) kept."""
    kept: list[tuple[int, ToolImage]] = []
    room = cap
    for n, image in enumerate(images, start=1):
        out_id = f"{call_id}.{n + 1}"
        size = len(image.data)
        if room is not None and size > room:
            run.emit(fmt.tool_result_output(
                f"[image {n}: {image.mime}, from {image.tool}: not kept, {size} bytes past "
                f"the cap of {cap} bytes (code_output_bytes in your config)]",
                out_id=out_id, status="success", attrs={"name": image.tool, "truncated": size}))
            continue
        room = None if room is None else room - size
        run.emit(tool_image_output(image.mime, image.data, number=n, tool=image.tool,
                                   out_id=out_id))
        kept.append((n, image))
    return kept


def _with_images(text: str, images: list[tuple[int, ToolImage]], agent: Agent
                 ) -> str | list[dict[str, Any]]:
    """The result turn with the tools' images: image parts for a model that sees images,
    else a line saying they are not shown (as for a code cell's plots)."""
    if not images:
        return text
    text += "\n\n" + "\n".join(f"[image {n}: {i.mime}, from {i.tool}]" for n, i in images)
    return with_images(text, [(i.mime, i.data) for _, i in images],
                       vision=sees_images(agent.vision, agent.models[0]))


def _reply(run: Run, agent: Agent, res: CallResult, text: str, **attrs: Any) -> None:
    run.emit(fmt.reply_output(text, agent=agent.name, out_id=run.next_output_id(),
                              attrs=reply_attrs(agent, res, **attrs)))


def _answer(run: Run, agent: Agent, res: CallResult, text: str, extra: dict[str, Any]) -> None:
    run.answer(text)
    _reply(run, agent, res, text, **extra)
