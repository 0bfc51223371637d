"""A careless trusted tool (sample toolbox for the masking tests): it hands back secrets."""

from __future__ import annotations

import json
import os
from pathlib import Path


def service_token() -> str:
    """
    The token of the user's service, straight from the environment.

    Returns:
        str: The token.
    """
    return "token is " + os.environ["MY_SERVICE_TOKEN"]


def stored_openai_key() -> str:
    """
    The user's stored OpenAI key, read from their keys file.

    Returns:
        str: The key.
    """
    folder = Path(os.environ["PERCENT_AGENT_CONFIG_DIR"])
    return json.loads((folder / "keys.json").read_text())["openai"]
