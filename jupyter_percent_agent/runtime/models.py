"""Model calls through litellm: streaming, retries with backoff, fallback over ``models``.

The call is described by a ``CallSpec`` of plain JSON data so it can run in this process or
in the warm helper (``runtime.warm``). litellm is imported only when a call is made, with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that it never reaches for the network at import.
Keys and ``api_base`` travel in the spec, never into a message file.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from jupyter_percent_agent.runtime.agents import Agent

OnDelta = Callable[[str, str], None]
"""``on_delta(kind, text)``: kind is "content", "reasoning", or "retry" (text = why)."""


@dataclass
class CallSpec:
    """Everything one model call needs, as JSON-able data."""

    models: list[str]
    messages: list[dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    api_base: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    retries: int = 2
    backoff: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CallResult:
    """What a call produced and measured. ``error`` is one line when every model failed."""

    text: str = ""
    reasoning: str = ""
    model: str | None = None
    time: str = ""
    duration: float = 0.0
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost: float | None = None
    error: str | None = None
    error_type: str | None = None
    attempts: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def spec_for(agent: Agent, messages: list[dict[str, Any]], *,
             env: Mapping[str, str] | None = None) -> CallSpec:
    """The call an agent makes for ``messages``, with settings from the agent and the
    environment (``PERCENT_AGENT_API_BASE``, ``PERCENT_AGENT_API_KEY``,
    ``PERCENT_AGENT_TIMEOUT``, ``PERCENT_AGENT_RETRIES``, ``PERCENT_AGENT_BACKOFF``)."""
    env = os.environ if env is None else env
    params: dict[str, Any] = {}
    if agent.max_output_tokens:
        params["max_tokens"] = agent.max_output_tokens
    if agent.use_temperature and agent.temperature is not None:
        params["temperature"] = agent.temperature
    if agent.reasoning:
        params["reasoning_effort"] = (agent.reasoning if isinstance(agent.reasoning, str)
                                      else "medium")
    return CallSpec(
        models=list(agent.models),
        messages=messages,
        params=params,
        api_base=agent.api_base or env.get("PERCENT_AGENT_API_BASE") or None,
        api_key=env.get("PERCENT_AGENT_API_KEY") or None,
        timeout=float(agent.timeout or env.get("PERCENT_AGENT_TIMEOUT") or 120),
        retries=int(env.get("PERCENT_AGENT_RETRIES", 2)),
        backoff=float(env.get("PERCENT_AGENT_BACKOFF", 1.0)),
    )


# Set (unless the user set them) in every process that imports litellm: its cost map from the
# package, not fetched at import time. The warm helper's socket name hashes the environment as
# it is once these are in place.
LITELLM_ENV_DEFAULTS = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def import_litellm() -> Any:
    """Import litellm quietly and offline."""
    for key, value in LITELLM_ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


def count_tokens(model: str, messages: list[dict[str, Any]]) -> list[int]:
    """The tokens of each message, by litellm's counter for ``model`` (its default tokenizer
    when it has none for that model)."""
    litellm = import_litellm()
    out = []
    for m in messages:
        try:
            out.append(int(litellm.token_counter(model=model, messages=[m])))
        except Exception:
            out.append(int(litellm.token_counter(messages=[m])))
    return out


def _provider_model(litellm: Any, name: str, api_base: str | None) -> str:
    """The name litellm routes: an unknown provider behind an api_base speaks OpenAI."""
    base = api_base or os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL")
    if not base:
        return name
    try:
        litellm.get_llm_provider(name)
        return name
    except Exception:
        return "openai/" + name


def _is_openai(litellm: Any, routed: str) -> bool:
    try:
        return litellm.get_llm_provider(routed)[1] in ("openai", "openai_like", "custom_openai")
    except Exception:
        return False


def one_line(exc: BaseException) -> str:
    """litellm's reason for a failure, on one line."""
    name = type(exc).__name__
    text = " ".join(str(exc).split()).removeprefix("litellm.")
    while text.startswith(f"{name}: {name}"):
        text = text[len(name) + 2:]
    return (text if text.startswith(name) else f"{name}: {text}")[:400]


def _retryable(litellm: Any, exc: BaseException) -> bool:
    if "credentials" in str(exc).lower() or "api_key" in str(exc).lower():
        return False  # a missing key does not come back by retrying
    kinds = tuple(getattr(litellm, n) for n in (
        "Timeout", "RateLimitError", "InternalServerError", "ServiceUnavailableError",
        "APIConnectionError", "BadGatewayError") if hasattr(litellm, n))
    if isinstance(exc, (*kinds, asyncio.TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status == 429 or status >= 500)


def _cost(litellm: Any, model: str, tokens_in: int, tokens_out: int) -> float | None:
    try:
        a, b = litellm.cost_per_token(model=model, prompt_tokens=tokens_in,
                                      completion_tokens=tokens_out)
        return round(float(a) + float(b), 8)
    except Exception:
        return None


async def _attempt(litellm: Any, spec: CallSpec, model: str, on_delta: OnDelta,
                   result: CallResult) -> None:
    kwargs: dict[str, Any] = dict(spec.params)
    routed = _provider_model(litellm, model, spec.api_base)
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
    key = spec.api_key
    if key is None and spec.api_base and _is_openai(litellm, routed) \
            and not os.environ.get("OPENAI_API_KEY"):
        key = "no-key"  # local servers (Ollama, vLLM) need none, the OpenAI client wants one
    if key:
        kwargs["api_key"] = key
    response = await litellm.acompletion(
        model=routed, messages=spec.messages, stream=True,
        stream_options={"include_usage": True}, timeout=spec.timeout,
        max_retries=0, num_retries=0, **kwargs)
    usage = None
    async for chunk in response:
        if getattr(chunk, "usage", None):
            usage = chunk.usage
        for choice in chunk.choices or []:
            delta = choice.delta
            reasoning = getattr(delta, "reasoning_content", None)
            if reasoning:
                result.reasoning += reasoning
                on_delta("reasoning", reasoning)
            if delta.content:
                result.text += delta.content
                on_delta("content", delta.content)
    result.model = model
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        result.tokens_in = int(usage.prompt_tokens)
        result.tokens_out = int(usage.completion_tokens or 0)
    else:
        result.tokens_in = litellm.token_counter(model=routed, messages=spec.messages)
        result.tokens_out = litellm.token_counter(model=routed, text=result.text)
    result.cost = _cost(litellm, routed, result.tokens_in, result.tokens_out)


USE_HELPER = False
"""Set by ``tce``: hand calls to the warm helper process (``runtime.warm``) when one runs."""


async def complete(spec: CallSpec, on_delta: OnDelta | None = None, *,
                   local: bool = False) -> CallResult:
    """Stream one reply, retrying and falling over to the next model; never raises for a
    model failure (the result's ``error`` says why). Cancellation propagates."""
    on_delta = on_delta or (lambda kind, text: None)
    if USE_HELPER and not local:
        from jupyter_percent_agent.runtime import warm

        result = await warm.try_complete(spec, on_delta)
        if result is not None:
            return result
    started = time.monotonic()
    result = CallResult(time=datetime.now(UTC).astimezone().isoformat(timespec="seconds"))
    try:
        litellm = import_litellm()
    except Exception as exc:  # pragma: no cover - broken installation
        result.error, result.error_type = one_line(exc), type(exc).__name__
        return result
    last: BaseException | None = None
    for n, model in enumerate(spec.models):
        for attempt in range(spec.retries + 1):
            result.text, result.reasoning = "", ""
            try:
                await _attempt(litellm, spec, model, on_delta, result)
                result.duration = round(time.monotonic() - started, 3)
                return result
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                last = exc
                result.attempts.append(f"{model}: {one_line(exc)}")
                if not _retryable(litellm, exc) or attempt == spec.retries:
                    break
                on_delta("retry", f"{one_line(exc)}; retrying {model}")
                await asyncio.sleep(spec.backoff * 2 ** attempt)
        if n + 1 < len(spec.models):
            on_delta("retry", f"{one_line(last)}; falling over to {spec.models[n + 1]}")
    result.text = result.reasoning = ""
    result.duration = round(time.monotonic() - started, 3)
    result.error = one_line(last) if last else "no model to call"
    result.error_type = type(last).__name__ if last else "AgentError"
    return result
