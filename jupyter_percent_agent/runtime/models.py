"""Model calls in this process: streaming, retries with backoff, fallback over ``models``,
failures explained in words a user acts on.

A call that litellm would make as ``openai/NAME`` to the ``api_base`` the trust rules chose
goes straight over HTTP (``runtime.direct``, ``routing.openai_compatible``), so that a process
talking to Ollama, vLLM or a LiteLLM proxy never pays for importing litellm; every other call
goes through litellm. The route (where, with which key) is decided once, by ``call_route``,
for both.

The call is described by a ``CallSpec`` of plain JSON data so that it can be made here or by
the warm helper process (``runtime.helper``); which one is the transport's choice
(``runtime.transport``). litellm is imported only when a call is made, with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so that it never reaches for the network at import.
Keys and ``api_base`` travel in the spec, never into a message file. Every call passes its key
explicitly when litellm would otherwise lend one provider's key to another endpoint
(``runtime.routing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from jupyter_percent_agent import trust
from jupyter_percent_agent.litellm_setup import import_litellm, one_line
from jupyter_percent_agent.masking import mask_data
from jupyter_percent_agent.outcome import RunStatus
from jupyter_percent_agent.runtime import direct, routing
from jupyter_percent_agent.runtime.agents import Agent, environment_agent
from jupyter_percent_agent.runtime.events import Delta, OnEvent, Reasoning, Retry, ignore
from jupyter_percent_agent.runtime.failures import (
    MID_STREAM,
    Failure,
    Refused,
    chain_of,
    connection_cause,
    credentials_in,
    malformed_stream,
    retryable,
    stored_keys,
)
from jupyter_percent_agent.runtime.settings import env_number
from jupyter_percent_agent.trust import NO_KEY, Route, bound, public_url, route_agent


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
    key_env: str | None = None  # the variable ``api_key`` came from (never the value), for people
    routes: dict[str, list[str | None]] = field(default_factory=dict)
    """Models whose calls go elsewhere than ``api_base`` (a URL in the name): ``[api_base,
    api_key, key_env]``."""
    file_folder: str | None = None
    """The folder of the file that chose ``models`` ("": a file of no known folder; None: the
    user chose them): a host a model's name makes litellm pick is judged as that file's
    ``api_base`` (``trust.route_for``)."""
    agent: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def route(self, model: str) -> tuple[str | None, str | None, str | None]:
        """(api_base, api_key, key_env) for ``model``."""
        base, key, key_env = self.routes.get(model) or (self.api_base, self.api_key,
                                                        self.key_env)
        return base, key, key_env


@dataclass
class CallResult:
    """What a call produced and measured. ``error`` is one line when every model failed
    (``status``: ``RunStatus.ERROR``; a cancelled call raises, it returns no result)."""

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
    error_detail: str | None = None
    """``error`` as the terminal shows it: it may name the ``api_base`` (credentials and query
    removed). Never written into a message file; ``error`` is."""
    attempts: list[str] = field(default_factory=list)

    @property
    def status(self) -> RunStatus:
        return RunStatus.OK if self.error is None else RunStatus.ERROR

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def spec_for(agent: Agent, messages: list[dict[str, Any]], *,
             env: Mapping[str, str] | None = None, route: Route | None = None) -> CallSpec:
    """The call an agent makes for ``messages``, with settings from the agent and the
    environment (``PERCENT_AGENT_TIMEOUT``, ``PERCENT_AGENT_RETRIES``,
    ``PERCENT_AGENT_BACKOFF``). ``route`` (``trust.route_agent``) says where the call goes
    and with which key; without one, an ``api_base`` the agent's file chose (or a URL in a
    model's name) is refused unless the user allow-listed it (``TrustError``)."""
    env = os.environ if env is None else env
    if route is None:
        route = route_agent(agent.name, agent.api_base, agent.models,
                            from_file=agent.source != "environment", folder=None, env=env)
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
        messages=wire_messages(messages),
        params=params,
        api_base=route.api_base,
        api_key=route.api_key,
        key_env=route.key_env,
        routes={m: [r.api_base, r.api_key, r.key_env] for m, r in route.by_model},
        file_folder=route.file_folder,
        agent=agent.name,
        timeout=float(agent.timeout or bound("timeout", None, folder=None, env=env).value or 0),
        retries=int(env_number("PERCENT_AGENT_RETRIES", 2, env)),
        backoff=float(env_number("PERCENT_AGENT_BACKOFF", 1.0, env)),
    )


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as they can go over the wire: text with a lone surrogate (from a model's
    stream or a tool's result) escaped, since an HTTP body must be UTF-8."""
    from jupyter_percent_agent.format import escape_surrogates

    return [{**m, "content": escape_surrogates(m["content"])}
            if isinstance(m.get("content"), str) else m for m in messages]


def goes_direct(spec: CallSpec) -> bool:
    """Whether every model of ``spec`` is called straight over HTTP (no litellm needed)."""
    return all(routing.openai_compatible(m, spec.route(m)[0]) is not None for m in spec.models)


def environment_needs_litellm(model: str | None = None) -> bool:
    """Whether a call of ``model`` (by default the environment agent's first) by the
    environment's agent would go through litellm rather than straight to its endpoint."""
    agent = environment_agent()
    model = model or agent.models[0]
    try:
        base = route_agent(agent.name, agent.api_base, [model], from_file=False,
                           folder=None).api_base
    except trust.TrustError:
        base = None
    return routing.openai_compatible(model, base) is None


def prewarm(model: str | None = None, *, deep: bool = True) -> None:
    """Import what the first call of ``model`` (by default the environment agent's first)
    loads: for a call straight to an OpenAI-compatible endpoint, the HTTP client; otherwise
    litellm (about 3 s) and, ``deep``, its HTTP client stack and the model's tokenizer (1 s
    more). A process about to call a model pays it while nobody waits; the first call then
    costs what later ones do."""
    model = model or environment_agent().models[0]
    if not environment_needs_litellm(model):
        direct.prewarm()
        return
    litellm = import_litellm()
    if not deep:
        return
    with contextlib.suppress(ImportError):
        import httpcore  # noqa: F401
        import openai.resources  # noqa: F401
    with contextlib.suppress(Exception):  # a model litellm has no tokenizer for: no matter
        litellm.token_counter(model=model, messages=[{"role": "user", "content": "hi"}])


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
    if name not in _KNOWN_PROVIDER:  # litellm's answer raises for an unknown name: costly
        _KNOWN_PROVIDER[name] = routing.provider_of(litellm, name) is not None
    return name if _KNOWN_PROVIDER[name] else "openai/" + name


_KNOWN_PROVIDER: dict[str, bool] = {}


def explain(litellm: Any, exc: BaseException, model: str, spec: CallSpec) -> Failure:
    """Turn litellm's exception (or ``runtime.direct``'s, ``litellm`` None) into a reason
    naming the server or the missing key."""
    if isinstance(exc, Refused):
        return exc.failure
    chain = chain_of(exc)
    api_base = spec.route(model)[0]
    routed, provider = _routed(litellm, model, api_base)
    server = f"the model server at {public_url(api_base)}" if api_base else (
        f"the {provider} model server for {model}" if provider else
        f"the model server for {model}")
    server_recorded = ("the model server at the configured api_base" if api_base
                       else server)
    text = " ".join(str(exc).split()).lower()
    if isinstance(exc, getattr(litellm, "Timeout", ())) or isinstance(exc, TimeoutError):
        tail = (f"did not answer within {spec.timeout:g} s (timeout; raise "
                "PERCENT_AGENT_TIMEOUT or the agent's timeout)")
        return Failure("Timeout", f"{server_recorded} {tail}", f"{server} {tail}")
    if "missing" in text and any(w in text for w in ("credential", "api key", "api_key")):
        names = routing.missing_keys(litellm, routed) if litellm is not None else []
        which = ("PERCENT_AGENT_API_KEY" if api_base else
                 " or ".join(names) or "the provider's API key variable")
        where = (f"{model} ({provider})" if provider and not model.startswith(provider + "/")
                 else model)
        store = f"run tce keys set {provider} or " if provider and not api_base else ""
        line = f"no API key found for {where}: {store}set {which}"
        return Failure("AuthenticationError", line, line)
    if malformed_stream(chain):  # not a lost connection: the server sent what is no JSON
        tail = "sent a reply chunk that is not JSON (a malformed stream, not a lost connection)"
        return Failure("APIError", f"{server_recorded} {tail}", f"{server} {tail}")
    if {type(e).__name__ for e in chain} & MID_STREAM:
        tail = "broke off mid-reply (the connection was lost)"
        return Failure("APIConnectionError", f"{server_recorded} {tail}", f"{server} {tail}")
    cause = connection_cause(chain)
    if cause is not None:
        return Failure("APIConnectionError", f"cannot reach {server_recorded} ({cause})",
                       f"cannot reach {server} ({cause})")
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        hint = _key_hint(api_base) if api_base else "check the key"
        tail = f"refused the API key (HTTP {status}): {hint}"
        return Failure("AuthenticationError", f"{server_recorded} {tail}", f"{server} {tail}")
    line = one_line(exc)
    for key in (spec.api_key, *(route[1] for route in spec.routes.values()), *stored_keys()):
        if key and key != NO_KEY:
            line = line.replace(key, "***")
    return Failure(type(exc).__name__, line, line)


def _key_hint(api_base: str) -> str:
    """What to do when ``api_base`` refused the key: the stored server's key is stored again
    (``tce keys server``, where a desktop-launched JupyterLab can reach it), any other's is
    ``PERCENT_AGENT_API_KEY``."""
    try:
        stored = None if os.environ.get("PERCENT_AGENT_API_BASE") else trust.stored_server()
    except (trust.ConfigError, trust.KeysError, OSError):
        stored = None
    if stored is not None and stored.api_base == api_base:
        return (f"store its key with tce keys server {public_url(api_base)} (or Agent > Set "
                "up a model)")
    return "set PERCENT_AGENT_API_KEY"


def list_price(litellm: Any, model: str, tokens_in: int, tokens_out: int) -> float | None:
    try:
        a, b = litellm.cost_per_token(model=model, prompt_tokens=tokens_in,
                                      completion_tokens=tokens_out)
        return round(float(a) + float(b), 8)
    except Exception:
        return None


SERVER_COST_HEADER = "llm_provider-x-litellm-response-cost"
"""How litellm hands on the ``x-litellm-response-cost`` header a LiteLLM proxy sends."""


def _server_cost(response: Any) -> float | None:
    """The cost the server reported for a call (a LiteLLM proxy does), else None."""
    hidden = getattr(response, "_hidden_params", None)
    headers = hidden.get("additional_headers") if isinstance(hidden, dict) else None
    return _cost_value(headers.get(SERVER_COST_HEADER) if isinstance(headers, dict) else None)


def _cost_value(value: Any) -> float | None:
    """A reported cost as the number recorded, or None."""
    try:
        return round(float(value), 8) if value is not None else None
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class CallRoute:
    """How one model is called, decided before the call: the name litellm routes, the
    ``api_base`` and key passed (None: litellm's own), and for people the provider, where
    the call goes and which key goes with it (a variable's name, never its value)."""

    routed: str
    api_base: str | None
    api_key: str | None
    provider: str | None
    endpoint: str
    key_name: str
    wire: str | None = None
    """The model name sent straight to ``api_base`` (``runtime.direct``); None: litellm."""


def _routed(litellm: Any, model: str, api_base: str | None) -> tuple[str, str | None]:
    """The name litellm routes for ``model`` and its provider; for a call made straight to
    an OpenAI-compatible ``api_base``, the ``openai/`` name litellm would route, without
    asking it."""
    wire = routing.openai_compatible(model, api_base)
    if wire is not None:
        return f"openai/{wire}", "openai"
    routed = _provider_model(litellm, model, api_base)
    return routed, routing.provider_of(litellm, routed)


def call_route(litellm: Any, spec: CallSpec, model: str) -> CallRoute:
    """How ``model`` of ``spec`` is called. An ``api_base`` gets the key ``trust.route_for``
    tied to it, or the placeholder: never a provider's from the environment. With none,
    litellm's own routing (``routing.resolve``) gives the provider's own key, or the
    placeholder where litellm would lend another's; a host the model's name chose, for models
    a file chose, is judged as that file's ``api_base``. ``litellm`` may be None for a call
    ``routing.openai_compatible`` sends straight to its ``api_base``. Raises
    :class:`Refused`."""
    base, key, key_env = spec.route(model)
    if base:
        routed, provider = _routed(litellm, model, base)
        shown = trust.Route(base, key, "", key_env=key_env).key_name()
        return CallRoute(routed, base, key or NO_KEY, provider, public_url(base), shown,
                         routing.openai_compatible(model, base))
    routed = _provider_model(litellm, model, base)
    where = routing.resolve(litellm, routed)
    if where.problem:
        raise Refused(Failure("APIConnectionError", where.problem, where.problem))
    endpoint = public_url(where.endpoint) if where.endpoint else "the provider's own endpoint"
    if where.named and where.endpoint and spec.file_folder is not None:
        from pathlib import Path

        try:
            chosen = trust.route_for(where.endpoint,
                                     folder=Path(spec.file_folder) if spec.file_folder else None,
                                     agent=spec.agent, asking=f"model {model!r} names the "
                                     f"host {public_url(where.endpoint)}")
        except trust.TrustError as exc:
            raise Refused(Failure("TrustError", str(exc), str(exc))) from None
        return CallRoute(routed, None, chosen.api_key or NO_KEY, where.provider, endpoint,
                         chosen.key_name())
    return CallRoute(routed, None, where.key, where.provider, endpoint, where.key_name)


async def _attempt_direct(how: CallRoute, spec: CallSpec, model: str, on_event: OnEvent,
                          result: CallResult) -> None:
    """One attempt straight over HTTP: the request litellm would send for ``openai/NAME``."""
    assert how.api_base is not None and how.wire is not None and how.api_key is not None

    def text(piece: str) -> None:
        result.text += piece
        on_event(Delta(piece))

    def reasoning(piece: str) -> None:
        result.reasoning += piece
        on_event(Reasoning(piece))

    body = {"model": how.wire, "messages": spec.messages, "stream": True,
            "stream_options": {"include_usage": True}, **spec.params}
    got = await direct.stream_chat(how.api_base, how.api_key, body, timeout=spec.timeout,
                                   on_text=text, on_reasoning=reasoning)
    result.model = model
    usage = got.usage or {}
    if usage.get("prompt_tokens") is not None:
        result.tokens_in = int(usage["prompt_tokens"])
        result.tokens_out = int(usage.get("completion_tokens") or 0)
    else:  # a server that reports no usage: litellm's counter, as the litellm path counts
        litellm = import_litellm()
        result.tokens_in = litellm.token_counter(model=how.routed, messages=spec.messages)
        result.tokens_out = litellm.token_counter(model=how.routed, text=result.text)
    result.cost = _cost_value(got.cost_header)


async def _attempt(litellm: Any, spec: CallSpec, model: str, on_event: OnEvent,
                   result: CallResult) -> None:
    kwargs: dict[str, Any] = dict(spec.params)
    how = call_route(litellm, spec, model)
    if how.wire is not None:
        await _attempt_direct(how, spec, model, on_event, result)
        return
    routed, base = how.routed, how.api_base
    if base:
        kwargs["api_base"] = base
    if how.api_key:
        kwargs["api_key"] = how.api_key
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
                on_event(Reasoning(reasoning))
            if delta.content:
                result.text += delta.content
                on_event(Delta(delta.content))
    result.model = model
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        result.tokens_in = int(usage.prompt_tokens)
        result.tokens_out = int(usage.completion_tokens or 0)
    else:
        result.tokens_in = litellm.token_counter(model=routed, messages=spec.messages)
        result.tokens_out = litellm.token_counter(model=routed, text=result.text)
    # litellm prices by model name, which says nothing of what a server of the user's own
    # (Ollama, vLLM, a proxy) charges: there, only a cost the server reports is recorded
    result.cost = (_server_cost(response) if base
                   else list_price(litellm, routed, result.tokens_in, result.tokens_out))


def masked_request(spec: CallSpec) -> CallSpec:
    """``spec`` with every sensitive value in its messages masked (``masking``): a key a tool
    returned, a token a cell printed never reaches a model. The call's own keys count too."""
    own = {(key_env or "API_KEY"): key for _, key, key_env in
           [(spec.api_base, spec.api_key, spec.key_env), *spec.routes.values()]
           if key and key != NO_KEY}
    messages = mask_data(spec.messages, own)
    return spec if messages == spec.messages else replace(spec, messages=messages)


async def complete(spec: CallSpec, on_event: OnEvent = ignore) -> CallResult:
    """Stream one reply in this process, retrying and falling over to the next model; never
    raises for a model failure (the result's ``error`` says why). Cancellation propagates.
    Streamed text arrives as ``Delta``/``Reasoning`` events, a new attempt as ``Retry``."""
    started = time.monotonic()
    spec = masked_request(spec)
    result = CallResult(time=datetime.now(UTC).astimezone().isoformat(timespec="seconds"))
    litellm = None
    if not goes_direct(spec):
        try:  # seconds the first time: off the event loop (a kernel's stays responsive)
            litellm = await asyncio.to_thread(import_litellm)
        except Exception as exc:  # pragma: no cover - broken installation
            result.error, result.error_type = one_line(exc), type(exc).__name__
            return result
    last: Failure | None = next(filter(None, map(credentials_in, [
        spec.api_base, *(route[0] for route in spec.routes.values())])), None)
    for n, model in enumerate(spec.models if last is None else ()):
        for attempt in range(spec.retries + 1):
            result.text, result.reasoning = "", ""
            try:
                await _attempt(litellm, spec, model, on_event, result)
                result.duration = round(time.monotonic() - started, 3)
                return result
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                last = explain(litellm, exc, model, spec)
                result.attempts.append(f"{model}: {last.text}")
                if not retryable(litellm, exc) or attempt == spec.retries:
                    break
                on_event(Retry(f"{last.detail}; retrying {model}"))
                await asyncio.sleep(spec.backoff * 2 ** attempt)
        if n + 1 < len(spec.models) and last is not None:
            on_event(Retry(f"{last.detail}; falling over to {spec.models[n + 1]}"))
    result.text = result.reasoning = ""
    result.duration = round(time.monotonic() - started, 3)
    result.error = last.text if last else "no model to call"
    result.error_detail = last.detail if last else result.error
    result.error_type = last.kind if last else "AgentError"
    return result
