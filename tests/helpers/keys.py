"""The API key tests store in the user's keys file (and look for where it must not be)."""

from __future__ import annotations

SECRET = "sk-stored-openai-0123456789"
