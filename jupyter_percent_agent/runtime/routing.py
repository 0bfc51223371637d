"""Where one model's calls go, and which of the user's keys goes with them: litellm's own
routing, asked before any call (and by ``tce list FILE/agent``).

``trust.route_for`` decides what an ``api_base`` gets. With none, litellm picks the endpoint
and the key from the model's name, and two of its habits would send a key where it does not
belong:

- an OpenAI-compatible provider (``litellm.openai_compatible_providers`` and the providers of
  its JSON registry: groq, reka, hosted_vllm...) whose own key variable is unset gets
  ``OPENAI_API_KEY``; one whose own endpoint is unset goes to OpenAI's. Here such a provider
  gets its own key or the placeholder ``trust.NO_KEY``, and no endpoint of its own is a
  failure before the call;
- some providers build the host from the name (``huggingface/https://host/...``, a Baseten
  deployment id). That is a host the file chose: the endpoint litellm would use for the name
  is compared with the one it would use for a neutral name of the same provider, and a
  difference is reported (``named``) for the caller to treat as a file's ``api_base``.

Providers with their own client (Anthropic, Gemini, Bedrock...) read their own variable, and
nothing else; they are left to litellm. Names that would make litellm start an interactive
sign-in (GitHub Copilot, ChatGPT) are never resolved, only named.

``openai_compatible`` answers, without importing litellm, whether a call with an ``api_base``
is one litellm would make as ``openai/NAME``: those go straight over HTTP (``runtime.direct``).

Where litellm finds no key of the provider's own in the environment, the key the user stored
for that provider (``tce keys set``, ``trust.keys``) is passed instead, read afresh for each
call: it goes exactly where that provider's variable would, and nowhere else.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from jupyter_percent_agent.envflags import env_flag
from jupyter_percent_agent.litellm_setup import packaged_model_map
from jupyter_percent_agent.trust import NO_KEY, KeysError, keys_path, stored_key

OPENAI = frozenset({"openai", "text-completion-openai", "aiohttp_openai"})
"""Providers that are OpenAI itself: ``OPENAI_API_KEY`` belongs to them."""

OPENAI_ENDPOINT = "https://api.openai.com/v1"
CANARY = "canary/percent-agent"
"""A neutral model name: where a provider sends it is where the provider's calls go when the
name does not choose (two parts, as some providers expect ``org/model``)."""


@dataclass(frozen=True)
class Resolution:
    """What litellm would do with a model name when no ``api_base`` is given.

    ``endpoint``: where the call goes (None: the provider's own, which litellm works out only
    while calling). ``named``: that endpoint's host comes from the model's name. ``key``: the
    key to pass (None: litellm reads the provider's own variable, which it sends nowhere
    else). ``key_name``: which key that is, for people (never its value). ``problem``: why no
    call can be made, said before making one.
    """

    provider: str | None
    endpoint: str | None = None
    named: bool = False
    key: str | None = None
    key_name: str = ""
    problem: str | None = None


def resolve(litellm: Any, model: str, env: Mapping[str, str] | None = None) -> Resolution:
    """Resolve ``model`` (a name as litellm takes it, provider prefix included) through
    litellm's routing, for a call with no ``api_base``."""
    env = os.environ if env is None else env
    declared = _signs_in(model)
    if declared is not None:
        return Resolution(declared, key_name=f"your {declared} sign-in (litellm's own)")
    try:
        name, provider, key, base = litellm.get_llm_provider(model)
    except Exception:
        return Resolution(None, key_name="none (litellm knows no provider for this name)")
    if provider in OPENAI:
        endpoint = env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE") or OPENAI_ENDPOINT
        if env.get("OPENAI_API_KEY"):
            return Resolution(provider, endpoint, key_name="OPENAI_API_KEY")
        return _with_stored(Resolution(provider, endpoint,
                                       key_name="none (OPENAI_API_KEY is not set)"))
    if _compatible(litellm, provider):
        canary = _canary_base(litellm, provider)
        named = bool(base and canary and _host(base) != _host(canary))
        problem = None if base else (
            f"litellm has no endpoint for {model} ({provider}) here: set the provider's API "
            "base in your environment, or PERCENT_AGENT_API_BASE")
        if key:
            return Resolution(provider, base, named, key, _holding(key, provider, env), problem)
        return _with_stored(Resolution(
            provider, base, named, NO_KEY,
            f"none ({provider}'s own key is not set; no other key is sent)", problem))
    endpoint = _complete_url(litellm, name, provider)
    canary = _complete_url(litellm, CANARY, provider)
    named = bool(endpoint and canary and _host(endpoint) != _host(canary))
    missing = missing_keys(litellm, model)
    if missing:
        return _with_stored(Resolution(provider, endpoint, named, None,
                                       f"none (set {' or '.join(missing)})"))
    return Resolution(provider, endpoint, named, None, _native_key(provider, env))


def _with_stored(found: Resolution) -> Resolution:
    """``found`` (no key in the environment) with the key the user stored for its provider,
    if any; a keys file that cannot be read is a problem said before the call."""
    try:
        key = stored_key(found.provider)
    except KeysError as exc:
        return replace(found, problem=found.problem or str(exc))
    if key is None:
        return found
    return replace(found, key=key, key_name=f"your stored {found.provider} key ({keys_path()})")


def openai_compatible(model: str, api_base: str | None) -> str | None:
    """The model name to send when a call of ``model`` to ``api_base`` can go straight to an
    OpenAI-compatible endpoint, else None (litellm makes the call).

    That is a call litellm would route as ``openai/NAME`` with no knowledge of the model: an
    ``openai/`` name, or a name without a provider prefix that litellm's model map does not
    list (``models._provider_model`` gives those ``openai/``). A name the map lists, of any
    provider, stays with litellm, which knows that model's parameters.
    ``PERCENT_AGENT_DIRECT=0`` sends every call through litellm.
    """
    if not api_base or not env_flag("PERCENT_AGENT_DIRECT", True):
        return None
    if model.startswith("openai/"):
        name = model.removeprefix("openai/")
        return name or None
    if "/" in model or not model or _listed_by_litellm(model):
        return None
    return model


@functools.cache
def _listed_by_litellm(model: str) -> bool:
    """Whether litellm's model map has an entry for ``model`` (when the map cannot be read:
    assume it does, and let litellm decide)."""
    try:
        text = packaged_model_map()
    except OSError:
        return True
    return any(f'\n    "{name}": {{' in text for name in {model, model.lower()})


def provider_of(litellm: Any, model: str) -> str | None:
    """litellm's provider for ``model``, or None; never starts a sign-in."""
    declared = _signs_in(model)
    if declared is not None:
        return declared
    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:
        return None


def _signs_in(model: str) -> str | None:
    """The provider of ``model`` when asking litellm about it would start an interactive
    sign-in (its provider info includes the token the sign-in unlocks)."""
    from litellm.litellm_core_utils.get_llm_provider_logic import (
        declared_authenticating_provider,
    )

    return declared_authenticating_provider(model)


def _compatible(litellm: Any, provider: str) -> bool:
    """Whether litellm calls ``provider`` through its OpenAI client, falling back to OpenAI's
    key and endpoint for what the provider lacks."""
    from litellm.llms.openai_like.json_loader import JSONProviderRegistry

    return provider in litellm.openai_compatible_providers or JSONProviderRegistry.exists(provider)


def _canary_base(litellm: Any, provider: str) -> str | None:
    try:
        return litellm.get_llm_provider(f"{provider}/{CANARY}")[3]
    except Exception:
        return None


def _complete_url(litellm: Any, name: str, provider: str) -> str | None:
    """The URL litellm's config for ``provider`` builds for the model ``name`` (without its
    prefix), when it can say in advance. A config that knows no URL of its own answers
    OpenAI's: that is no answer."""
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    try:
        config = ProviderConfigManager.get_provider_chat_config(
            model=name, provider=LlmProviders(provider))
        url = config.get_complete_url(api_base=None, api_key=None, model=name,
                                      optional_params={}, litellm_params={}, stream=True)
    except Exception:
        return None
    if not isinstance(url, str) or _host(url) in (None, _host(OPENAI_ENDPOINT)):
        return None
    return url


def _host(url: str) -> str | None:
    try:
        return (urlsplit(url if "://" in url else "https://" + url).hostname or "").lower() \
            or None
    except ValueError:
        return None


def _holding(value: str, provider: str, env: Mapping[str, str]) -> str:
    """The variable(s) whose value litellm took as ``provider``'s key (the provider's own
    name first)."""
    names = sorted((k for k, v in env.items() if v == value),
                   key=lambda k: (not k.startswith(provider.upper().replace("-", "_")), k))
    return names[0] if names else f"none (litellm's placeholder for {provider})"


def missing_keys(litellm: Any, model: str) -> list[str]:
    """The key variables a provider with its own client lacks, as litellm says
    (``validate_environment`` names the missing ones)."""
    try:
        return [v for v in litellm.validate_environment(model).get("missing_keys") or []
                if "KEY" in v or "TOKEN" in v]
    except Exception:
        return []


def _native_key(provider: str, env: Mapping[str, str]) -> str:
    """Which variable a provider with its own client reads its key from (it is set)."""
    guess = f"{provider.upper().replace('-', '_')}_API_KEY"
    return guess if env.get(guess) else f"{provider}'s own key (litellm reads it)"
