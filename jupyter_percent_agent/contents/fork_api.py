"""The server side of JupyterLab's "Fork from here": ``POST /percent-agent/fork``.

``{"path": NOTEBOOK, "cell": ID}`` (a contents-API path under the server's root, and the id of
one of its cells as JupyterLab holds it) writes the fork of the saved file up to and including
that cell (``runtime.fork``, what ``tce fork`` does) beside it, and answers ``{"path": NEW}``,
the fork's contents-API path, for the front end to open. Authenticated and XSRF-checked like
the contents API; a path outside the server's root is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

from jupyter_percent_agent.contents.api import add_route, http_error, json_body
from jupyter_percent_agent.contents.trust_api import notebook_folder
from jupyter_percent_agent.errors import PercentAgentError

ROUTE = "percent-agent/fork"


class ForkHandler(APIHandler):
    """``POST /percent-agent/fork``."""

    @web.authenticated
    def post(self) -> None:
        from jupyter_percent_agent import format as fmt
        from jupyter_percent_agent.runtime import fork

        body = json_body(self.request.body)
        body = body if isinstance(body, dict) else {}
        api_path, cell = body.get("path"), body.get("cell")
        if not isinstance(api_path, str) or not isinstance(cell, str) or not cell:
            raise web.HTTPError(400, "path and cell: a notebook path and a cell id are required")
        root = os.path.realpath(self.settings["server_root_dir"])
        path = notebook_folder(root, api_path) / os.path.basename(api_path.strip("/"))
        try:
            made = fork.fork(path, fork.cell_number(fmt.read(path), cell))
        except (OSError, PercentAgentError) as exc:
            raise http_error(exc, "could not fork") from None
        self.finish(json.dumps({"path": _api_path(root, made)}))


def _api_path(root: str, path: Path) -> str:
    """``path`` (under ``root``) as the contents API names it."""
    return Path(os.path.relpath(path, root)).as_posix()


def register(serverapp: Any) -> None:
    """Add the handler to the server's web application."""
    add_route(serverapp, ROUTE, ForkHandler)
