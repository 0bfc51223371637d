"""MCP servers' tools as ours: the user's servers (``config``), their connections (``host``),
and their tools as ``tools.Tool`` objects the sandbox's bridge calls like any other
(``schema``).

An agent selects servers by name in its ``tools`` list; :func:`server_tools` starts the ones
not running yet (once per process and conversation folder), lists their tools and makes each
a tool whose call goes to the server through the SDK's client session. An image in a
result is shown by the run that called the tool (``tools.show_image``): an image output of
the call's record, the model's code getting a small dict naming it. Importing this
package is cheap: each name is imported from its module on first use (an external
agent's ``tce chat`` reads ``config``'s rules and nothing else), the SDK when a server is first
started.
"""

from __future__ import annotations

from jupyter_percent_agent.lazy import lazy_getattr

_NAMES = {
    "McpConfigError": "config", "ServerSpec": "config", "add_server": "config",
    "add_servers": "config", "check_name": "config", "load_servers": "config",
    "mark_untrusted_ok": "config", "read_json_file": "config", "remove_server": "config",
    "servers_from_json": "config", "servers_path": "config", "spec_from_json": "config",
    "UNTRUSTED_OK_KEY": "config",
    "HOST": "host", "ListedTool": "host", "McpServerError": "host", "McpToolError": "host",
    "log_path": "host",
    "python_name": "schema",
    "list_tools": "servers", "server_tools": "servers", "stop_all": "servers",
}

__all__ = sorted(_NAMES)

__getattr__ = lazy_getattr(__name__, _NAMES)
