"""The server side of JupyterLab's "Trust this folder?" dialog: ``/percent-agent/trust``.

``GET ?path=NOTEBOOK`` says whether the folder of a notebook (a path under the server's root,
as the contents API names it) is trusted; ``POST {"path": NOTEBOOK}`` trusts it, as
``tce trust FOLDER`` would, in the user's config directory. Both need the server's
authentication (and, for POST, its XSRF check), like the contents API itself: whoever may call
them could already write files and start kernels. A path outside the server's root is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_percent_agent import trust
from jupyter_percent_agent.contents.api import add_route, http_error, json_body
from jupyter_percent_agent.errors import PercentAgentError

ROUTE = "percent-agent/trust"


def notebook_folder(root_dir: str, api_path: str) -> Path:
    """The real folder holding ``api_path`` (a contents-API path), which must lie under
    ``root_dir``; ``HTTPError(400)`` otherwise."""
    root = os.path.realpath(root_dir)
    rel = api_path.strip("/")
    if not rel or "\0" in rel:
        raise web.HTTPError(400, "path: name a notebook under the server's root")
    folder = os.path.realpath(os.path.dirname(os.path.join(root, rel)))
    if folder != root and not folder.startswith(root.rstrip(os.sep) + os.sep):
        raise web.HTTPError(400, "path: outside the server's root")
    if not os.path.isdir(folder):
        raise web.HTTPError(404, "path: no such folder")
    return Path(folder)


class TrustHandler(APIHandler):
    """``GET`` and ``POST`` ``/percent-agent/trust``."""

    def _folder(self, api_path: Any) -> Path:
        if not isinstance(api_path, str):
            raise web.HTTPError(400, "path: a notebook path is required")
        return notebook_folder(self.settings["server_root_dir"], api_path)

    def _answer(self, folder: Path) -> None:
        self.finish(json.dumps({"folder": str(folder), "trusted": trust.is_trusted(folder)}))

    @web.authenticated
    def get(self) -> None:
        self._answer(self._folder(self.get_argument("path", None)))

    @web.authenticated
    def post(self) -> None:
        body = json_body(self.request.body)
        folder = self._folder(body.get("path") if isinstance(body, dict) else None)
        try:
            trust.trust_folder(folder)
        except (OSError, PercentAgentError) as exc:  # the server could not write its config
            raise http_error(exc, "could not record the trust") from None
        self.log.warning("[jupyter-percent-agent] the user trusted %s", folder)
        self._answer(folder)


def register(serverapp: Any) -> None:
    """Add the handler to the server's web application."""
    add_route(serverapp, ROUTE, TrustHandler)
