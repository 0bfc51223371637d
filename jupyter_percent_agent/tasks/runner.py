"""The task runner: a stack of tasks over one JSON context, written to its transcript.

A plan pushes its steps; an execute step renders its parameters, calls the LLM or a tool and
writes its outputs into the context; a validate step calls its tool and reads a verdict. A
failure (a failed verdict, or an execute step that failed) is retried (the producing step runs
again with the verdict's message as feedback), then routed by error type to a handler, then
replanned, else it ends the run. The state is JSON and saved in the transcript after every
step, so a killed run resumes from its last finished step. Model and tool calls go through
``adapter``; nothing here knows the runtime.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jupyter_percent_agent import trust
from jupyter_percent_agent.runtime.events import OutputMade
from jupyter_percent_agent.tasks import adapter, paths, results, templates
from jupyter_percent_agent.tasks import transcript as tr
from jupyter_percent_agent.tasks.documents import TaskDocument
from jupyter_percent_agent.tasks.events import OnEvent, RunStarted, StepFinished, StepStarted
from jupyter_percent_agent.tasks.sop import Sop

DEFAULT_MAX_STEPS = int(trust.LIMITS["task_max_steps"].default or 0)
PLANNER_AGENT = "planner"
FEEDBACK_HEADING = "\n\n---\nFeedback on the previous attempt (fix this):\n"
INPUTS_HEADING = "\n\n---\nInputs:\n"

# Error types of failures the runner itself names (a validator names its own).
MISSING_INPUT = "missing_input"
INVALID_OUTPUT = "invalid_output"
MODEL_ERROR = "model_error"
TOOL_ERROR = "tool_error"
RUNNER_ERROR = "runner_error"
TRUST_ERROR = "trust_error"
BUDGET = "step_budget"
REPLAN_FAILED = "replan_failed"



@dataclass
class Item:
    """One task on the stack. ``frame`` is the plan run that pushed it (its step list is in
    the state's ``frames``) and ``index`` its place there; ``after`` says why it runs again
    ("retry", "route", "replan")."""

    task_id: str
    frame: int = 0
    index: int = 0
    attempt: int = 1
    feedback: str = ""
    after: str = ""
    replanned: bool = False


@dataclass
class State:
    """Everything a run needs to go on: JSON, saved after every step."""

    context: dict[str, Any]
    stack: list[Item] = field(default_factory=list)
    frames: dict[int, list[str]] = field(default_factory=dict)
    steps: int = 0
    error: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        live = {i.frame for i in self.stack}
        return {"context": self.context, "stack": [asdict(i) for i in self.stack],
                "frames": {str(k): v for k, v in self.frames.items() if k in live},
                "steps": self.steps, "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        context = data.get("context")
        return cls(context=context if isinstance(context, dict) else {},
                   stack=[Item(**i) for i in data.get("stack") or []],
                   frames={int(k): list(v) for k, v in (data.get("frames") or {}).items()},
                   steps=int(data.get("steps") or 0), error=data.get("error"))


@dataclass
class StepInfo:
    """A step as it is shown while the run goes on (``StepStarted(info)`` when it starts,
    ``StepFinished(info)`` when it ends)."""

    step: int
    task_id: str
    task_type: str
    attempt: int
    outcome: str = ""        # "ok", "pass", "fail", "error"
    detail: str = ""
    then: str = ""           # what happens next after a failure
    seconds: float = 0.0
    model_seconds: float = 0.0


@dataclass
class TaskResult:
    """How a run ended. ``status``: "succeeded", "failed" or "interrupted"."""

    status: str
    task_id: str
    context: dict[str, Any]
    transcript: Path
    steps: int
    error: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "task_id": self.task_id, "context": self.context,
                "transcript": str(self.transcript), "steps": self.steps, "error": self.error}


@dataclass
class Failure:
    """Why a step failed. A ``final`` failure ends the run at once: retrying or routing it
    cannot help (the folder's trust is missing: only the user can give it)."""

    error_type: str
    message: str
    final: bool = False


class StepFailed(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.failure = Failure(error_type, message)


def _noop(event: Any) -> None:
    pass


class Runner:
    """Runs one task of a checked SOP folder to its end, saving after every step."""

    def __init__(self, sop: Sop, task_id: str, nb: dict[str, Any], path: Path, state: State,
                 *, max_steps: int = DEFAULT_MAX_STEPS, model: str | None = None,
                 on_event: OnEvent | None = None, limits: tuple[str, ...] = ()) -> None:
        self.sop = sop
        self.task_id = task_id
        self.nb = nb
        self.path = path
        self.state = state
        self.max_steps = max_steps
        self.model = model
        self.on_event = on_event or _noop
        self._current: dict[str, Any] | None = None
        self.saver = tr.Saver(path)
        self.turn_nb = adapter.turn_notebook(sop.agents)
        self.limits = limits
        self._retries: dict[str, int] = {}

    # -- the loop ----------------------------------------------------------------------

    async def run(self) -> TaskResult:
        """Run to the end; the transcript is on disk when this returns (or raises)."""
        try:
            return await self._loop()
        finally:
            await self.saver.flush()

    async def _loop(self) -> TaskResult:
        state = self.state
        self.on_event(RunStarted(self.path, self.limits))
        await self._save("running")  # the run exists from its start, resumable at once
        refusal = self._toolbox_refusal()
        if refusal is not None:  # before any model call: a later tool step would be refused
            return await self._finish("failed", {"task_id": self.task_id,
                                                 "error_type": TRUST_ERROR,
                                                 "message": str(refusal)})
        while state.stack:
            if state.steps >= self.max_steps:
                return await self._finish("failed", {
                    "task_id": state.stack[-1].task_id, "error_type": BUDGET,
                    "message": f"the step budget ({self.max_steps}) is spent: raise "
                               "--max-steps, or look for a loop of error routes"})
            item = state.stack.pop()
            state.steps += 1
            started = time.perf_counter()
            try:
                info, error = await self._step(item)
            except asyncio.CancelledError:
                state.steps -= 1
                state.stack.append(item)
                await self._save("interrupted")
                raise
            except Exception as exc:  # a bug, or a document the checks let through
                info, error = self._crashed(item, exc)
            if error is not None:
                result = await self._finish("failed", error)
            else:
                await self._save("running")
            info.seconds = time.perf_counter() - started  # the transcript's save included
            self.on_event(StepFinished(info))
            if error is not None:
                return result
        return await self._finish("succeeded", None)

    def _toolbox_refusal(self) -> trust.TrustError | None:
        """The refusal a step of this run would meet for the untrusted toolbox/ beside the
        SOP folder (a tool only the toolbox has, an agent given its tools), found before the
        first step: a run that cannot finish calls no model."""
        docs = self.sop.reachable(self.task_id)
        tools = {d.tool_id for d in docs if d.tool_id is not None and not d.is_llm}
        agents = {d.agent or "default" for d in docs if d.is_llm}
        if any(d.on_failure.replan for d in docs):
            agents.add(PLANNER_AGENT)
        return adapter.toolbox_refusal(
            self.sop.base_dir, tools, {a: self.sop.agents[a] for a in agents
                                       if a in self.sop.agents}, f"task {self.task_id!r}")

    async def _finish(self, status: str, error: dict[str, Any] | None) -> TaskResult:
        self.state.error = error
        await self._save(status)
        return TaskResult(status, self.task_id, self.state.context, self.path,
                          self.state.steps, error)

    async def _save(self, status: str) -> None:
        tr.set_state(self.nb, self.state.to_json(), status=status, steps=self.state.steps)
        await self.saver.save(self.nb)

    # -- one step ----------------------------------------------------------------------

    async def _step(self, item: Item) -> tuple[StepInfo, dict[str, Any] | None]:
        """Run ``item``; on failure decide what comes next. An error dict ends the run."""
        self._current = None
        doc = self.sop[item.task_id]
        info = StepInfo(self.state.steps, doc.task_id, doc.task_type, item.attempt)
        self.on_event(StepStarted(info))
        cell: dict[str, Any] | None = None
        failure: Failure | None = None
        try:
            if doc.is_plan:
                cell = self._plan(item, doc)
                info.outcome = "ok"
            else:
                cell, failure, info.model_seconds = await self._call(item, doc)
                info.outcome = ("pass" if doc.task_type == "validate" else "ok") \
                    if failure is None else ("fail" if doc.task_type == "validate" else "error")
        except asyncio.CancelledError:
            if self._current is not None:
                tr.mark_interrupted(self._current)
            raise
        ending = None
        if failure is not None:
            info.detail = f"{failure.error_type}: {failure.message}"
            if failure.final:
                info.then, ending = "fail", {"task_id": doc.task_id,
                                             "error_type": failure.error_type,
                                             "message": failure.message}
            else:
                info.then, ending = await self._on_failure(item, doc, failure)
            if cell is not None:
                self._record_failure(cell, failure, info.then)
        return info, ending

    def _crashed(self, item: Item, exc: Exception) -> tuple[StepInfo, dict[str, Any]]:
        """A step that raised: the run fails there with the reason in the transcript (on the
        step's cell when it has one), never a traceback and never a run left "running"."""
        doc = self.sop.documents.get(item.task_id)
        failure = Failure(RUNNER_ERROR, f"{item.task_id}: {type(exc).__name__}: {exc}")
        info = StepInfo(self.state.steps, item.task_id, doc.task_type if doc else "",
                        item.attempt, outcome="error", then="fail",
                        detail=f"{failure.error_type}: {failure.message}")
        if self._current is not None:
            self._record_failure(self._current, failure, "fail")
        return info, {"task_id": item.task_id, "error_type": failure.error_type,
                      "message": failure.message}

    def _record_failure(self, cell: dict[str, Any], failure: Failure, then: str) -> None:
        """Say in the step's cell why it failed and what comes next: on its verdict when
        the verdict is the failure, else as an error output."""
        last = cell["outputs"][-1] if cell["outputs"] else None
        if last is not None and tr.is_verdict(last) and not tr.verdict_passed(last) \
                and failure.error_type == tr.verdict_error_type(last):
            tr.set_output_attr(last, "then", then)
            return
        out = tr.error_output(cell, failure.error_type, failure.message, then)
        cell["outputs"].append(out)
        self.on_event(OutputMade(out))

    def _add_cell(self, cell: dict[str, Any]) -> dict[str, Any]:
        tr.append_step(self.nb, cell)
        self._current = cell
        return cell

    def _plan(self, item: Item, doc: TaskDocument) -> dict[str, Any]:
        body = "\n".join(f"{i}. {s}" for i, s in enumerate(doc.plan_steps, start=1))
        details = "\n\n".join(t for n, t in doc.sections.items()
                              if not n.startswith(templates.SECTION_PREFIX) and t)
        cell = self._add_cell(tr.step_cell(body + ("\n\n" + details if details else ""),
                                           task_id=doc.task_id, task_type=doc.task_type,
                                           attempt=item.attempt, step=self.state.steps))
        self._push_steps(list(doc.plan_steps))
        return cell

    def _push_steps(self, steps: list[str]) -> None:
        frame = self.state.steps
        self.state.frames[frame] = steps
        for i in range(len(steps) - 1, -1, -1):
            self.state.stack.append(Item(steps[i], frame=frame, index=i))

    async def _call(self, item: Item, doc: TaskDocument
                    ) -> tuple[dict[str, Any] | None, Failure | None, float]:
        """Render, call, read the result and write the outputs of an execute or validate
        step: (its cell, the failure or None, seconds spent in model calls)."""
        try:
            values = self._inputs(doc)
            params = self._parameters(doc, values)
        except (StepFailed, paths.PathError) as exc:
            failure = exc.failure if isinstance(exc, StepFailed) else \
                Failure(RUNNER_ERROR, f"{doc.task_id}: {exc}")
            cell = self._add_cell(tr.step_cell(
                "", task_id=doc.task_id, task_type=doc.task_type, attempt=item.attempt,
                step=self.state.steps))
            return cell, failure, 0.0
        if doc.is_llm:
            prompt = self._prompt(doc, params, values, item.feedback)
            cell = self._add_cell(tr.step_cell(
                prompt, task_id=doc.task_id, task_type=doc.task_type, attempt=item.attempt,
                step=self.state.steps, agent=doc.agent or "default"))
        else:
            cell = self._add_cell(tr.step_cell(
                templates.as_text(params), task_id=doc.task_id, task_type=doc.task_type,
                attempt=item.attempt, step=self.state.steps, tool=doc.tool_id, args=params))
        turn = adapter.Turn()
        try:
            await self._run_cell(cell, turn)
        except trust.TrustError as exc:  # asking again will not trust the folder
            return cell, Failure(TRUST_ERROR, str(exc), final=True), turn.model_seconds
        except Exception as exc:  # a bug or a broken installation: recorded, not raised
            return cell, Failure(RUNNER_ERROR, f"{type(exc).__name__}: {exc}"), 0.0
        if turn.error_type == "TrustError":
            return cell, Failure(TRUST_ERROR, turn.error or "refused",
                                 final=True), turn.model_seconds
        if turn.status != "ok":
            kind = MODEL_ERROR if doc.is_llm else TOOL_ERROR
            return cell, Failure(kind, turn.error or "the call failed"), turn.model_seconds
        value = self._value(doc, turn.text)
        if doc.task_type == "validate":
            verdict = results.llm_verdict(turn.text) if doc.is_llm else results.tool_verdict(value)
            out = tr.verdict_output(cell, verdict)
            cell["outputs"].append(out)
            self.on_event(OutputMade(out))
            if doc.is_llm:
                value = verdict.to_json()
            failure = self._write_outputs(doc, value)
            if failure is None and not verdict.ok:
                failure = Failure(verdict.error_type, verdict.message)
            return cell, failure, turn.model_seconds
        return cell, self._write_outputs(doc, value), turn.model_seconds

    async def _run_cell(self, cell: dict[str, Any], turn: adapter.Turn) -> None:
        """Run a step's cell through the runtime; its outputs land in the cell, also when
        the call is cancelled or raises."""
        try:
            await adapter.run_step(self.turn_nb, cell, turn, base_dir=self.sop.base_dir,
                                   model=self.model, on_event=self.on_event)
        finally:
            cell["outputs"] = list(turn.outputs)

    def _inputs(self, doc: TaskDocument) -> dict[str, Any]:
        values = {}
        for var, path in doc.inputs.items():
            value = paths.read(self.state.context, path)
            if value is paths.NOT_FOUND:
                raise StepFailed(MISSING_INPUT, f"{doc.task_id}: input {var!r} reads {path}, "
                                 "which is not in the context")
            values[var] = value
        return values

    def _parameters(self, doc: TaskDocument, values: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = {}

        def section(name: str) -> str:
            return templates.render(doc.section(name) or "", values)

        for p in doc.parameters:
            if p.is_path:
                value = paths.read(self.state.context, p.value)
                if value is paths.NOT_FOUND:
                    raise StepFailed(MISSING_INPUT, f"{doc.task_id}: parameter {p.name!r} "
                                     f"reads {p.value}, which is not in the context")
                params[p.name] = value
            elif isinstance(p.value, str):
                params[p.name] = templates.render(p.value, values, section)
            else:
                params[p.name] = p.value
        if doc.is_llm and "prompt" not in params:
            params["prompt"] = section("prompt")
        return params

    def _prompt(self, doc: TaskDocument, params: dict[str, Any], values: dict[str, Any],
                feedback: str) -> str:
        """The LLM's prompt: the rendered ``prompt``, the inputs it does not mention (so a
        validator sees what it judges), the feedback of a retry, a validator's answer form."""
        prompt = templates.as_text(params["prompt"])
        unused = [v for v in values if v not in mentioned(doc)]
        if unused:
            prompt += INPUTS_HEADING + "\n\n".join(
                f"{v}:\n{templates.as_text(values[v])}" for v in unused)
        if feedback:
            prompt += FEEDBACK_HEADING + feedback
        if doc.task_type == "validate":
            prompt += results.verdict_instructions(list(doc.on_failure.routes))
        return prompt

    def _value(self, doc: TaskDocument, text: str) -> Any:
        if doc.is_llm:
            return results.reply_value(text)
        try:
            return json.loads(text) if text else None
        except ValueError:
            return text

    def _write_outputs(self, doc: TaskDocument, value: Any) -> Failure | None:
        picked = []
        for target, source in doc.outputs.items():
            got = paths.read(value, source)
            if got is paths.NOT_FOUND:
                shown = templates.as_text(value)
                shown = shown if len(shown) <= 300 else shown[:299] + "…"
                return Failure(INVALID_OUTPUT, f"{doc.task_id}: output {target} reads {source} "
                               f"from the result, which has none (the result: {shown})")
            picked.append((target, got))
        for target, got in picked:
            try:
                paths.write(self.state.context, target, got)
            except paths.PathError as exc:
                return Failure(INVALID_OUTPUT, f"{doc.task_id}: {exc}")
        return None

    # -- failures ----------------------------------------------------------------------

    def _retry_budget(self, doc: TaskDocument) -> int:
        """The retries ``doc`` may have: its SOP folder's number, bounded (a folder may
        lower the user's limit, never raise it; ``Sop.lowered_limits``)."""
        if doc.task_id not in self._retries:
            self._retries[doc.task_id] = int(trust.bound(
                "retries", doc.on_failure.retry, folder=self.sop.root).value or 0)
        return self._retries[doc.task_id]

    async def _on_failure(self, item: Item, doc: TaskDocument, failure: Failure
                          ) -> tuple[str, dict[str, Any] | None]:
        """Push what runs next after ``item`` failed: (what was decided, the run's error when
        nothing can be done)."""
        policy = doc.on_failure
        stack = self.state.stack
        retries = self._retry_budget(doc)
        if item.after in ("", "retry") and item.attempt <= retries:
            again = Item(item.task_id, item.frame, item.index, item.attempt + 1, after="retry",
                         replanned=item.replanned)
            producer = self._producer(item, doc)
            if producer is None:
                again.feedback = failure.message
                stack.append(again)
                return f"retry {item.attempt + 1}/{retries + 1}", None
            stack.append(again)
            stack.append(Item(producer.task_id, producer.frame, producer.index,
                              item.attempt + 1, feedback=failure.message, after="retry"))
            return f"retry {producer.task_id} then validate again", None
        handler = policy.routes.get(failure.error_type)
        if handler is not None:
            stack.append(Item(item.task_id, item.frame, item.index, item.attempt + 1,
                              after="route", replanned=item.replanned))
            self._push_steps([handler])
            return f"route to {handler}", None
        if policy.replan and not item.replanned:
            steps, error = await self._replan(item, doc, failure)
            if steps:
                stack.append(Item(item.task_id, item.frame, item.index, item.attempt + 1,
                                  after="replan", replanned=True))
                self._push_steps(steps)
                # the planner's call was a step of its own (in the transcript): name its number
                return f"replan (step {self.state.steps}): " + ", ".join(steps), None
            return "fail", {"task_id": doc.task_id, "error_type": REPLAN_FAILED,
                            "message": error or "the planner chose no steps"}
        return "fail", {"task_id": doc.task_id, "error_type": failure.error_type,
                        "message": failure.message}

    def _producer(self, item: Item, doc: TaskDocument) -> Item | None:
        """The step whose result a validator judges: the execute step before it in the same
        plan. An execute step is its own producer (it runs again itself)."""
        if doc.task_type != "validate":
            return None
        siblings = self.state.frames.get(item.frame) or []
        for i in range(min(item.index, len(siblings)) - 1, -1, -1):
            other = self.sop.documents.get(siblings[i])
            if other is not None and other.task_type == "execute":
                return Item(other.task_id, item.frame, i)
        return None

    async def _replan(self, item: Item, doc: TaskDocument, failure: Failure
                      ) -> tuple[list[str], str | None]:
        """Ask the planner (an LLM) for steps from the folder's documents."""
        from jupyter_percent_agent.tasks import candidates

        verdict = results.Verdict(False, failure.error_type, failure.message)
        options = candidates.for_replan(self.sop, doc, failure.message)
        prompt = results.planner_prompt(self.task_id, doc.task_id, verdict, [
            (d.task_id, d.task_type, d.description) for d in options])
        agent = PLANNER_AGENT if PLANNER_AGENT in self.sop.agents else (doc.agent or "default")
        self.state.steps += 1
        cell = self._add_cell(tr.step_cell(prompt, task_id=doc.task_id, task_type="replan",
                                           attempt=item.attempt, step=self.state.steps,
                                           agent=agent))
        turn = adapter.Turn()
        try:
            await self._run_cell(cell, turn)
        except Exception as exc:
            return [], f"the planner's call failed: {type(exc).__name__}: {exc}"
        if turn.status != "ok":
            return [], f"the planner's call failed: {turn.error}"
        try:
            return results.planner_steps(turn.text, {d.task_id for d in options}), None
        except ValueError as exc:
            return [], str(exc)


def mentioned(doc: TaskDocument) -> set[str]:
    """The input variables an LLM step's prompt mentions: in its ``prompt`` parameter and in
    the sections that uses (or in the ``prompt`` section when it has no parameter)."""
    texts = [p.value for p in doc.parameters if p.name == "prompt" and isinstance(p.value, str)]
    if not texts:
        texts = [doc.section("prompt") or ""]
    names: set[str] = set()
    for text in texts:
        for ph in templates.scan(text)[0]:
            if ph.section is not None:
                texts.append(doc.section(ph.section) or "")
            else:
                names.add(ph.text)
    return names
