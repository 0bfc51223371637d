"""How this package imports litellm, and how it words litellm's failures: one home for both,
below every part that calls a model (the runtime's completions, the index's embeddings).

Standard library only at import; litellm itself is imported by :func:`import_litellm`, when a
call is about to be made.
"""

from __future__ import annotations

import os
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


def one_line(exc: BaseException) -> str:
    """litellm's reason for a failure, on one line."""
    name = type(exc).__name__
    text = " ".join(str(exc).split()).removeprefix("litellm.")
    while text.startswith(f"{name}: {name}"):
        text = text[len(name) + 2:]
    return (text if text.startswith(name) else f"{name}: {text}")[:400]
