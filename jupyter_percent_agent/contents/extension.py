"""The jupyter_server extension points: derive the contents manager from the configured
class at link time, and add the trust API (and a log filter) when the extension loads."""

from __future__ import annotations

import logging
from typing import Any

from jupyter_percent_agent.contents.manager import (
    MESSAGE_CM_MARKER,
    build_message_contents_manager_class,
)


def _link_jupyter_server_extension(serverapp: Any) -> None:
    """Runs before the contents manager is created: derive ours from the configured class.

    Extensions linked after this one (JupyterLab, any ``ExtensionApp``) load their config into
    the server again, which sets ``contents_manager_class`` back to the configured class; so
    the trait is watched, and whatever class it is set to is derived from in turn.
    """

    def derive(_change: Any = None) -> None:
        base = serverapp.contents_manager_class
        if getattr(base, MESSAGE_CM_MARKER, False):
            return
        serverapp.contents_manager_class = _derived(base)
        serverapp.log.info(
            "[jupyter-percent-agent] message files (.msg.md) open as notebooks "
            "(contents manager derived from %s)",
            base.__name__,
        )

    serverapp.observe(derive, names=["contents_manager_class"])
    derive()


_DERIVED: dict[type, type] = {}
# By name: nbconvert imports it when it exports (``contents.exporting``), not at start-up.
SANITIZE_EXPORTS = "jupyter_percent_agent.contents.exporting.SanitizeMessageNotebooks"


def _derived(base: type) -> type:
    if base not in _DERIVED:
        _DERIVED[base] = build_message_contents_manager_class(base)
    return _DERIVED[base]


def _one_line_user_errors(record: logging.LogRecord) -> bool:
    """A log filter: a record about one of the package's errors (a malformed file, a
    refusal: what the user can fix, said in one line) keeps its line, not its traceback.

    jupytext logs what its reading raised with ``exc_info``; the answer to the client already
    says where and what."""
    from jupyter_percent_agent import errors

    if record.exc_info and errors.find(record.exc_info[1]) is not None:
        record.exc_info = None
        record.exc_text = None
    return True


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """The contents manager was set up at link time; add the fork, trust and keys APIs for
    JupyterLab, and keep tracebacks of user errors out of the contents manager's log."""
    from jupyter_percent_agent.contents import fork_api, keys_api, trust_api

    fork_api.register(serverapp)
    trust_api.register(serverapp)
    keys_api.register(serverapp)
    log = serverapp.contents_manager.log
    if _one_line_user_errors not in log.filters:
        log.addFilter(_one_line_user_errors)
    # the server's nbconvert route builds its exporters from this config: a message
    # notebook's HTML export is sanitized (the module is imported only when one exports)
    serverapp.config.HTMLExporter.preprocessors.append(SANITIZE_EXPORTS)
