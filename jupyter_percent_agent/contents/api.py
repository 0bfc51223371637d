"""What the package's small JSON APIs for JupyterLab (trust, keys) share: reading a request's
JSON body, answering a failure with its kind's HTTP status, and adding a handler under the
server's base URL."""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.utils import url_path_join
from tornado import web

from jupyter_percent_agent.errors import PercentAgentError, report


def json_body(body: bytes | None) -> Any:
    """A request's JSON body (an empty one is ``{}``), else HTTP 400."""
    try:
        return json.loads(body or b"{}")
    except ValueError:
        raise web.HTTPError(400, "the body is not JSON") from None


def http_error(exc: PercentAgentError | OSError, doing: str) -> web.HTTPError:
    """The answer to a request that failed ``doing`` something (``could not save``) for
    ``exc``: the HTTP status the package's table gives its kind, and its one line."""
    shown = report(exc)
    assert shown is not None  # the package's errors and OSError all have a kind
    return web.HTTPError(shown.http_status, f"{doing}: {shown.message}")


def add_route(serverapp: Any, route: str, handler: type) -> None:
    """Serve ``handler`` at ``route`` under the server's base URL."""
    web_app = serverapp.web_app
    pattern = url_path_join(web_app.settings["base_url"], route)
    web_app.add_handlers(".*$", [(pattern, handler)])
