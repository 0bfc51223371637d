"""What the package's small JSON APIs for JupyterLab (trust, keys) share: reading a request's
JSON body, and adding a handler under the server's base URL."""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.utils import url_path_join
from tornado import web


def json_body(body: bytes | None) -> Any:
    """A request's JSON body (an empty one is ``{}``), else HTTP 400."""
    try:
        return json.loads(body or b"{}")
    except ValueError:
        raise web.HTTPError(400, "the body is not JSON") from None


def add_route(serverapp: Any, route: str, handler: type) -> None:
    """Serve ``handler`` at ``route`` under the server's base URL."""
    web_app = serverapp.web_app
    pattern = url_path_join(web_app.settings["base_url"], route)
    web_app.add_handlers(".*$", [(pattern, handler)])
