"""The server side of JupyterLab's "Set up a model" dialog: ``/percent-agent/keys``.

``GET`` names the providers the dialog offers, which of them have a key and where it comes
from (never a key), and the default model. ``POST {"provider", "key", "default_model"}``
stores the key as ``tce keys set`` does (``trust.set_key``: the user's config directory, 0600,
atomic) and sets the default model as ``tce models default`` does. Both need the server's
authentication and, for POST, its XSRF check (``APIHandler``), like the contents API: whoever
may call them could already start kernels with the user's keys. No answer and no log line
holds a key; the next model call reads it, so nothing needs restarting.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_percent_agent import trust
from jupyter_percent_agent.contents.api import add_route, http_error, json_body
from jupyter_percent_agent.errors import PercentAgentError
from jupyter_percent_agent.litellm_setup import provider_names
from jupyter_percent_agent.trust.keys import COMMON_PROVIDERS

ROUTE = "percent-agent/keys"


def _state() -> dict[str, Any]:
    from jupyter_percent_agent.runtime.agents import default_model

    sources = trust.key_sources(known=provider_names())
    names = list(dict.fromkeys([*COMMON_PROVIDERS, *sources]))
    return {"providers": [{"name": n, "source": sources.get(n)} for n in names],
            "default_model": default_model()}


class KeysHandler(APIHandler):
    """``GET`` and ``POST`` ``/percent-agent/keys``."""

    def _answer(self) -> None:
        try:
            self.finish(json.dumps(_state()))
        except (PercentAgentError, OSError) as exc:  # the keys or config cannot be read
            raise http_error(exc, "could not read your keys") from None

    @web.authenticated
    def get(self) -> None:
        self._answer()

    @web.authenticated
    def post(self) -> None:
        body = json_body(self.request.body)
        if not isinstance(body, dict):
            raise web.HTTPError(400, "the body is not a JSON object")
        provider, key, model = body.get("provider"), body.get("key"), body.get("default_model")
        if not all(v is None or isinstance(v, str) for v in (provider, key, model)):
            raise web.HTTPError(400, "provider, key and default_model must be strings")
        if model is not None and (not model.strip() or any(c.isspace() for c in model.strip())):
            raise web.HTTPError(400, "default_model: not a model name")
        try:
            if key:
                if not provider or trust.keys.check_provider(provider) not in provider_names():
                    raise trust.KeysError(f"litellm knows no provider {provider!r}: nothing "
                                          "stored")
                trust.set_key(provider, key)
                self.log.warning("[jupyter-percent-agent] stored a key for %s", provider)
            if model:
                config = trust.load_config()
                trust.save_config(replace(config, default_model=model.strip()))
        except (PercentAgentError, OSError) as exc:
            raise http_error(exc, "could not save") from None
        self._answer()


def register(serverapp: Any) -> None:
    """Add the handler to the server's web application."""
    add_route(serverapp, ROUTE, KeysHandler)
