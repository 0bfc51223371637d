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


def encoded_service_token(form: str) -> str:
    """
    The token of the user's service, encoded the way a header or a URL carries it.

    Args:
        form (str): "base64" (standard, padded), "urlsafe" (URL-safe base64, no padding),
            "hex" (lower case) or "HEX" (upper case).

    Returns:
        str: The encoded token.
    """
    import base64

    raw = os.environ["MY_SERVICE_TOKEN"].encode()
    encoded = {"base64": base64.b64encode(raw).decode(),
               "urlsafe": base64.urlsafe_b64encode(raw).decode().rstrip("="),
               "hex": raw.hex(), "HEX": raw.hex().upper()}[form]
    return "Authorization: Basic " + encoded
