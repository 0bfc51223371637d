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
from pathlib import Path
from typing import Any

from jupyter_percent_agent import errors, trust
from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.outcome import RUN_WORDS, RunStatus
from jupyter_percent_agent.runtime.events import OutputMade
from jupyter_percent_agent.tasks import adapter, paths, prompting, results, templates
from jupyter_percent_agent.tasks import transcript as tr
from jupyter_percent_agent.tasks.documents import TaskDocument
from jupyter_percent_agent.tasks.events import OnEvent, RunStarted, StepFinished, StepStarted
from jupyter_percent_agent.tasks.sop import Sop
from jupyter_percent_agent.tasks.state import Item, State, StepFailure, StepInfo, TaskResult

DEFAULT_MAX_STEPS = int(trust.LIMITS["task_max_steps"].default or 0)
PLANNER_AGENT = "planner"
FEEDBACK_HEADING = "\n\n---\nFeedback on the previous attempt (fix this):\n"
INPUTS_HEADING = "\n\n---\nInputs:\n"

# Error types of failures the runner itself names (a validator names its own); those of the
# package's error kinds come from its one table.
MISSING_INPUT = "missing_input"
INVALID_OUTPUT = "invalid_output"
MODEL_ERROR = errors.TABLE[errors.Kind.MODEL].error_type
TOOL_ERROR = errors.TABLE[errors.Kind.TOOL].error_type
RUNNER_ERROR = errors.TABLE[errors.Kind.FAILED].error_type
TRUST_ERROR = errors.TABLE[errors.Kind.REFUSED].error_type
BUDGET = "step_budget"
PROMPT_TOO_LARGE = "prompt_too_large"
REPLAN_FAILED = "replan_failed"


class _StepFailed(Exception):
    def __init__(self, error_type: str, message: str, final: bool = False) -> None:
        super().__init__(message)
        self.failure = StepFailure(error_type, message, final=final)


def _noop(event: Any) -> None:
    pass


class Runner:
    """Runs one task of a checked SOP folder to its end, saving after every step."""

    def __init__(self, sop: Sop, task_id: str, nb: dict[str, Any], path: Path, state: State,
                 *, max_steps: int = DEFAULT_MAX_STEPS, model: str | None = None,
                 on_event: OnEvent | None = None, limits: tuple[str, ...] = (),
                 permission_asker: Any = None) -> None:
        self.sop = sop
        self.task_id = task_id
        self.nb = nb
        self.path = path
        self.state = state
        self.max_steps = max_steps
        self.model = model
        self.on_event = on_event or _noop
        self.permission_asker = permission_asker  # an external agent's questions: who answers
        self._current: dict[str, Any] | None = None
        self.saver = tr.Saver(path)
        self.turn_nb = adapter.turn_notebook(sop.agents)
        self.limits = limits
        self._retries: dict[str, int] = {}
        self._model_seconds = 0.0  # of this process's steps (a resumed run: since it resumed)

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
        refusal = self._refusal()
        if refusal is not None:  # before any model call: a later tool step would be refused
            return await self._finish(RunStatus.ERROR, {"task_id": self.task_id,
                                                 "error_type": TRUST_ERROR,
                                                 "message": str(refusal)})
        while state.stack:
            if state.steps >= self.max_steps:
                return await self._finish(RunStatus.ERROR, {
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
                await self._save(RUN_WORDS[RunStatus.INTERRUPTED])
                raise
            except Exception as exc:  # a bug, or a document the checks let through
                info, error = self._crashed(item, exc)
            if error is not None:
                result = await self._finish(RunStatus.ERROR, error)
            else:
                await self._save("running")
            info.seconds = time.perf_counter() - started  # the transcript's save included
            self._model_seconds += info.model_seconds
            self.on_event(StepFinished(info))
            if error is not None:
                return result
        return await self._finish(RunStatus.OK, None)

    def _refusal(self) -> trust.TrustError | None:
        """The refusal a step would meet in an untrusted folder (its toolbox/, an external
        agent), found before the first step: a run that cannot finish calls no model."""
        docs = self.sop.reachable(self.task_id)
        tools = {d.tool_id for d in docs if d.tool_id is not None and not d.is_llm}
        names = {d.agent or "default" for d in docs if d.is_llm} | \
            ({PLANNER_AGENT} if any(d.on_failure.replan for d in docs) else set())
        agents = {a: self.sop.agents[a] for a in names if a in self.sop.agents}
        return adapter.acp_refusal(self.sop.base_dir, agents) or adapter.toolbox_refusal(
            self.sop.base_dir, tools, agents, f"task {self.task_id!r}")

    async def _finish(self, status: RunStatus, error: dict[str, Any] | None) -> TaskResult:
        self.state.error = error
        await self._save(RUN_WORDS[status])
        result = TaskResult.ended(status, self.task_id, self.state.context, self.path,
                                  self.state.steps, error)
        result.outcome.seconds = self._model_seconds
        return result

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
        failure: StepFailure | None = None
        try:
            if doc.is_plan:
                cell = self._plan(item, doc)
            else:
                cell, failure, info.outcome.seconds = await self._call(item, doc)
                if doc.task_type == "validate":  # pass or fail: data on the step
                    info.verdict = failure is None
        except asyncio.CancelledError:
            if self._current is not None:
                tr.mark_interrupted(self._current)
            raise
        ending = None
        if failure is not None:
            info.outcome.fail(failure.error_type, failure.message)
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
        shown = errors.report(exc)  # the name and line every front end shows for it
        said = f"{shown.ename}: {shown.message}" if shown else f"{type(exc).__name__}: {exc}"
        failure = StepFailure(RUNNER_ERROR, f"{item.task_id}: {said}")
        info = StepInfo(self.state.steps, item.task_id, doc.task_type if doc else "",
                        item.attempt, then="fail")
        info.outcome.fail(failure.error_type, failure.message)
        if self._current is not None:
            self._record_failure(self._current, failure, "fail")
        return info, {"task_id": item.task_id, "error_type": failure.error_type,
                      "message": failure.message}

    def _record_failure(self, cell: dict[str, Any], failure: StepFailure, then: str) -> None:
        """Say in the step's cell why it failed and what comes next: on its verdict when
        the verdict is the failure, else as an error output."""
        last = cell["outputs"][-1] if cell["outputs"] else None
        if last is not None and tr.is_verdict(last) and not tr.verdict_passed(last) \
                and failure.error_type == tr.verdict_error_type(last):
            fmt.set_output_attrs(last, {"then": then})
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
                    ) -> tuple[dict[str, Any] | None, StepFailure | None, float]:
        """Render, call, read the result and write the outputs of an execute or validate
        step: (its cell, the failure or None, seconds spent in model calls)."""
        try:
            values = self._inputs(doc)
            params = self._parameters(doc, values)
            prompt = self._prompt(doc, params, values, item.feedback) if doc.is_llm else ""
        except (_StepFailed, paths.PathError) as exc:
            failure = exc.failure if isinstance(exc, _StepFailed) else \
                StepFailure(RUNNER_ERROR, f"{doc.task_id}: {exc}")
            cell = self._add_cell(tr.step_cell(
                "", task_id=doc.task_id, task_type=doc.task_type, attempt=item.attempt,
                step=self.state.steps))
            return cell, failure, 0.0
        if doc.is_llm:
            cell = self._add_cell(tr.step_cell(
                prompt, task_id=doc.task_id, task_type=doc.task_type, attempt=item.attempt,
                step=self.state.steps, agent=doc.agent or "default"))
        else:
            cell = self._add_cell(tr.step_cell(
                templates.as_text(params), task_id=doc.task_id, task_type=doc.task_type,
                attempt=item.attempt, step=self.state.steps, tool=doc.tool_id, args=params))
        run = adapter.step_run(cell, self.on_event)
        try:
            await self._run_cell(cell, run, doc)
        except Exception as exc:  # recorded, not raised
            shown = errors.report(exc)
            if shown is not None and shown.kind is errors.Kind.REFUSED:
                # asking again will not trust the folder
                return cell, StepFailure(TRUST_ERROR, shown.message, final=True), \
                    run.outcome.seconds
            return cell, StepFailure(RUNNER_ERROR, f"{type(exc).__name__}: {exc}"), 0.0
        outcome = run.outcome
        if outcome.error_type in ("TrustError", "UntrustedFolder"):
            return cell, StepFailure(TRUST_ERROR, outcome.error or "refused",
                                     final=True), outcome.seconds
        if not outcome.ok:
            kind = MODEL_ERROR if doc.is_llm else TOOL_ERROR
            return cell, StepFailure(kind, outcome.error or "the call failed"), outcome.seconds
        try:
            value = self._value(doc, run.reply)
        except _StepFailed as exc:
            return cell, exc.failure, outcome.seconds
        if doc.task_type == "validate":
            verdict = results.llm_verdict(run.reply) if doc.is_llm else \
                results.tool_verdict(value)
            out = tr.verdict_output(cell, verdict)
            cell["outputs"].append(out)
            self.on_event(OutputMade(out))
            if doc.is_llm:
                value = verdict.to_json()
            failure = self._write_outputs(doc, value)
            if failure is None and not verdict.ok:
                failure = StepFailure(verdict.error_type, verdict.message)
            return cell, failure, outcome.seconds
        return cell, self._write_outputs(doc, value), outcome.seconds

    async def _run_cell(self, cell: dict[str, Any], run: Any, doc: TaskDocument) -> None:
        """Run a step's cell (of ``doc``) through the runtime; outputs land in it anyway."""
        try:
            await adapter.run_step(self.turn_nb, cell, run, base_dir=self.sop.base_dir,
                                   model=self.model, document=self.sop.root / doc.path,
                                   permission_asker=self.permission_asker)
        finally:
            cell["outputs"] = list(run.outputs)

    def _inputs(self, doc: TaskDocument) -> dict[str, Any]:
        values = {}
        for var, path in doc.inputs.items():
            value = paths.read(self.state.context, path)
            if value is paths.NOT_FOUND:
                raise _StepFailed(MISSING_INPUT, f"{doc.task_id}: input {var!r} reads {path}, "
                                 "which is not in the context")
            values[var] = value
        return values

    def _rendered(self, doc: TaskDocument, template: str, values: dict[str, Any],
                  section: Any = None) -> str:
        """``template`` rendered for ``doc``, refused (a final failure, before any model
        call) as soon as it passes the agent's context window."""
        limit = prompting.prompt_limit(self.sop, doc)
        try:
            return templates.render(template, values, section, limit=limit)
        except templates.PromptTooLarge as exc:
            raise _StepFailed(PROMPT_TOO_LARGE, f"{doc.task_id}: refused: {exc}; nothing was "
                              "sent; to allow it: name smaller values in the template, or "
                              "give the agent a larger context_window", final=True) from None

    def _parameters(self, doc: TaskDocument, values: dict[str, Any]) -> dict[str, Any]:
        params: dict[str, Any] = {}

        def section(name: str) -> str:
            return self._rendered(doc, doc.section(name) or "", values)

        for p in doc.parameters:
            if p.is_path:
                value = paths.read(self.state.context, p.value)
                if value is paths.NOT_FOUND:
                    raise _StepFailed(MISSING_INPUT, f"{doc.task_id}: parameter {p.name!r} "
                                     f"reads {p.value}, which is not in the context")
                params[p.name] = value
            elif isinstance(p.value, str):
                params[p.name] = self._rendered(doc, p.value, values, section)
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
        if len(prompt) > (limit := prompting.prompt_limit(self.sop, doc)):
            raise _StepFailed(PROMPT_TOO_LARGE, f"{doc.task_id}: refused: "
                              f"{templates.PromptTooLarge(limit)}; nothing was sent; to allow "
                              "it: pass smaller inputs, or give the agent a larger "
                              "context_window", final=True)
        return prompt

    def _value(self, doc: TaskDocument, text: str) -> Any:
        if doc.is_llm and (doc.task_type == "validate"  # its value is the verdict
                           or prompting.result_format(doc) == "text"):
            return text  # model text is text, brackets, braces and all
        if doc.is_llm:
            value = results.reply_value(text)
            if value is text:  # given back as it came: no JSON in it
                shown = text if len(text) <= 300 else text[:299] + "…"
                raise _StepFailed(INVALID_OUTPUT, f"{doc.task_id}: the reply is not the JSON "
                                  "this step reads (bare or in one ```json block; "
                                  f"output_format: json): {shown}")
            return value
        try:
            return json.loads(text) if text else None
        except ValueError:
            return text

    def _write_outputs(self, doc: TaskDocument, value: Any) -> StepFailure | None:
        picked = []
        for target, source in doc.outputs.items():
            got = paths.read(value, source)
            if got is paths.NOT_FOUND:
                shown = templates.as_text(value)
                shown = shown if len(shown) <= 300 else shown[:299] + "…"
                return StepFailure(INVALID_OUTPUT, f"{doc.task_id}: output {target} reads "
                                   f"{source} from the result, which has none (the result: "
                                   f"{shown})")
            picked.append((target, got))
        for target, got in picked:
            try:
                paths.write(self.state.context, target, got)
            except paths.PathError as exc:
                return StepFailure(INVALID_OUTPUT, f"{doc.task_id}: {exc}")
        return None

    # -- failures ----------------------------------------------------------------------

    def _retry_budget(self, doc: TaskDocument) -> int:
        """The retries ``doc`` may have: its SOP folder's number, bounded (a folder may
        lower the user's limit, never raise it; ``Sop.lowered_limits``)."""
        if doc.task_id not in self._retries:
            self._retries[doc.task_id] = int(trust.bound(
                "retries", doc.on_failure.retry, folder=self.sop.root).value or 0)
        return self._retries[doc.task_id]

    async def _on_failure(self, item: Item, doc: TaskDocument, failure: StepFailure
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

    async def _replan(self, item: Item, doc: TaskDocument, failure: StepFailure
                      ) -> tuple[list[str], str | None]:
        """Ask the planner (an LLM) for steps from the folder's documents."""
        from jupyter_percent_agent.tasks import candidates

        verdict = results.Verdict(RunStatus.ERROR, failure.error_type, failure.message)
        options = candidates.for_replan(self.sop, doc, failure.message)
        prompt = results.planner_prompt(self.task_id, doc.task_id, verdict, [
            (d.task_id, d.task_type, d.description) for d in options])
        agent = PLANNER_AGENT if PLANNER_AGENT in self.sop.agents else (doc.agent or "default")
        self.state.steps += 1
        cell = self._add_cell(tr.step_cell(prompt, task_id=doc.task_id, task_type="replan",
                                           attempt=item.attempt, step=self.state.steps,
                                           agent=agent))
        run = adapter.step_run(cell, self.on_event)
        try:
            await self._run_cell(cell, run, doc)
        except Exception as exc:
            return [], f"the planner's call failed: {type(exc).__name__}: {exc}"
        if not run.ok:
            return [], f"the planner's call failed: {run.error}"
        try:
            return results.planner_steps(run.reply, {d.task_id for d in options}), None
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
