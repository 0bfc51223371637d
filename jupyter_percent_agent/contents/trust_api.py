"""The server side of JupyterLab's "Trust this folder?" dialog: ``/percent-agent/trust``.

``GET ?path=NOTEBOOK`` says whether the folder of a notebook (a path under the server's root,
as the contents API names it) is trusted; ``POST {"path": NOTEBOOK}`` trusts it, as
``tce trust FOLDER`` would, in the user's config directory. ``folder=FOLDER`` (``{"folder":
FOLDER}``) names the folder itself, as the agent kernel's refusal names it (an absolute path
under the server's root): the dialog trusts the folder the kernel refused for. Both need the
server's authentication (and, for POST, its XSRF check), like the contents API itself: whoever
may call them could already write files and start kernels. A path outside the server's root
is refused.
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
    return _under_root(root, os.path.dirname(os.path.join(root, rel)), "path")


def named_folder(root_dir: str, folder: str) -> Path:
    """The real folder ``folder`` (an absolute path), which must lie under ``root_dir``;
    ``HTTPError(400)`` otherwise."""
    if not os.path.isabs(folder) or "\0" in folder:
        raise web.HTTPError(400, "folder: name an absolute folder under the server's root")
    return _under_root(os.path.realpath(root_dir), folder, "folder")


def _under_root(root: str, folder: str, what: str) -> Path:
    folder = os.path.realpath(folder)
    if folder != root and not folder.startswith(root.rstrip(os.sep) + os.sep):
        raise web.HTTPError(400, f"{what}: outside the server's root")
    if not os.path.isdir(folder):
        raise web.HTTPError(404, f"{what}: no such folder")
    return Path(folder)


class TrustHandler(APIHandler):
    """``GET`` and ``POST`` ``/percent-agent/trust``."""

    def _folder(self, api_path: Any, folder: Any = None) -> Path:
        root = self.settings["server_root_dir"]
        if isinstance(folder, str):
            return named_folder(root, folder)
        if not isinstance(api_path, str):
            raise web.HTTPError(400, "path: a notebook path or a folder is required")
        return notebook_folder(root, api_path)

    def _answer(self, folder: Path) -> None:
        self.finish(json.dumps({"folder": str(folder), "trusted": trust.is_trusted(folder)}))

    @web.authenticated
    def get(self) -> None:
        self._answer(self._folder(self.get_argument("path", None),
                                  self.get_argument("folder", None)))

    @web.authenticated
    def post(self) -> None:
        body = json_body(self.request.body)
        body = body if isinstance(body, dict) else {}
        folder = self._folder(body.get("path"), body.get("folder"))
        try:
            trust.trust_folder(folder)
        except (OSError, PercentAgentError) as exc:  # the server could not write its config
            raise http_error(exc, "could not record the trust") from None
        self.log.warning("[jupyter-percent-agent] the user trusted %s", folder)
        self._answer(folder)


def register(serverapp: Any) -> None:
    """Add the handler to the server's web application."""
    add_route(serverapp, ROUTE, TrustHandler)
