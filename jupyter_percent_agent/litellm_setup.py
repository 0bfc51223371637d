"""How this package imports litellm, and how it words litellm's failures: one home for both,
below every part that calls a model (the runtime's completions, the index's embeddings).

Standard library only at import; litellm itself is imported by :func:`import_litellm`, when a
call is about to be made.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Set (unless the user set them) in every process that imports litellm: its cost map from the
# package, not fetched at import time. The warm helper's socket name hashes the environment as
# it is once these are in place.
LITELLM_ENV_DEFAULTS = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
# Set whatever the user set, before litellm is imported: its import reads a .env file
# (python-dotenv, searched from the working folder when __main__ has no file, as in a
# kernel, else upwards from litellm's own folder) unless LITELLM_MODE says it is not "DEV".
# Keys come from the environment and the user's config only, never from a folder.
LITELLM_ENV_FORCED = {"LITELLM_MODE": "PRODUCTION"}


def import_litellm() -> Any:
    """Import litellm quietly and offline, reading no ``.env`` file."""
    for key, value in LITELLM_ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    os.environ.update(LITELLM_ENV_FORCED)
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


def _litellm_folder() -> Path:
    """Where litellm is installed (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("litellm is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def provider_names() -> frozenset[str]:
    """The providers litellm knows (its ``LlmProviders`` and its JSON registry's), read from
    its installed files without importing it, which takes seconds (``tce keys set`` checks a
    name with it); litellm is imported only when its files are not laid out as expected."""
    import ast
    import json

    try:
        folder = _litellm_folder()
        tree = ast.parse((folder / "types" / "utils.py").read_text(encoding="utf-8"))
        enum = next(node for node in tree.body
                    if isinstance(node, ast.ClassDef) and node.name == "LlmProviders")
        names = {node.value.value for node in enum.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}
        registry = folder / "llms" / "openai_like" / "providers.json"
        if registry.exists():
            names |= set(json.loads(registry.read_text(encoding="utf-8")))
        if names:
            return frozenset(names)
    except (AttributeError, OSError, StopIteration, SyntaxError, ValueError, TypeError):
        pass
    litellm = import_litellm()
    from litellm.llms.openai_like.json_loader import JSONProviderRegistry

    JSONProviderRegistry.load()
    return frozenset({str(getattr(p, "value", p)) for p in litellm.provider_list}
                     | set(JSONProviderRegistry.list_providers()))


def chat_models(provider: str) -> list[str]:
    """The chat models litellm knows for ``provider`` (as its ``models_by_provider`` names
    them), read from the cost map it ships (the one it uses here, ``LITELLM_ENV_DEFAULTS``)
    without importing it; imported when the map is not where it was."""
    import json

    try:
        cost = json.loads(packaged_model_map())
    except (OSError, ValueError):  # not where it was: litellm's own answer, at its price
        cost = import_litellm().model_cost
    return sorted(name for name, info in cost.items()
                  if isinstance(info, dict) and info.get("litellm_provider") == provider
                  and info.get("mode") == "chat" and not name.startswith("ft:"))


COST_MAP = "model_prices_and_context_window_backup.json"


def packaged_model_map() -> str:
    """The text of the model map litellm ships and loads here (``LITELLM_ENV_DEFAULTS``),
    read without importing litellm; OSError when it is not where it was."""
    global _MODEL_MAP
    if _MODEL_MAP is None:
        _MODEL_MAP = (_litellm_folder() / COST_MAP).read_text(encoding="utf-8")
    return _MODEL_MAP


_MODEL_MAP: str | None = None


def one_line(exc: BaseException) -> str:
    """litellm's reason for a failure, on one line."""
    name = type(exc).__name__
    text = " ".join(str(exc).split()).removeprefix("litellm.")
    while text.startswith(f"{name}: {name}"):
        text = text[len(name) + 2:]
    return (text if text.startswith(name) else f"{name}: {text}")[:400]
