"""Asking the model for one reply on behalf of a run.

Streams the reply to the front end as it arrives and keeps what the user saw when the call
does not finish: cut off mid-stream (``incomplete=true``, before the ``[error]`` saying why) or
cancelled (``interrupted=true``). Also the attributes a reply records and the ``[error]`` a
failed call leaves.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.runtime.agents import Agent
from jupyter_percent_agent.runtime.events import Delta, Event, Retry
from jupyter_percent_agent.runtime.models import CallResult, spec_for
from jupyter_percent_agent.runtime.run import Run
from jupyter_percent_agent.runtime.transport import Transport
from jupyter_percent_agent.trust import Route


class _Streamed:
    """What the current attempt streamed; ``cut``: what the last attempt that failed after
    streaming something had shown before the retry started afresh."""

    def __init__(self, run: Run) -> None:
        self.text = ""
        self.cut = ""
        self.run = run

    def __call__(self, event: Event) -> None:
        if isinstance(event, Delta):
            self.text += event.text
        elif isinstance(event, Retry):
            if self.text:
                self.cut = self.text
            self.text = ""
        self.run.tell(event)


async def ask(run: Run, agent: Agent, messages: list[dict[str, Any]], *, route: Route,
              transport: Transport, step: bool = False) -> CallResult:
    """One model call. ``step``: the reply may be an ATTP step (a partial one is then kept
    as a step, ``reasoning=1``, not as an answer)."""
    streamed = _Streamed(run)
    spec = spec_for(agent, messages, route=route)
    started = time.monotonic()

    def partial(text: str, mark: str) -> dict[str, Any]:
        attrs: dict[str, Any] = {"agent": agent.name, "model": agent.models[0], mark: True,
                                 "duration": round(time.monotonic() - started, 3)}
        if step:
            attrs["reasoning"] = 1
        return fmt.reply_output(text, agent=agent.name, out_id=run.next_output_id(),
                                attrs=attrs)

    try:
        res = await transport.complete(spec, streamed)
    except asyncio.CancelledError:
        if streamed.text:
            run.keep_partial(partial(streamed.text, "interrupted"))
        raise
    shown = streamed.text or streamed.cut
    if res.error is not None and shown:
        # the connection broke mid-reply: keep what the user saw; the [error] after it says why
        run.emit(partial(shown, "incomplete"))
    return res


def reply_attrs(agent: Agent, res: CallResult, **extra: Any) -> dict[str, Any]:
    """What a reply records: agent, model, time, duration, tokens, cost (when known)."""
    attrs: dict[str, Any] = {"agent": agent.name, "model": res.model, "time": res.time,
                             "duration": res.duration, "tokens_in": res.tokens_in,
                             "tokens_out": res.tokens_out, "cost": res.cost}
    attrs.update(extra)
    return {k: v for k, v in attrs.items() if v is not None}


def record_usage(run: Run, res: CallResult) -> None:
    run.add_usage(res.model, tokens_in=res.tokens_in, tokens_out=res.tokens_out, cost=res.cost)


def fail_with(run: Run, agent: Agent, res: CallResult) -> None:
    """A call that failed for good: the run fails and the cell gets an ``[error]`` output."""
    ename = res.error_type or "ModelError"
    evalue = (res.error or "model call failed").removeprefix(f"{ename}: ")
    run.fail(ename, res.error or evalue, detail=res.error_detail)
    attrs = {"agent": agent.name, "time": res.time, "duration": res.duration,
             "models": list(agent.models)}
    run.emit(fmt.error_output(ename, evalue, attempt_lines(res.attempts, evalue, ename=ename),
                              out_id=run.next_output_id(), attrs=attrs))


def attempt_lines(attempts: Sequence[str], reason: str, *, ename: str | None = None
                  ) -> list[str]:
    """The attempts worth listing under an error: repeats folded into one line with a count,
    and none at all when every attempt failed for the error's own reason (``reason``, or
    ``ENAME: reason`` as an attempt names it)."""
    folded: list[list[Any]] = []
    for line in attempts:
        if folded and folded[-1][0] == line:
            folded[-1][1] += 1
        else:
            folded.append([line, 1])
    own = {reason, f"{ename}: {reason}"} if ename else {reason}
    if len(folded) == 1 and folded[0][0].partition(": ")[2] in own:
        return []
    return [f"{line} ({n} attempts)" if n > 1 else line for line, n in folded]


async def plain_reply(run: Run, agent: Agent, messages: list[dict[str, Any]], *,
                      route: Route, transport: Transport, extra: dict[str, Any]) -> None:
    """A reply from an agent without tools: one call, one reply output (or an error)."""
    res = await ask(run, agent, messages, route=route, transport=transport)
    if not res.ok:
        fail_with(run, agent, res)
        return
    record_usage(run, res)
    run.answer(res.text)
    run.emit(fmt.reply_output(res.text, agent=agent.name, out_id=run.next_output_id(),
                              attrs=reply_attrs(agent, res, **extra)))
