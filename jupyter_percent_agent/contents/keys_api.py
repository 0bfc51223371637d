"""The server side of JupyterLab's "Set up a model" dialog: ``/percent-agent/keys``.

``GET`` names the providers the dialog offers, which of them have a key and where it comes
from (never a key), the user's own server (its URL, whether it has a key) and the default
model. ``POST {"provider", "key", "default_model"}`` stores the key as ``tce keys set`` does
(``trust.set_key``: the user's config directory, 0600, atomic) and sets the default model as
``tce models default`` does. ``POST {"server", "server_key", "default_model"}`` stores the
user's own server as ``tce keys server`` does (``server_models.connect_server``: the server
must answer with its model list, and serve the default model; the key is tied to exactly
that URL; no ``server_key``: the one stored for that same URL stays), and the answer carries
the plain-http ``warning``, if any. ``POST {"remove_server": true}`` forgets it. All need
the server's authentication and, for POST, its XSRF check (``APIHandler``), like the
contents API: whoever may call them could already start kernels with the user's keys. No
answer and no log line holds a key; the next model call reads it, so nothing needs
restarting.
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
    server = trust.user_server()
    return {"providers": [{"name": n, "source": sources.get(n)} for n in names],
            "server": server and {"url": trust.public_url(server.api_base),
                                  "source": server.source, "has_key": bool(server.api_key)},
            "default_model": default_model()}


class KeysHandler(APIHandler):
    """``GET`` and ``POST`` ``/percent-agent/keys``."""

    def _answer(self, **extra: Any) -> None:
        try:
            self.finish(json.dumps({**_state(), **extra}))
        except (PercentAgentError, OSError) as exc:  # the keys or config cannot be read
            raise http_error(exc, "could not read your keys") from None

    @web.authenticated
    def get(self) -> None:
        self._answer()

    @web.authenticated
    async def post(self) -> None:
        body = json_body(self.request.body)
        if not isinstance(body, dict):
            raise web.HTTPError(400, "the body is not a JSON object")
        provider, key, model = body.get("provider"), body.get("key"), body.get("default_model")
        server, server_key = body.get("server"), body.get("server_key")
        if not all(v is None or isinstance(v, str)
                   for v in (provider, key, model, server, server_key)):
            raise web.HTTPError(400, "provider, key, server, server_key and default_model "
                                "must be strings")
        if model is not None and (not model.strip() or any(c.isspace() for c in model.strip())):
            raise web.HTTPError(400, "default_model: not a model name")
        if body.get("remove_server") is True:
            try:
                trust.remove_server()
            except (PercentAgentError, OSError) as exc:
                raise http_error(exc, "could not save") from None
            self._answer()
            return
        if server is not None:
            await self._connect(server, server_key or None, model)
            return
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

    async def _connect(self, url: str, key: str | None, model: str | None) -> None:
        """Store the user's server: its model list is asked for off the event loop (up to
        its timeout), so the server keeps answering others meanwhile."""
        import asyncio

        from jupyter_percent_agent.runtime.server_models import connect_server

        try:
            stored, _, warning = await asyncio.to_thread(
                connect_server, url, key, default_model=model.strip() if model else None)
        except (PercentAgentError, OSError) as exc:
            raise http_error(exc, "could not save") from None
        self.log.warning("[jupyter-percent-agent] stored your server %s", trust.public_url(stored))
        self._answer(warning=warning)


def register(serverapp: Any) -> None:
    """Add the handler to the server's web application."""
    add_route(serverapp, ROUTE, KeysHandler)
